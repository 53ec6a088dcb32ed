#include "storage/model/time_text.h"

#include <cctype>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace kiln::storage {

absl::StatusOr<int64_t> ParseTime(const std::string& text) {
  int64_t ns = 0;
  if (!text.empty() && (std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '-') &&
      absl::SimpleAtoi(text, &ns)) {
    return ns;
  }
  absl::Time t;
  std::string error;
  if (!absl::ParseTime(absl::RFC3339_full, std::string(text), &t, &error)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot read time \"", text, "\": give Unix nanoseconds or RFC 3339 like 2026-11-21T10:00:00Z (",
        error, ")"));
  }
  return absl::ToUnixNanos(t);
}

absl::Status ParseTimeRange(const std::string& from, const std::string& to, int64_t* from_ns, int64_t* to_ns) {
  for (const auto& [text, target] : {std::pair{from, from_ns}, {to, to_ns}}) {
    if (text.empty()) continue;
    absl::StatusOr<int64_t> t = ParseTime(text);
    if (!t.ok()) return t.status();
    *target = *t;
  }
  return absl::OkStatus();
}

std::string FormatTime(int64_t unix_ns) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E9SZ", absl::FromUnixNanos(unix_ns), absl::UTCTimeZone());
}

absl::StatusOr<int64_t> ParseDurationNs(const std::string& original) {
  auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat("cannot read duration \"", original,
                                                   "\": give a number and a unit, like 15m, 1h30m, 2d or 500ms "
                                                   "(units ns, us, ms, s, m, h, d)"));
  };
  absl::string_view text = absl::StripAsciiWhitespace(original);
  if (text.empty()) return bad();
  double total = 0;
  while (!text.empty()) {
    size_t n = 0;
    while (n < text.size() && (std::isdigit(static_cast<unsigned char>(text[n])) || text[n] == '.')) ++n;
    double value = 0;
    if (n == 0 || !absl::SimpleAtod(text.substr(0, n), &value)) return bad();
    text.remove_prefix(n);
    size_t u = 0;
    while (u < text.size() && std::isalpha(static_cast<unsigned char>(text[u]))) ++u;
    const absl::string_view unit = text.substr(0, u);
    text.remove_prefix(u);
    double scale = 0;
    if (unit == "ns") scale = 1;
    else if (unit == "us") scale = 1e3;
    else if (unit == "ms") scale = 1e6;
    else if (unit == "s") scale = 1e9;
    else if (unit == "m") scale = 60e9;
    else if (unit == "h") scale = 3600e9;
    else if (unit == "d") scale = 86400e9;
    else return bad();
    total += value * scale;
  }
  if (!(total > 0) || total > static_cast<double>(std::numeric_limits<int64_t>::max() / 2)) return bad();
  return static_cast<int64_t>(total);
}

absl::StatusOr<int64_t> ParseTimeRelative(const std::string& text_in, int64_t now_ns) {
  const std::string text(absl::StripAsciiWhitespace(text_in));
  if (text == "now") return now_ns;
  std::string offset;
  if (text.substr(0, 4) == "now-") {
    offset = text.substr(4);
  } else if (text.size() > 1 && text[0] == '-' && !absl::ascii_isdigit(static_cast<unsigned char>(text.back()))) {
    offset = text.substr(1);  // "-15m"; a bare negative number stays Unix ns
  } else {
    return ParseTime(text);
  }
  absl::StatusOr<int64_t> d = ParseDurationNs(offset);
  if (!d.ok()) return d.status();
  return now_ns - *d;
}

}  // namespace kiln::storage
