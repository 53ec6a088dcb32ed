// Text formatting for the views: percentages, clock times, label ellipsis.
// Pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "storage/model/sample_type.h"

namespace kiln::ui {

// Counts, durations, sizes and values in their sample type's unit are
// formatted by storage/sample_type.h, for the views and the exports alike.
using storage::FormatBytes;
using storage::FormatCount;
using storage::FormatDuration;
using storage::FormatValue;
// "12.3%", "0.04%", "<0.01%".
std::string FormatPercent(double fraction);
// Local wall-clock "HH:MM:SS" (with ".mmm" when `millis`).
std::string FormatClock(int64_t unix_ns, bool millis = false);
// Local "YYYY-MM-DD HH:MM:SS".
std::string FormatDateTime(int64_t unix_ns);

// `label` in at most `max_chars` characters, shortened in the middle so the
// function's last component stays readable:
// "std::vector<int, std::allocator<int>>::push_back" -> "std::vec...::push_back".
std::string ShortenLabel(std::string_view label, size_t max_chars);

// Length in bytes of the longest prefix of `text` that, followed by "...",
// fits in `max_width`; text.size() when the whole text fits without an
// ellipsis; 0 when not even one character fits. `advance(c)` is the width of
// byte/character `c` (UTF-8 continuation bytes are kept with their lead).
template <typename AdvanceFn>
size_t EllipsisPrefix(std::string_view text, float max_width, float ellipsis_width, AdvanceFn&& advance) {
  float total = 0;
  size_t fits_with_ellipsis = 0;
  for (size_t i = 0; i < text.size();) {
    size_t len = 1;
    const auto lead = static_cast<unsigned char>(text[i]);
    if (lead >= 0xf0)
      len = 4;
    else if (lead >= 0xe0)
      len = 3;
    else if (lead >= 0xc0)
      len = 2;
    if (i + len > text.size()) len = text.size() - i;
    total += advance(text.substr(i, len));
    if (total + ellipsis_width <= max_width) fits_with_ellipsis = i + len;
    if (total > max_width) return fits_with_ellipsis;
    i += len;
  }
  return text.size();
}

}  // namespace kiln::ui
