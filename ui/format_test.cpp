#include "ui/format.h"

#include <doctest/doctest.h>

#include <vector>

namespace kiln::ui {
namespace {

TEST_CASE("a PID filter value names what ran under it in the range") {
  const int64_t t = 1'700'000'000'000'000'000;
  const std::vector<storage::ProcessSummary> processes = {
      {.pid = "1234", .name = "python3", .weight = 5, .events = 5, .first_ns = t, .last_ns = t + 65'000'000'000},
      {.pid = "77", .name = "kiln", .weight = 3, .events = 3},
  };
  CHECK(PidValueLabel("1234", &processes[0], 8) ==
        "1234  python3  62.5%  " + FormatClock(t) + "-" + FormatClock(t + 65'000'000'000));
  CHECK(PidValueLabel("77", &processes[1], 8) == "77  kiln  37.5%");  // no sample times kept
  CHECK(PidValueLabel("5", nullptr, 8) == "5");                       // not in the range
}

TEST_CASE("a diff box keeps its new/gone mark only when mark and name fit whole") {
  auto advance = [](std::string_view) { return 10.f; };
  CHECK(DiffBoxLabel("gone: ", "parse", 110.f, advance) == "gone: parse");
  // 10 characters of room: the mark would leave "pa..."; the name has it all.
  CHECK(DiffBoxLabel("gone: ", "parse", 100.f, advance) == "parse");
  CHECK(DiffBoxLabel("new: ", "handleRequest", 60.f, advance) == "handleRequest");
  CHECK(DiffBoxLabel("", "parse", 500.f, advance) == "parse");
}

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

TEST_CASE("a label fitted to a width keeps its start and its last component: the function, the basename") {
  auto advance = [](std::string_view) { return 10.f; };  // 10 px a character, "..." 30 px
  auto fit = [&](std::string_view label, float width) {
    return FitLabel(label, FunctionKeepFrom(label), width, 30.f, advance);
  };
  auto fit_path = [&](std::string_view path, float width) {
    return FitLabel(path, PathKeepFrom(path), width, 30.f, advance);
  };
  CHECK(LastComponent("github.com/org/project/pkg.(*Server).handleRequest") == ".handleRequest");
  CHECK(LastComponent("std::vector<int>::push_back(int const&)") == "::push_back(int const&)");
  CHECK(LastComponent("main") == "");
  // Fits: whole.
  CHECK(fit("main", 40.f) == "main");
  // Go: the package's start, then the method (cut at the end, as the issue
  // found it, the box read "github.com/org/proj..." and lost exactly that).
  CHECK(fit("github.com/org/project/pkg.(*Server).handleRequest", 250.f) == "github.co...handleRequest");
  // Java, C++, and a path in the File column: the function, the basename.
  CHECK(fit("org.apache.kafka.clients.producer.KafkaProducer.doSend", 200.f) == "org.apache...doSend");
  CHECK(fit("std::vector<int>::push_back(int const&)", 300.f) == "std::v...push_back(int const&)");
  CHECK(fit_path("/home/dev/src/server/handlers/login.go", 180.f) == "/home/d...login.go");
  // A process keeps its pid, which tells two postgres apart.
  CHECK(FitLabel("postgres [123456]", InstanceKeepFrom("postgres [123456]"), 140.f, 30.f, advance) ==
        "po... [123456]");
  CHECK(InstanceKeepFrom("main") == 4);
  // Room for the component only: "..." and the component.
  CHECK(fit("org.apache.kafka.KafkaProducer.doSend", 90.f) == "...doSend");
  // The component alone is too wide: its own start, never the package's.
  CHECK(fit("org.apache.kafka.KafkaProducer.sendWithRetries", 100.f) == "sendWit...");
  // It would fit alone but not with a "...": still marked as cut.
  CHECK(fit("runtime.mapassign_fast64", 160.f) == "mapassign_fas...");
  // No separators: cut at the end as before; nothing fits: nothing.
  CHECK(fit("a_very_long_function_name", 100.f) == "a_very_...");
  CHECK(fit("abcdef", 20.f) == "");
  // Never wider than the room.
  for (const char* label : {"github.com/org/project/pkg.(*Server).handleRequest", "a::b", "x.y.z", "/a/b/c.go"}) {
    for (float w = 0.f; w < 600.f; w += 10.f) {
      CAPTURE(label);
      CAPTURE(w);
      CHECK(static_cast<float>(fit(label, w).size()) * 10.f <= w);
      CHECK(static_cast<float>(fit_path(label, w).size()) * 10.f <= w);
    }
  }
}

}  // namespace kiln::ui
