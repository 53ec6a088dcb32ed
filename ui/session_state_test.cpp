#include "ui/session_state.h"
#include "ui/source_view.h"

#include <doctest/doctest.h>

#include "ui/executables_view.h"
#include "ui/snapshots.h"

namespace kiln::ui {
namespace {

TEST_CASE("filter values: OR within a key, keys removed when empty") {
  SessionState s;
  s.AddFilterValue("process.executable.name", "postgres");
  s.AddFilterValue("process.executable.name", "java");
  s.AddFilterValue("process.executable.name", "java");  // no duplicates
  s.AddFilterValue("host.name", "db1");
  REQUIRE(s.filters.size() == 2);
  CHECK(s.filters[0].values == std::vector<std::string>{"postgres", "java"});
  CHECK(s.HasFilterValue("host.name", "db1"));
  CHECK_FALSE(s.HasFilterValue("host.name", "db2"));
  s.RemoveFilterValue("host.name", "db1");
  CHECK(s.filters.size() == 1);
  s.RemoveFilterValue("process.executable.name", "postgres");
  CHECK(s.filters[0].values == std::vector<std::string>{"java"});
}

TEST_CASE("the query range is the selection, else the window") {
  SessionState s;
  s.window = {100, 200};
  CHECK(s.QueryRange() == TimeRange{100, 200});
  s.selection = {120, 150};
  CHECK(s.QueryRange() == TimeRange{120, 150});
}

TEST_CASE("the baseline's times: the period before the shown range, or the chosen range") {
  using Kind = SessionState::Baseline::Kind;
  SessionState s;
  s.window = {1000, 2000};
  CHECK(s.BaselineRange().Empty());  // no baseline
  s.baseline.kind = Kind::kPreviousPeriod;
  CHECK(s.BaselineRange() == TimeRange{0, 1000});
  s.selection = {1500, 1800};
  CHECK(s.BaselineRange() == TimeRange{1200, 1500});
  // The request compares with exactly what the timeline marks.
  const AnalysisRequest r = RequestFor(s, 1, 100);
  REQUIRE(r.baseline.has_value());
  CHECK(r.baseline->query.from_ns == 1200);
  CHECK(r.baseline->query.to_ns == 1500);
  s.baseline.kind = Kind::kRange;
  s.baseline.range = {100, 300};
  CHECK(s.BaselineRange() == TimeRange{100, 300});
  // Filters or another source: not a range of this source's times.
  s.baseline.kind = Kind::kFilters;
  CHECK(s.BaselineRange().Empty());
  s.baseline.kind = Kind::kSource;
  CHECK(s.BaselineRange().Empty());
}

TEST_CASE("opening a view with an argument resets its other arguments, not its neighbours'") {
  SessionState s;
  s.view_args["source"] = "parse";
  s.view_args["source/file"] = "/src/parse_inline.h";
  s.view_args["source map"] = EncodeSourcePathMap({{"/build/", "/home/me/"}, {"/a", "/b"}});
  s.view_args["sandwich"] = "main";
  s.OpenView("source", "read");
  CHECK(s.requested_tab == "source");
  CHECK(s.ViewArg("source") == "read");
  CHECK(s.ViewArg("source/file").empty());  // that file was parse's
  CHECK(s.ViewArg("sandwich") == "main");
  // The path map outlives the function, whole.
  CHECK(DecodeSourcePathMap(s.ViewArg("source map")) ==
        SourcePathMap{{"/build/", "/home/me/"}, {"/a", "/b"}});
  CHECK(DecodeSourcePathMap("").empty());
}

TEST_CASE("requests compare by everything that changes the result") {
  AnalysisRequest a;
  a.query.filters = {{"thread.name", {"main"}}};
  AnalysisRequest b = a;
  CHECK(a == b);
  b.tree_options.show_inline = false;
  CHECK_FALSE(a == b);
  b = a;
  b.query.filters[0].values.push_back("worker");
  CHECK_FALSE(a == b);
  b = a;
  b.data_version = 7;  // new samples arrived
  CHECK_FALSE(a == b);
}

TEST_CASE("new symbols make a new request, so the views rename frames without a restart") {
  AnalysisRequest a;
  AnalysisRequest b = a;
  CHECK(a == b);
  b.symbols_version = 1;
  CHECK_FALSE(a == b);
}

}  // namespace
}  // namespace kiln::ui

namespace kiln::ui {

TEST_CASE("a status the window would show alike wakes nothing; one with news does") {
  StatusSnapshot a;
  a.taken_ns = 1;
  a.stats.samples = 10;
  a.stats.disk_free_bytes = 5'000'000'000;
  a.receiver = ingest::ReceiverStats{};
  StatusSnapshot b = a;
  b.taken_ns = 2;                            // a second later
  b.stats.disk_free_bytes = 4'999'000'000;  // another program wrote
  CHECK(SameToTheWindow(a, b));
  StatusSnapshot more = b;
  more.stats.samples = 11;
  CHECK(!SameToTheWindow(a, more));
  StatusSnapshot sender = b;
  sender.receiver->peers.push_back({.peer = "ipv4:127.0.0.1:5000", .samples_per_second = 20});
  CHECK(!SameToTheWindow(a, sender));
  StatusSnapshot logged = b;
  logged.log.push_back({.sequence = 1, .message = "retention: deleted"});
  CHECK(!SameToTheWindow(a, logged));
  // While writes are refused the free space is what the status line shows.
  StatusSnapshot full = a, fuller = b;
  full.stats.writes_refused = fuller.stats.writes_refused = "disk nearly full";
  CHECK(!SameToTheWindow(full, fuller));
}

}  // namespace kiln::ui
