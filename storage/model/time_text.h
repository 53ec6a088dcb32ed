// Times and durations as people type and read them: Unix nanoseconds or
// RFC 3339 in, RFC 3339 out, and the relative forms ("now-15m", "15m")
// that `kiln mcp`'s tools take. One place, so the command line, dumps and
// the MCP tools read and print times alike.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kiln::storage {

// Unix nanoseconds ("1764400000000000000") or RFC 3339
// ("2026-11-21T10:00:00Z", fractional seconds and offsets allowed).
absl::StatusOr<int64_t> ParseTime(const std::string& text);
// --from / --to into *from_ns / *to_ns; an empty text leaves its end as it
// is (open).
absl::Status ParseTimeRange(const std::string& from, const std::string& to, int64_t* from_ns, int64_t* to_ns);
// Unix ns as RFC 3339 UTC with nanoseconds.
std::string FormatTime(int64_t unix_ns);

// A positive duration: a number and a unit, repeated ("15m", "1h30m",
// "2d", "500ms"; units ns, us, ms, s, m, h, d).
absl::StatusOr<int64_t> ParseDurationNs(const std::string& text);
// A time relative to `now_ns` ("now", "now-15m", "-15m") or an absolute one
// (ParseTime).
absl::StatusOr<int64_t> ParseTimeRelative(const std::string& text, int64_t now_ns);

}  // namespace kiln::storage
