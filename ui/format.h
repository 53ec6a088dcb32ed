// Text formatting for the views: percentages, clock times, label ellipsis.
// Pure functions.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "storage/model/processes.h"
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

// A PID filter value as the filter list shows it: the pid, then what ran
// under it in the selected range (`process`, its ProcessesOf entry:
// "1234  python3  62.5%  11:02:03-11:05:10"; the times when the range kept
// them), or the bare pid when nothing did (null). `total` is the range's
// weight.
std::string PidValueLabel(std::string_view pid, const storage::ProcessSummary* process, int64_t total);

// `label` in at most `max_chars` characters, shortened in the middle so the
// function's last component stays readable:
// "std::vector<int, std::allocator<int>>::push_back" -> "std::vec...::push_back".
std::string ShortenLabel(std::string_view label, size_t max_chars);

// A frame label's or path's last component, with the separator before it:
// what follows the last "::", "." or "/" before any argument list
// ("::push_back(int)", ".handleRequest", "/main.go"); "" when there is none.
std::string_view LastComponent(std::string_view label);

// The bytes of the UTF-8 character at `i` of `text`, by its lead byte (a
// cut sequence at the end: what is left of it).
inline size_t CharBytes(std::string_view text, size_t i) {
  const auto lead = static_cast<unsigned char>(text[i]);
  const size_t len = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return std::min(len, text.size() - i);
}

// `text`'s width: the sum of `advance` over its characters.
template <typename AdvanceFn>
float TextWidth(std::string_view text, AdvanceFn&& advance) {
  float width = 0;
  for (size_t i = 0; i < text.size(); i += CharBytes(text, i)) width += advance(text.substr(i, CharBytes(text, i)));
  return width;
}

// A diff box's label: its mark ("new: ", "gone: ") before the name only
// when both fit whole in `max_width`; else the name alone, which then has
// all the room (the box's hatching says new or gone). A narrow "gone: pa..."
// said less than "parse".
template <typename AdvanceFn>
std::string DiffBoxLabel(std::string_view mark, std::string_view name, float max_width, AdvanceFn&& advance) {
  if (!mark.empty() && TextWidth(mark, advance) + TextWidth(name, advance) <= max_width) {
    return std::string(mark) + std::string(name);
  }
  return std::string(name);
}

// Length in bytes of the longest prefix of `text` that, followed by "...",
// fits in `max_width`; text.size() when the whole text fits without an
// ellipsis; 0 when not even one character fits. `advance(c)` is the width of
// byte/character `c` (UTF-8 continuation bytes are kept with their lead).
template <typename AdvanceFn>
size_t EllipsisPrefix(std::string_view text, float max_width, float ellipsis_width, AdvanceFn&& advance) {
  float total = 0;
  size_t fits_with_ellipsis = 0;
  for (size_t i = 0; i < text.size();) {
    const size_t len = CharBytes(text, i);
    total += advance(text.substr(i, len));
    if (total + ellipsis_width <= max_width) fits_with_ellipsis = i + len;
    if (total > max_width) return fits_with_ellipsis;
    i += len;
  }
  return text.size();
}

// `label` fitted in `max_width` as a box or a column shows it: whole when
// it fits; else its start, "..." and the part to keep whole, `label` from
// `keep_from` on without its leading separator (a function name's
// LastComponent, a path's basename): "github.co...handleRequest",
// "/home/d...login.go"; when even that does not fit, that part's own start
// and "..." ("handleReq..."), never the package without the function.
// Cutting only at the end lost exactly the part that tells neighbouring
// frames apart. "" when not one character fits. `advance` as for
// EllipsisPrefix.
template <typename AdvanceFn>
std::string FitLabel(std::string_view label, size_t keep_from, float max_width, float ellipsis_width,
                     AdvanceFn&& advance) {
  if (EllipsisPrefix(label, max_width, ellipsis_width, advance) == label.size()) return std::string(label);
  auto is_separator = [](char c) { return c == ':' || c == '.' || c == '/'; };
  std::string_view keep = label.substr(std::min(keep_from, label.size()));
  while (!keep.empty() && is_separator(keep[0])) keep.remove_prefix(1);
  if (keep.empty()) keep = label;
  const float keep_width = TextWidth(keep, advance);
  if (keep.size() < label.size() && keep_width + ellipsis_width <= max_width) {
    // The longest start that leaves room for "..." and the kept part.
    std::string_view head = label.substr(0, std::min(keep_from, label.size()));
    head = head.substr(0, EllipsisPrefix(head, max_width - keep_width - ellipsis_width, 0.f, advance));
    while (!head.empty() && is_separator(head.back())) head.remove_suffix(1);
    return std::string(head) + "..." + std::string(keep);
  }
  if (keep.size() == label.size()) {  // nothing to keep apart: cut at the end
    const size_t n = EllipsisPrefix(label, max_width, ellipsis_width, advance);
    return n == 0 ? std::string() : std::string(label.substr(0, n)) + "...";
  }
  // Even when the part alone would fit, something before it is gone: the
  // "..." says so ("mapassign_fast64" alone read as a whole name).
  const size_t n = EllipsisPrefix(keep, max_width - ellipsis_width, 0.f, advance);
  if (n == 0 || max_width < ellipsis_width) return {};
  return std::string(keep.substr(0, n)) + "...";
}

// Where a frame label's last component starts (FitLabel's `keep_from`).
inline size_t FunctionKeepFrom(std::string_view label) { return label.size() - LastComponent(label).size(); }
// Where a process instance label's pid starts ("postgres [1234]": the pid
// is what tells two postgres apart); the whole label stays when it has none.
inline size_t InstanceKeepFrom(std::string_view label) {
  const size_t open = label.rfind(" [");
  return open == std::string_view::npos ? label.size() : open;
}
// Where a path's basename starts.
inline size_t PathKeepFrom(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path.size() : slash + 1;
}

}  // namespace kiln::ui
