#include "storage/model/time_text.h"

#include <doctest/doctest.h>

namespace kiln::storage {

TEST_CASE("times: Unix ns and RFC 3339 in, RFC 3339 out") {
  CHECK(*ParseTime("1764400000123456789") == 1764400000123456789);
  CHECK(*ParseTime("2026-11-29T07:00:00Z") == 1795935600000000000);
  CHECK(*ParseTime("2026-11-29T08:00:00.5+01:00") == 1795935600500000000);
  CHECK(FormatTime(1795935600500000000) == "2026-11-29T07:00:00.500000000Z");
  const absl::StatusOr<int64_t> bad = ParseTime("yesterday");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("RFC 3339") != std::string_view::npos);
  int64_t from = 1, to = 2;
  CHECK(ParseTimeRange("", "5", &from, &to).ok());
  CHECK(from == 1);
  CHECK(to == 5);
}

TEST_CASE("durations and relative times") {
  CHECK(*ParseDurationNs("15m") == 15 * 60'000'000'000LL);
  CHECK(*ParseDurationNs("1h30m") == 90 * 60'000'000'000LL);
  CHECK(*ParseDurationNs("2d") == 2 * 86'400'000'000'000LL);
  CHECK(*ParseDurationNs("500ms") == 500'000'000LL);
  CHECK(*ParseDurationNs("1.5s") == 1'500'000'000LL);
  for (const char* bad : {"", "15", "m", "15 minutes", "-5m", "0s", "5x"}) {
    CAPTURE(bad);
    CHECK_FALSE(ParseDurationNs(bad).ok());
  }
  const int64_t now = 1795935600000000000;
  CHECK(*ParseTimeRelative("now", now) == now);
  CHECK(*ParseTimeRelative("now-15m", now) == now - 15 * 60'000'000'000LL);
  CHECK(*ParseTimeRelative("-1h", now) == now - 3'600'000'000'000LL);
  CHECK(*ParseTimeRelative("-5", now) == -5);  // Unix ns stay absolute
  CHECK(*ParseTimeRelative("2026-11-29T07:00:00Z", 0) == now);
  CHECK_FALSE(ParseTimeRelative("now-soon", now).ok());
}

}  // namespace kiln::storage
