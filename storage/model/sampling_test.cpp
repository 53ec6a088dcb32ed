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

TEST_CASE("the probability a sample's values were scaled by: the normalizer's rule, in one place") {
  auto set_with = [](const std::string& p) {
    ProfileBatch b = testing::BatchFromFolded("main 1", {.attributes = Attrs{{"kiln.sampling.probability", p}}});
    return std::pair{b.dict, b.samples[0].attribute_set};
  };
  auto scaled = [&](const std::string& p) {
    const auto [dict, set] = set_with(p);
    return ScaledProbability(dict, set);
  };
  CHECK(scaled("0.1") == doctest::Approx(0.1));
  CHECK(scaled("1") == 1);            // every event: not scaled
  CHECK(scaled("0.0000001") == 1);    // below one in a million: the normalizer left it
  CHECK(scaled("nonsense") == 1);
  const ProfileBatch none = testing::BatchFromFolded("main 1");
  CHECK(ScaledProbability(none.dict, none.samples[0].attribute_set) == 1);
  CHECK(ScalesByProbability(1e-6));
  CHECK_FALSE(ScalesByProbability(1));
}

}  // namespace
}  // namespace kiln::storage
