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

}  // namespace kiln::ui
