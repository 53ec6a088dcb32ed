#include "storage/model/processes.h"

#include <doctest/doctest.h>

#include "storage/model/query.h"
#include "storage/model/test_fixtures.h"

namespace kiln::storage {
namespace {

using Attrs = std::vector<std::pair<std::string, std::string>>;

TEST_CASE("a slice's processes: one per pid, named, weighed and timed, heaviest first") {
  // Samples are 1 ms apart from first_time_ns in each fixture.
  const int64_t t0 = 1'700'000'000'000'000'000;
  auto batch = testing::BatchFromFolded("main;a 2", {.first_time_ns = t0, .process = "python3",
                                                     .attributes = Attrs{{"process.pid", "100"}}});
  testing::AppendBatch(&batch, testing::BatchFromFolded("main;b 5", {.first_time_ns = t0 + 10'000'000,
                                                                     .process = "python3",
                                                                     .attributes = Attrs{{"process.pid", "200"}}}));
  // pid 100 again after an exec: now named "worker", and heavier.
  testing::AppendBatch(&batch, testing::BatchFromFolded("run 3", {.first_time_ns = t0 + 20'000'000,
                                                                  .process = "worker",
                                                                  .attributes = Attrs{{"process.pid", "100"}}}));
  // No pid: left out.
  testing::AppendBatch(&batch, testing::BatchFromFolded("x 9", {.process = "folded"}));

  Query timed;
  timed.sample_type = OnCpuSamples();
  timed.keep_samples = true;
  const std::vector<ProcessSummary> p = ProcessesOf(*SliceFromBatch(batch, timed));
  REQUIRE(p.size() == 2);
  CHECK(p[0].pid == "100");
  CHECK(p[0].name == "worker");
  CHECK(p[0].weight == 5);
  CHECK(p[0].events == 5);
  CHECK(p[0].first_ns == t0);
  CHECK(p[0].last_ns == t0 + 22'000'000);
  CHECK(p[1].pid == "200");
  CHECK(p[1].name == "python3");
  CHECK(p[1].weight == 5);
  CHECK(p[1].first_ns == t0 + 10'000'000);
  CHECK(p[1].last_ns == t0 + 14'000'000);

  // Without sample times the times are 0, the rest the same.
  const std::vector<ProcessSummary> untimed = ProcessesOf(*testing::WholeSlice(batch));
  REQUIRE(untimed.size() == 2);
  CHECK(untimed[0].first_ns == 0);
  CHECK(untimed[0].weight == 5);
}

}  // namespace
}  // namespace kiln::storage
