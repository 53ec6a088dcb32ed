#include "ui/stack_chart_data.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "storage/model/query.h"
#include "storage/model/test_fixtures.h"
#include "storage/model/transforms.h"

namespace kiln::ui {
namespace {

using storage::testing::AppendBatch;
using storage::testing::BatchFromFolded;
using storage::testing::FoldedFixtureOptions;

constexpr int64_t kT0 = 1'700'000'000'000'000'000;
constexpr int64_t kMs = 1'000'000;

FoldedFixtureOptions Thread(const std::string& pid, const std::string& tid, const std::string& name) {
  FoldedFixtureOptions o;
  o.process = "server";
  o.thread = name;
  o.attributes = {{"process.pid", pid}, {"thread.id", tid}};
  return o;
}

std::shared_ptr<const storage::ProfileSlice> Kept(const storage::ProfileBatch& batch) {
  storage::Query q;
  q.sample_type = batch.dict.sample_types.at(batch.samples.at(0).sample_type).type;
  q.keep_samples = true;
  return storage::SliceFromBatch(batch, q);
}

// The shown samples as "time ms +duration ms leaf", a line each.
std::string Print(const StackChartData& d) {
  std::string out;
  for (const ChartSample& s : d.samples) {
    const std::vector<uint32_t>& frames = d.stacks.at(s.stack);
    out += std::to_string((s.time_ns - kT0) / kMs) + " +" + std::to_string(s.duration_ns / kMs) + " ";
    for (size_t i = 0; i < frames.size(); ++i) out += (i ? ";" : "") + (*d.functions)[frames[i]].name;
    out += "\n";
  }
  return out;
}

// A busy thread (6 samples) and a quieter one (2) of one process, their
// samples interleaved in time and given out of order.
storage::ProfileBatch TwoThreads() {
  storage::ProfileBatch batch = BatchFromFolded("main;work;parse 2\nmain;work;emit 1\nmain;idle 3\n",
                                                Thread("10", "11", "worker"));
  AppendBatch(&batch, BatchFromFolded("main;log 2\n", Thread("10", "12", "logger")));
  const int64_t times[] = {50, 0, 10, 20, 30, 40, 5, 15};  // ms after kT0, in batch order
  for (size_t i = 0; i < batch.samples.size(); ++i) batch.samples[i].time_ns = kT0 + times[i] * kMs;
  return batch;
}

TEST_CASE("stack chart data: threads heaviest first, the heaviest shown unless one is chosen, samples by time") {
  const auto slice = Kept(TwoThreads());
  StackChartData d = StackChartDataOf(slice, {}, "", 10 * kMs);
  REQUIRE(d.threads.size() == 2);
  CHECK(d.threads[0].key == "10/11");
  CHECK(d.threads[0].label == "server [10] \xc2\xb7 worker [11]");
  CHECK(d.threads[0].samples == 6);
  CHECK(d.threads[1].key == "10/12");
  CHECK(d.threads[1].samples == 2);
  CHECK(d.thread == "10/11");
  CHECK(d.durations == StackChartData::Durations::kPeriod);
  CHECK(Print(d) ==
        "0 +10 main;work;parse\n"
        "10 +10 main;work;emit\n"
        "20 +10 main;idle\n"
        "30 +10 main;idle\n"
        "40 +10 main;idle\n"
        "50 +10 main;work;parse\n");
  CHECK(d.layout.depths.at(0).size() == 1);  // main runs throughout: one box

  CHECK(d.span_of == std::vector<uint32_t>(6, 0));  // no links: in no span

  d = StackChartDataOf(slice, {}, "10/12", 10 * kMs);
  CHECK(d.thread == "10/12");
  CHECK(Print(d) == "5 +10 main;log\n15 +10 main;log\n");
  // A thread no longer in the range: the heaviest instead.
  CHECK(StackChartDataOf(slice, {}, "10/99", 10 * kMs).thread == "10/11");
}

TEST_CASE("stack chart data: each sample's span, for the tooltip") {
  storage::ProfileBatch batch = TwoThreads();
  batch.dict.links.resize(1);
  batch.dict.links.push_back({std::string(16, '\x01'), std::string(8, '\x02')});
  batch.samples[1].link = 1;  // the sample at 0 ms
  const StackChartData d = StackChartDataOf(Kept(batch), {}, "", 10 * kMs);
  REQUIRE(d.span_of.size() == 6);
  REQUIRE(d.span_of[0] != 0);
  CHECK(d.spans[d.span_of[0]].span == "0202020202020202");
  CHECK(d.spans[d.span_of[0]].trace == "01010101010101010101010101010101");
  CHECK(d.span_of[1] == 0);
}

TEST_CASE("stack chart data: the session's transforms apply, and what they leave out is counted") {
  const auto slice = Kept(TwoThreads());
  storage::FlameTreeOptions options;
  options.transforms = {*storage::ParseTransform("focus=work"), *storage::ParseTransform("merge=emit")};
  const StackChartData d = StackChartDataOf(slice, options, "", 10 * kMs);
  CHECK(Print(d) == "0 +10 work;parse\n10 +10 work\n50 +10 work;parse\n");
  CHECK(d.transformed_away == 3);
  // The tracks still weigh every sample of the range.
  CHECK(d.threads[0].samples == 6);
}

TEST_CASE("stack chart data: without a period, the thread's median spacing; off-CPU over its real blocked time") {
  storage::ProfileBatch batch = BatchFromFolded("main;tick 4\n", Thread("7", "7", "main"));
  const int64_t gaps[] = {0, 20, 40, 500};  // ms: a 20 ms sampler, then a long sleep
  for (size_t i = 0; i < batch.samples.size(); ++i) batch.samples[i].time_ns = kT0 + gaps[i] * kMs;
  StackChartData d = StackChartDataOf(Kept(batch), {}, "", 0);
  CHECK(d.durations == StackChartData::Durations::kSpacing);
  CHECK(d.duration_ns == 20 * kMs);

  // kiln-agent's off-CPU at probability 0.1: the normalizer scaled each
  // value x10; the chart draws the interval the thread really waited.
  FoldedFixtureOptions off = Thread("7", "7", "main");
  off.sample_type.type = storage::OffCpuTime();
  off.attributes.emplace_back("kiln.sampling.probability", "0.1");
  off.value = 300 * kMs;  // 30 ms blocked, scaled x10
  storage::ProfileBatch blocked = BatchFromFolded("main;read 1\nmain;poll 1\n", off);
  blocked.samples[1].time_ns = blocked.samples[0].time_ns + 100 * kMs;
  d = StackChartDataOf(Kept(blocked), {}, "", 0);
  CHECK(d.durations == StackChartData::Durations::kBlocked);
  CHECK(Print(d) == "0 +30 main;read\n100 +30 main;poll\n");
  CHECK(d.values == std::vector<int64_t>{300 * kMs, 300 * kMs});
  CHECK(d.layout.depths.at(0).size() == 2);  // 70 ms apart: not one box
}

TEST_CASE("stack chart data: samples without times of their own are counted, not drawn; no slice, nothing") {
  auto slice = std::make_shared<storage::ProfileSlice>(*Kept(TwoThreads()));
  slice->total_events += 5;  // five summarized samples in the range
  const StackChartData d = StackChartDataOf(slice, {}, "", 10 * kMs);
  CHECK(d.untimed_events == 5);
  CHECK(d.samples.size() == 6);
  CHECK(StackChartDataOf(nullptr, {}, "", 0).samples.empty());
}

}  // namespace
}  // namespace kiln::ui
