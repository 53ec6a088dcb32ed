#include "ui/format.h"

#include <cinttypes>
#include <cstdio>
#include <ctime>

namespace kiln::ui {

std::string FormatPercent(double fraction) {
  char buf[32];
  const double p = fraction * 100.0;
  if (p > 0 && p < 0.01) return "<0.01%";
  std::snprintf(buf, sizeof buf, "%.*f%%", p >= 10 ? 1 : 2, p);
  return buf;
}

namespace {
std::tm LocalTime(int64_t unix_ns) {
  const std::time_t secs = static_cast<std::time_t>(unix_ns / 1'000'000'000);
  std::tm tm{};
  localtime_r(&secs, &tm);
  return tm;
}
}  // namespace

std::string FormatClock(int64_t unix_ns, bool millis) {
  const std::tm tm = LocalTime(unix_ns);
  char buf[32];
  if (millis) {
    std::snprintf(buf, sizeof buf, "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<int>((unix_ns / 1'000'000) % 1000));
  } else {
    std::snprintf(buf, sizeof buf, "%02d:%02d:%02d", tm.tm_hour, tm.tm_min, tm.tm_sec);
  }
  return buf;
}

std::string FormatDateTime(int64_t unix_ns) {
  const std::tm tm = LocalTime(unix_ns);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buf;
}

std::string PidValueLabel(std::string_view pid, const storage::ProcessSummary* process, int64_t total) {
  std::string label(pid);
  if (process == nullptr) return label;
  label += "  " + process->name;
  if (total > 0) label += "  " + FormatPercent(static_cast<double>(process->weight) / static_cast<double>(total));
  if (process->first_ns != 0) label += "  " + FormatClock(process->first_ns) + "-" + FormatClock(process->last_ns);
  return label;
}

namespace {
// Characters (UTF-8 code points) in `text`.
size_t CodePoints(std::string_view text) {
  size_t n = 0;
  for (char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}
// The byte offset after the first `n` code points.
size_t PrefixBytes(std::string_view text, size_t n) {
  size_t i = 0;
  for (; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80 && n-- == 0) break;
  }
  return i;
}
}  // namespace

std::string_view LastComponent(std::string_view label) {
  // After the last separator outside an argument list. Go's receivers,
  // "pkg.(*T).Method", are no argument list: a '(' after a '.'.
  size_t args = 0;
  while ((args = label.find('(', args)) != std::string_view::npos && args > 0 && label[args - 1] == '.') ++args;
  std::string_view head = label.substr(0, args);
  size_t cut = std::string_view::npos;
  for (std::string_view sep : {"::", ".", "/"}) {
    size_t at = head.rfind(sep);
    if (at != std::string_view::npos && (cut == std::string_view::npos || at > cut)) cut = at;
  }
  return cut == std::string_view::npos ? label.substr(label.size()) : label.substr(cut);
}

std::string ShortenLabel(std::string_view label, size_t max_chars) {
  const size_t length = CodePoints(label);
  if (length <= max_chars || max_chars < 8) return std::string(label.substr(0, PrefixBytes(label, max_chars)));
  std::string_view tail = LastComponent(label);
  size_t tail_chars = CodePoints(tail);
  const size_t keep_tail = std::min(tail_chars, max_chars - 4);  // at least 1 char of head + "..."
  if (keep_tail < tail_chars) tail = tail.substr(0, PrefixBytes(tail, keep_tail));  // long tail: cut its end
  const size_t head_chars = max_chars - 3 - std::min(tail_chars, keep_tail);
  return std::string(label.substr(0, PrefixBytes(label, head_chars))) + "..." + std::string(tail);
}

}  // namespace kiln::ui
