#include "app/retention_limits.h"

#include <doctest/doctest.h>

namespace kiln::app {

TEST_CASE("retention ages: the flag's units, off, and errors that say what is wanted") {
  CHECK(*ParseRetentionAge("90s") == std::chrono::seconds(90));
  CHECK(*ParseRetentionAge("30m") == std::chrono::minutes(30));
  CHECK(*ParseRetentionAge("12h") == std::chrono::hours(12));
  CHECK(*ParseRetentionAge("14d") == std::chrono::hours(14 * 24));
  CHECK(*ParseRetentionAge("2w") == std::chrono::hours(14 * 24));
  CHECK(ParseRetentionAge("0")->count() == 0);
  for (const char* bad : {"", "14", "d", "-3d", "3 d", "1.5h", "0d", "99999999999999w", "14D"}) {
    CAPTURE(bad);
    auto r = ParseRetentionAge(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find("such as 90s") != std::string_view::npos);
  }
  // What the dialog shows parses back to the same limit.
  for (const char* text : {"0", "90s", "30m", "12h", "14d", "2w", "36h", "100s"}) {
    CAPTURE(text);
    CHECK(*ParseRetentionAge(FormatRetentionAge(*ParseRetentionAge(text))) == *ParseRetentionAge(text));
  }
  CHECK(FormatRetentionAge(std::chrono::hours(14 * 24)) == "2w");
  CHECK(FormatRetentionAge(std::chrono::hours(36)) == "36h");
}

TEST_CASE("retention sizes: binary units in any case, off, and errors") {
  CHECK(*ParseRetentionSize("4GiB") == uint64_t{4} << 30);
  CHECK(*ParseRetentionSize("4gb") == uint64_t{4} << 30);
  CHECK(*ParseRetentionSize("512MiB") == uint64_t{512} << 20);
  CHECK(*ParseRetentionSize("750M") == uint64_t{750} << 20);
  CHECK(*ParseRetentionSize("2T") == uint64_t{2} << 40);
  CHECK(*ParseRetentionSize("1048576") == uint64_t{1} << 20);
  CHECK(*ParseRetentionSize("100B") == 100);
  CHECK(*ParseRetentionSize("0") == 0);
  for (const char* bad : {"", "GiB", "4 GiB", "4.5GiB", "-1", "4PiB", "99999999999TiB"}) {
    CAPTURE(bad);
    auto r = ParseRetentionSize(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find("such as 4GiB") != std::string_view::npos);
  }
  CHECK(FormatRetentionSize(uint64_t{4} << 30) == "4GiB");
  CHECK(FormatRetentionSize(uint64_t{1536} << 20) == "1536MiB");
  CHECK(FormatRetentionSize(1000) == "1000");
  CHECK(FormatRetentionSize(0) == "0");
  for (uint64_t v : {uint64_t{0}, uint64_t{1000}, uint64_t{3} << 40, uint64_t{5} << 10}) {
    CHECK(*ParseRetentionSize(FormatRetentionSize(v)) == v);
  }
}

}  // namespace kiln::app
