#include "ui/format.h"

#include <cinttypes>
#include <cstdio>
#include <ctime>

namespace kiln::ui {

std::string FormatCount(uint64_t n) {
  char buf[32];
  if (n < 1000) {
    std::snprintf(buf, sizeof buf, "%" PRIu64, n);
  } else if (n < 1'000'000) {
    std::snprintf(buf, sizeof buf, "%.*fk", n < 10'000 ? 2 : n < 100'000 ? 1 : 0, n / 1e3);
  } else if (n < 1'000'000'000) {
    std::snprintf(buf, sizeof buf, "%.*fM", n < 10'000'000 ? 2 : n < 100'000'000 ? 1 : 0, n / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.2fG", n / 1e9);
  }
  return buf;
}

std::string FormatDuration(int64_t ns) {
  char buf[48];
  const double v = static_cast<double>(ns);
  const int64_t a = ns < 0 ? -ns : ns;
  if (a < 1'000) {
    std::snprintf(buf, sizeof buf, "%" PRId64 " ns", ns);
  } else if (a < 1'000'000) {
    std::snprintf(buf, sizeof buf, "%.*f µs", a < 10'000 ? 2 : a < 100'000 ? 1 : 0, v / 1e3);
  } else if (a < 1'000'000'000) {
    std::snprintf(buf, sizeof buf, "%.*f ms", a < 10'000'000 ? 2 : a < 100'000'000 ? 1 : 0, v / 1e6);
  } else if (a < 60'000'000'000) {
    std::snprintf(buf, sizeof buf, "%.2f s", v / 1e9);
  } else if (a < 3'600'000'000'000) {
    const int64_t s = a / 1'000'000'000;
    std::snprintf(buf, sizeof buf, "%" PRId64 "m %02" PRId64 "s", s / 60, s % 60);
  } else {
    const int64_t m = a / 60'000'000'000;
    std::snprintf(buf, sizeof buf, "%" PRId64 "h %02" PRId64 "m", m / 60, m % 60);
  }
  return buf;
}

std::string FormatWeight(storage::SampleKind kind, int64_t weight) {
  if (kind == storage::SampleKind::kOffCpu) return FormatDuration(weight);
  return FormatCount(static_cast<uint64_t>(weight < 0 ? 0 : weight)) + (weight == 1 ? " sample" : " samples");
}

std::string FormatPercent(double fraction) {
  char buf[32];
  const double p = fraction * 100.0;
  if (p > 0 && p < 0.01) return "<0.01%";
  std::snprintf(buf, sizeof buf, "%.*f%%", p >= 10 ? 1 : 2, p);
  return buf;
}

std::string FormatBytes(uint64_t bytes) {
  char buf[32];
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  if (u == 0) {
    std::snprintf(buf, sizeof buf, "%" PRIu64 " B", bytes);
  } else {
    std::snprintf(buf, sizeof buf, "%.*f %s", v < 10 ? 1 : 0, v, units[u]);
  }
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
