#include "ui/session_state.h"
#include "ui/source_view.h"

#include <doctest/doctest.h>

#include "storage/model/stacks.h"
#include "storage/model/test_fixtures.h"
#include "storage/model/top_functions.h"
#include "storage/model/transforms.h"
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

namespace kiln::ui {
namespace {

TEST_CASE("off-CPU time opens on what blocked: kernel frames dropped as a chip, taken away on leaving it") {
  // Off-CPU stacks as kiln-agent sends them: the user's call that blocked,
  // then the kernel down to the scheduler.
  storage::testing::FoldedFixtureOptions off_cpu;
  off_cpu.sample_type = storage::SampleTypeInfo{storage::OffCpuTime()};
  const storage::ProfileBatch batch = storage::testing::BatchFromFolded(
      "main;serve;read;entry_SYSCALL_64@k;ksys_read@k;schedule@k;__schedule@k 6\n"
      "main;worker;pthread_cond_wait;entry_SYSCALL_64@k;futex_wait@k;schedule@k;__schedule@k 3\n"
      "main;clock_nanosleep;entry_SYSCALL_64@k;do_nanosleep@k;schedule@k;__schedule@k 1\n",
      off_cpu);
  SessionState s;
  s.tree.transforms.push_back({storage::Transform::Kind::kHide, "^serve$", {}});  // the user's own chip
  s.SetSampleType(storage::OffCpuTime());
  REQUIRE(s.tree.transforms.size() == 2);
  CHECK(s.tree.transforms[1].kind == storage::Transform::Kind::kDropKernel);
  CHECK(s.off_cpu_drop_kernel);
  // What Top functions opens on: the blocking calls by self weight, not
  // __schedule at 100 %.
  const AnalysisRequest request = RequestFor(s);
  const storage::Stacks stacks =
      storage::ApplyTransforms(storage::StacksOf(storage::testing::WholeSlice(batch)), request.tree_options.transforms);
  const std::vector<storage::TopFunctionRow> rows = storage::BuildTopFunctions(stacks);
  REQUIRE(rows.size() >= 3);
  CHECK(rows[0].function == "read");
  CHECK(rows[0].self == 6);
  CHECK(rows[1].function == "pthread_cond_wait");
  CHECK(rows[2].function == "clock_nanosleep");
  for (const auto& row : rows) CHECK(row.function != "__schedule");

  // Back to on-CPU: the chip goes, the user's stays.
  s.SetSampleType(storage::OnCpuSamples());
  REQUIRE(s.tree.transforms.size() == 1);
  CHECK(s.tree.transforms[0].kind == storage::Transform::Kind::kHide);
  CHECK_FALSE(s.off_cpu_drop_kernel);

  // Removed by the user while on off-CPU: it is not put back behind their
  // back while they stay, and leaving takes nothing of theirs.
  s.SetSampleType(storage::OffCpuTime());
  s.tree.transforms.resize(1);  // the chip clicked away
  s.SetSampleType(storage::OffCpuTime());
  CHECK(s.tree.transforms.size() == 2);  // choosing off-CPU again adds it again
  s.tree.transforms.resize(1);
  s.tree.transforms.push_back({storage::Transform::Kind::kDropKernel, "", {}});  // now the user's own
  s.off_cpu_drop_kernel = false;
  s.SetSampleType(storage::OnCpuSamples());
  CHECK(s.tree.transforms.size() == 2);  // the user's drop-kernel stays
}

}  // namespace
}  // namespace kiln::ui
