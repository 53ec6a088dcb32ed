#include <cctype>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "app/cli.h"
#include "app/retention_limits.h"

namespace kiln::app {

absl::StatusOr<int64_t> ParseTimeArgument(const std::string& text) {
  int64_t ns = 0;
  if (!text.empty() && (std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '-') &&
      absl::SimpleAtoi(text, &ns)) {
    return ns;
  }
  absl::Time t;
  std::string error;
  if (!absl::ParseTime(absl::RFC3339_full, text, &t, &error)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot read time \"", text, "\": give Unix nanoseconds or RFC 3339 like 2026-11-21T10:00:00Z (",
        error, ")"));
  }
  return absl::ToUnixNanos(t);
}

absl::Status ParseTimeRange(const std::string& from, const std::string& to, int64_t* from_ns, int64_t* to_ns) {
  for (const auto& [text, target] : {std::pair{&from, from_ns}, {&to, to_ns}}) {
    if (text->empty()) continue;
    absl::StatusOr<int64_t> t = ParseTimeArgument(*text);
    if (!t.ok()) return t.status();
    *target = *t;
  }
  return absl::OkStatus();
}

std::string FormatTime(int64_t unix_ns) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E9SZ", absl::FromUnixNanos(unix_ns), absl::UTCTimeZone());
}

}  // namespace kiln::app

namespace kiln::app {

absl::StatusOr<storage::StoreOptions> StoreOptionsFrom(const HeadlessOptions& options) {
  absl::StatusOr<std::chrono::nanoseconds> age = ParseRetentionAge(options.retention_age);
  if (!age.ok()) return absl::InvalidArgumentError("--retention-age " + std::string(age.status().message()));
  storage::StoreOptions store;
  store.disk_reserve_bytes = options.disk_reserve_bytes;
  store.retention_age = *age;
  store.retention_size_bytes = options.retention_size_bytes;
  store.max_dictionary_memory = options.dictionary_memory_bytes;
  store.max_attribute_value_bytes_per_sender =
      options.sender_value_bytes == 0 ? UINT64_MAX : options.sender_value_bytes;
  return store;
}

}  // namespace kiln::app
