#include "app/retention_limits.h"

#include <cctype>
#include <limits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace kiln::app {

namespace {

constexpr std::pair<const char*, int64_t> kAgeUnits[] = {
    {"w", 7 * 86400}, {"d", 86400}, {"h", 3600}, {"m", 60}, {"s", 1}};

// Leading digits and the rest.
std::pair<std::string, std::string> SplitNumber(const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  return {text.substr(0, digits), text.substr(digits)};
}

}  // namespace

absl::StatusOr<std::chrono::nanoseconds> ParseRetentionAge(const std::string& text) {
  if (text == "0") return std::chrono::nanoseconds(0);
  const auto [number, unit] = SplitNumber(text);
  int64_t n = 0;
  for (const auto& [name, seconds] : kAgeUnits) {
    if (unit == name && !number.empty() && absl::SimpleAtoi(number, &n) && n > 0 &&
        n <= std::numeric_limits<int64_t>::max() / 1'000'000'000 / seconds) {
      return std::chrono::seconds(n * seconds);
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "wants a duration such as 90s, 30m, 12h, 14d or 2w (0 keeps everything), got \"", text, "\""));
}

absl::StatusOr<uint64_t> ParseRetentionSize(const std::string& text) {
  const auto [number, unit_text] = SplitNumber(text);
  const std::string unit = absl::AsciiStrToLower(unit_text);
  static constexpr std::pair<const char*, int> kUnits[] = {
      {"", 0},     {"b", 0},  {"k", 10},  {"kb", 10},  {"kib", 10}, {"m", 20},  {"mb", 20},
      {"mib", 20}, {"g", 30}, {"gb", 30}, {"gib", 30}, {"t", 40},   {"tb", 40}, {"tib", 40}};
  int shift = -1;
  for (const auto& [name, s] : kUnits) {
    if (unit == name) shift = s;
  }
  uint64_t n = 0;
  if (shift < 0 || number.empty() || !absl::SimpleAtoi(number, &n) ||
      n > (std::numeric_limits<uint64_t>::max() >> shift)) {
    return absl::InvalidArgumentError(
        absl::StrCat("wants a size such as 4GiB, 512MiB or 2GB (0 for no limit), got \"", text, "\""));
  }
  return n << shift;
}

std::string FormatRetentionAge(std::chrono::nanoseconds age) {
  const int64_t ns = age.count();
  if (ns <= 0) return "0";
  if (ns % 1'000'000'000 == 0) {
    const int64_t s = ns / 1'000'000'000;
    for (const auto& [name, seconds] : kAgeUnits) {
      if (s % seconds == 0) return absl::StrCat(s / seconds, name);
    }
  }
  // Not whole seconds (no flag makes these): rounded up, so it still parses.
  return absl::StrCat(ns / 1'000'000'000 + 1, "s");
}

std::string FormatRetentionSize(uint64_t bytes) {
  if (bytes == 0) return "0";
  static const char* kUnits[] = {"TiB", "GiB", "MiB", "KiB"};
  for (int i = 0; i < 4; ++i) {
    const int shift = 40 - 10 * i;
    if (bytes % (uint64_t{1} << shift) == 0) return absl::StrCat(bytes >> shift, kUnits[i]);
  }
  return absl::StrCat(bytes);
}

}  // namespace kiln::app
