#include "ui/format.h"

#include <doctest/doctest.h>

namespace kiln::ui {
namespace {

TEST_CASE("counts, durations, percentages, bytes") {
  CHECK(FormatCount(999) == "999");
  CHECK(FormatCount(1234) == "1.23k");
  CHECK(FormatCount(1'234'567) == "1.23M");
  CHECK(FormatDuration(1'500'000'000) == "1.50 s");
  CHECK(FormatDuration(12'300'000) == "12.3 ms");
  CHECK(FormatDuration(125'000'000'000) == "2m 05s");
  CHECK(FormatValue(storage::OnCpuSamples(), 1) == "1 sample");
  CHECK(FormatValue(storage::OnCpuSamples(), 2500) == "2.50k samples");
  CHECK(FormatValue(storage::OffCpuTime(), 2'000'000) == "2.00 ms");
  CHECK(FormatPercent(0.5) == "50.0%");
  CHECK(FormatPercent(0.0123) == "1.23%");
  CHECK(FormatPercent(0.00001) == "<0.01%");
  CHECK(FormatBytes(512) == "512 B");
  CHECK(FormatBytes(3 * 1024 * 1024) == "3.0 MiB");
}

TEST_CASE("ellipsis prefix with a fixed-width font") {
  auto advance = [](std::string_view) { return 10.f; };
  // "abcdef" is 60 px; "..." is 30 px.
  CHECK(EllipsisPrefix("abcdef", 60.f, 30.f, advance) == 6);  // fits whole
  CHECK(EllipsisPrefix("abcdef", 59.f, 30.f, advance) == 2);  // "ab..."
  CHECK(EllipsisPrefix("abcdef", 35.f, 30.f, advance) == 0);
  // Multi-byte characters are never split.
  CHECK(EllipsisPrefix("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 35.f, 10.f, advance) == 4);
}

}  // namespace
}  // namespace kiln::ui

namespace kiln::ui {

TEST_CASE("long labels are shortened in the middle, keeping the last component") {
  CHECK(ShortenLabel("main", 20) == "main");
  const std::string cpp = "std::vector<int, std::allocator<int>>::push_back";
  CHECK(ShortenLabel(cpp, 24) == "std::vecto...::push_back");
  CHECK(ShortenLabel("io/netty/channel/nio/NioEventLoop:.processSelectedKeysOptimized", 40) ==
        "io/netty....processSelectedKeysOptimized");
  CHECK(ShortenLabel("a_very_long_function_name_without_separators", 12) == "a_very_lo...");
  CHECK(ShortenLabel("ns::f(std::map<int, int> const&, long long, unsigned)", 16).find("...") != std::string::npos);
}

}  // namespace kiln::ui
