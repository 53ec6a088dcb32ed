// Hourly stack summaries: the pure encoding, and the store's use of them
// checked against the in-memory query of the same samples (SliceFromBatch,
// the capture path, which knows nothing of summaries) and against a
// timeline counted here sample by sample.
#include "storage/stack_summary.h"

#include <doctest/doctest.h>

#include <map>
#include <random>
#include <thread>

#include "storage/store.h"
#include "tests/temp_dir.h"

namespace kiln::storage {
namespace {

using ::kiln::testing::TempDir;

constexpr int64_t kHourNs = kSummaryNs;
// An hour boundary, so tests can name hours.
constexpr int64_t kT0 = 472'222 * kHourNs;

// Samples over `hours` hours from kT0, one every `step_ns`: 150 distinct
// stacks over three threads, on-CPU and (every fourth sample) off-CPU.
ProfileBatch MakeBatch(double hours, int64_t step_ns, uint64_t seed) {
  ProfileBatch b;
  ProfileDictionary& d = b.dict;
  for (int i = 0; i < 40; ++i) {
    Frame f;
    f.function = d.AddString("fn" + std::to_string(i));
    d.frames.push_back(f);
  }
  std::mt19937_64 rng(seed);
  for (int s = 0; s < 150; ++s) {
    std::vector<uint32_t> frames = {1};  // a shared root, like main
    const int depth = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < depth; ++k) frames.push_back(1 + static_cast<uint32_t>(rng() % 40));
    d.AddStack(frames);
  }
  for (const char* thread : {"io", "worker", "gc"}) {
    d.AddAttributeSet({{d.AddString("thread.name"), d.AddString(thread)}});
  }
  d.AddSampleType({OnCpuSamples()});
  const uint32_t off_cpu = d.AddSampleType({OffCpuTime()});
  const auto n = static_cast<int64_t>(hours * kHourNs / step_ns);
  for (int64_t i = 0; i < n; ++i) {
    Sample s;
    s.time_ns = kT0 + i * step_ns + static_cast<int64_t>(rng() % 1000);
    s.stack = 1 + static_cast<uint32_t>(rng() % 150);
    s.attribute_set = 1 + static_cast<uint32_t>(rng() % 3);
    s.value = 1;
    if (i % 4 == 0) {
      s.sample_type = off_cpu;
      s.value = 1000 + static_cast<int64_t>(rng() % 5000);
    }
    b.samples.push_back(s);
  }
  return b;
}

// `n` more on-CPU samples with `base`'s dictionary, 100 ms apart from `from_ns`.
ProfileBatch SamplesLike(const ProfileBatch& base, int64_t from_ns, int n, uint64_t seed) {
  ProfileBatch b;
  b.dict = base.dict;
  std::mt19937_64 rng(seed);
  for (int i = 0; i < n; ++i) {
    Sample s;
    s.time_ns = from_ns + int64_t{i} * 100'000'000;
    s.stack = 1 + static_cast<uint32_t>(rng() % 150);
    s.attribute_set = 1 + static_cast<uint32_t>(rng() % 3);
    s.value = 1;
    b.samples.push_back(s);
  }
  return b;
}

// A slice as text: per (thread, frames) its weight and events, plus totals
// and the time of its first and last sample. Ids differ between slices.
std::map<std::string, std::pair<int64_t, uint64_t>> Canon(const ProfileSlice& slice) {
  std::map<std::string, std::pair<int64_t, uint64_t>> out;
  const ProfileDictionary& d = slice.dict;
  for (const StackWeight& w : slice.weights) {
    std::string key;
    for (const Attribute& a : d.AttributeSet(w.attribute_set)) key += d.strings[a.value] + "|";
    for (uint32_t f : d.Stack(w.stack)) key += d.strings[d.frames[f].function] + ";";
    out[key].first += w.weight;
    out[key].second += w.events;
  }
  out["(total)"] = {slice.total_weight, slice.total_events};
  if (slice.total_events > 0)
    out["(times)"] = {slice.first_sample_ns, static_cast<uint64_t>(slice.last_sample_ns)};
  return out;
}

void CheckSameAsBatch(const Store& store, const ProfileBatch& batch, const Query& q) {
  auto slice = store.Run(q);
  REQUIRE_MESSAGE(slice.ok(), slice.status().ToString());
  CHECK(Canon(**slice) == Canon(*SliceFromBatch(batch, q)));
}

// The timeline counted sample by sample, without the store.
Timeline ReferenceTimeline(const ProfileBatch& batch, const Query& q, int buckets) {
  Timeline t = EmptyTimeline({q.from_ns, q.to_ns}, buckets);
  const std::vector<uint8_t> passes = MatchAttributeSets(batch.dict, q.filters);
  for (const Sample& s : batch.samples) {
    if (!(batch.dict.sample_types[s.sample_type].type == q.sample_type)) continue;
    if (s.time_ns < q.from_ns || s.time_ns >= q.to_ns || passes[s.attribute_set] == 0) continue;
    const int64_t i = (s.time_ns - t.start_ns) / t.bucket_ns;
    t.weights[i] += s.value;
    t.events[i] += 1;
  }
  return t;
}

void CheckTimeline(const Store& store, const ProfileBatch& batch, const Query& q, int buckets) {
  auto t = store.RunTimeline(q, buckets);
  REQUIRE_MESSAGE(t.ok(), t.status().ToString());
  const Timeline want = ReferenceTimeline(batch, q, buckets);
  CHECK(t->start_ns == want.start_ns);
  CHECK(t->bucket_ns == want.bucket_ns);
  CHECK(t->weights == want.weights);
  CHECK(t->events == want.events);
}

std::unique_ptr<Store> Open(const std::string& dir, bool use_summaries = true) {
  StoreOptions o;
  o.summarize_in_background = false;  // the tests say when
  o.use_summaries = use_summaries;
  auto store = Store::Open(dir, Store::Mode::kReadWrite, o);
  REQUIRE_MESSAGE(store.ok(), store.status().ToString());
  return std::move(*store);
}

// The queries every check runs: whole range, hour edges, mid-hour edges,
// a filter, and the off-CPU type.
std::vector<Query> Queries() {
  std::vector<Query> qs;
  qs.push_back({});
  qs.push_back({.from_ns = kT0 + kHourNs, .to_ns = kT0 + 3 * kHourNs});
  qs.push_back({.from_ns = kT0 + kHourNs / 2 + 12345, .to_ns = kT0 + 3 * kHourNs + 777});
  qs.push_back({.from_ns = kT0 + 5, .to_ns = kT0 + kHourNs - 5});
  Query filtered{.from_ns = kT0, .to_ns = kT0 + 4 * kHourNs};
  filtered.filters = {{"thread.name", {"worker", "gc"}}};
  qs.push_back(filtered);
  qs.push_back({.sample_type = OffCpuTime()});
  return qs;
}

}  // namespace

TEST_CASE("a stack summary sums per stack, thread and bucket, and round-trips") {
  StackSummaryBuilder b(10);
  const int64_t start = 10 * kHourNs;
  b.Add({start + 5, 7, 2, 0, 3});
  b.Add({start + 15'000'000'000, 7, 2, 0, 4});
  b.Add({start + 20, 8, 1, 0, 1});
  b.Add({start + kHourNs, 7, 2, 0, 100});  // the next hour: not this summary's
  for (int i = 0; i < 10; ++i) b.Add({start + 30 + i, 7, 2, 0, 1});
  StackSummary s = std::move(b).Finish();
  CHECK(s.samples == 13);
  REQUIRE(s.has_stacks);
  REQUIRE(s.has_buckets);
  CHECK(s.stacks == std::vector<StackSummary::Weight>{{1, 8, 1, 1}, {2, 7, 17, 12}});
  CHECK(s.buckets == std::vector<StackSummary::Weight>{{1, 0, 1, 1}, {2, 0, 13, 11}, {2, 1, 4, 1}});
  CHECK(s.sets ==
        std::vector<StackSummary::Set>{{1, start + 20, start + 20}, {2, start + 5, start + 15'000'000'000}});

  const std::string bytes = EncodeStackSummary(s);
  StackSummary back;
  REQUIRE(DecodeStackSummary(bytes, 10, &back).ok());
  CHECK(back == s);
  // Every truncation, a trailing byte and another version are refused.
  for (size_t n = 0; n < bytes.size(); ++n) {
    CHECK_FALSE(DecodeStackSummary(bytes.substr(0, n), 10, &back).ok());
  }
  CHECK_FALSE(DecodeStackSummary(bytes + "x", 10, &back).ok());
  std::string other = bytes;
  other[0] = 9;
  CHECK(DecodeStackSummary(other, 10, &back).message().find("version 9") != std::string_view::npos);
}

TEST_CASE("a summary keeps only the parts much smaller than its samples") {
  StackSummaryBuilder b(0);
  // 100 samples, each its own stack, all in one bucket of one thread.
  for (uint32_t i = 0; i < 100; ++i) b.Add({i, i + 1, 1, 0, 1});
  StackSummary s = std::move(b).Finish();
  CHECK_FALSE(s.has_stacks);
  CHECK(s.has_buckets);
  StackSummary back;
  REQUIRE(DecodeStackSummary(EncodeStackSummary(s), 0, &back).ok());
  CHECK(back == s);
}

TEST_CASE("queries over summarized hours answer as the samples do") {
  TempDir dir;
  const ProfileBatch batch = MakeBatch(4.2, 250'000'000, 1);
  auto store = Open(dir.path);
  REQUIRE(store->Write(batch).ok());
  absl::StatusOr<uint64_t> built = store->Summarize();
  REQUIRE(built.ok());
  // Hours 0-3 of both types are over (the newest sample is 12 minutes
  // into hour 4, past the two-minute grace); hour 4 is not.
  CHECK(*built == 8);
  CHECK(store->Stats().summarized_hours == 8);
  CHECK(*store->Summarize() == 0);  // nothing left to do

  for (const Query& q : Queries()) {
    CAPTURE(q.from_ns - kT0);
    CAPTURE(q.to_ns);
    CheckSameAsBatch(*store, batch, q);
  }
  // Summaries were read (two whole hours in the second query alone).
  CHECK(store->Stats().summary_hours_read >= 2);
  // Timelines: 10-minute buckets (every 10 s bucket whole), 7 buckets
  // (edges inside 10 s buckets), and finer than 10 s (none whole).
  const Query four_hours{.from_ns = kT0, .to_ns = kT0 + 4 * kHourNs};
  for (int buckets : {24, 7, 3000}) {
    CAPTURE(buckets);
    CheckTimeline(*store, batch, four_hours, buckets);
    Query filtered = four_hours;
    filtered.filters = {{"thread.name", {"io"}}};
    CheckTimeline(*store, batch, filtered, buckets);
  }
  CheckTimeline(*store, batch, {.from_ns = kT0 + 999, .to_ns = kT0 + 3 * kHourNs + 5}, 11);

  // The same store read sample by sample gives the same slices (the
  // benchmark's comparison).
  store.reset();
  auto raw = Open(dir.path, /*use_summaries=*/false);
  CheckSameAsBatch(*raw, batch, {});
  CHECK(raw->Stats().summary_hours_read == 0);
  CHECK(raw->Stats().summarized_hours == 8);  // kept across the reopen
}

TEST_CASE("a late write or retention makes a summary go, and the answers stay true") {
  TempDir dir;
  ProfileBatch all = MakeBatch(4.5, 500'000'000, 2);
  StoreOptions o;
  o.summarize_in_background = false;
  o.retention_age = std::chrono::hours(1);
  o.retention_interval = std::chrono::milliseconds(0);  // applied below, with its own clock
  auto opened = Store::Open(dir.path, Store::Mode::kReadWrite, o);
  REQUIRE(opened.ok());
  auto& store = *opened;
  REQUIRE(store->Write(all).ok());
  REQUIRE(*store->Summarize() == 8);

  // Late on-CPU samples for hour 1, as an agent that was cut off sends them.
  ProfileBatch late = SamplesLike(all, kT0 + kHourNs + kHourNs / 3, 40, 3);
  REQUIRE(store->Write(late).ok());
  CHECK(store->Stats().summarized_hours == 7);  // on-CPU hour 1 went
  all.samples.insert(all.samples.end(), late.samples.begin(), late.samples.end());
  for (const Query& q : Queries()) CheckSameAsBatch(*store, all, q);
  CheckTimeline(*store, all, {.from_ns = kT0, .to_ns = kT0 + 4 * kHourNs}, 24);
  CHECK(*store->Summarize() == 1);  // made again, with the late samples
  for (const Query& q : Queries()) CheckSameAsBatch(*store, all, q);

  // Retention keeps the last hour before "now" = 3.7 h: the cut is at
  // 2.7 h, so hours 0-2 lose samples and their summaries; hour 3 keeps its.
  auto report = store->ApplyRetention(kT0 + 37 * kHourNs / 10);
  REQUIRE(report.ok());
  CHECK(report->samples_deleted > 0);
  CHECK(store->Stats().summarized_hours == 2);
  const int64_t cut_ns = kT0 + 27 * kHourNs / 10;
  std::erase_if(all.samples, [&](const Sample& s) { return s.time_ns < cut_ns; });
  for (const Query& q : Queries()) CheckSameAsBatch(*store, all, q);
  CheckTimeline(*store, all, {.from_ns = kT0, .to_ns = kT0 + 4 * kHourNs}, 24);
}

TEST_CASE("summaries built while late samples arrive never hide one") {
  TempDir dir;
  ProfileBatch all = MakeBatch(6.1, 1'000'000'000, 4);
  auto store = Open(dir.path);
  REQUIRE(store->Write(all).ok());
  // One thread keeps writing late samples into the hours being summarized;
  // whichever order the writes and the summaries' snapshots take, no
  // summary may be stored without a sample written before it.
  std::vector<ProfileBatch> lates;
  for (int i = 0; i < 60; ++i)
    lates.push_back(SamplesLike(all, kT0 + (i % 6) * kHourNs + i * 7'000'000'000, 20, i));
  std::thread writer([&] {
    for (const ProfileBatch& b : lates) REQUIRE(store->Write(b).ok());
  });
  for (int i = 0; i < 30; ++i) REQUIRE(store->Summarize().ok());
  writer.join();
  REQUIRE(store->Summarize().ok());
  for (const ProfileBatch& b : lates)
    all.samples.insert(all.samples.end(), b.samples.begin(), b.samples.end());
  CHECK(store->Stats().summarized_hours == 12);
  for (const Query& q : Queries()) CheckSameAsBatch(*store, all, q);
}

}  // namespace kiln::storage
