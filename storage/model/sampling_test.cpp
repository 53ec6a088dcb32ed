#include "storage/model/sampling.h"

#include <doctest/doctest.h>

#include "storage/model/sample_type.h"
#include "storage/model/test_fixtures.h"

namespace kiln::storage {
namespace {

using Attrs = std::vector<std::pair<std::string, std::string>>;

TEST_CASE("sampling note: estimated where the sender said its share, may be sampled for off-CPU where not") {
  SampleTypeInfo off_cpu{OffCpuTime()};
  // kiln-agent at -off-cpu-threshold 0.1: its profiles carry the share.
  auto said = testing::BatchFromFolded(
      "main;read 3", {.sample_type = off_cpu, .attributes = Attrs{{"kiln.sampling.probability", "0.1"}}});
  SamplingNote n = SamplingNoteOf(*testing::WholeSlice(said));
  CHECK(n.kind == SamplingNote::Kind::kEstimated);
  CHECK(n.label == "estimated x10");
  CHECK(n.text.find("probability 0.1") != std::string::npos);

  // Two senders with two shares: both named.
  testing::AppendBatch(&said, testing::BatchFromFolded("main;poll 1",
                                                       {.sample_type = off_cpu,
                                                        .attributes = Attrs{{"kiln.sampling.probability", "0.5"}}}));
  CHECK(SamplingNoteOf(*testing::WholeSlice(said)).label == "estimated x10, x2");

  // The OpenTelemetry eBPF profiler's off-CPU: no share sent.
  auto unsaid = testing::BatchFromFolded("main;read 3", {.sample_type = off_cpu});
  n = SamplingNoteOf(*testing::WholeSlice(unsaid));
  CHECK(n.kind == SamplingNote::Kind::kMaybeSampled);
  CHECK(n.label == "may be sampled");

  // kiln-agent at -off-cpu-threshold 1 says it recorded every blocked period.
  auto all = testing::BatchFromFolded(
      "main;read 3", {.sample_type = off_cpu, .attributes = Attrs{{"kiln.sampling.probability", "1"}}});
  CHECK(SamplingNoteOf(*testing::WholeSlice(all)).kind == SamplingNote::Kind::kNone);

  // On-CPU samples: nothing to say.
  CHECK(SamplingNoteOf(*testing::WholeSlice(testing::BatchFromFolded("main 2"))).kind == SamplingNote::Kind::kNone);
}

}  // namespace
}  // namespace kiln::storage
