#include "storage/model/query.h"

#include <doctest/doctest.h>

#include "storage/model/test_fixtures.h"

namespace kiln::storage {

TEST_CASE("attribute filters: OR within a key, AND across keys, unknown keys match nothing") {
  ProfileDictionary d;
  auto kv = [&](std::string_view k, std::string_view v) { return Attribute{d.AddString(k), d.AddString(v)}; };
  const uint32_t a = d.AddAttributeSet({kv("service.name", "api"), kv("host.name", "h1")});
  const uint32_t b = d.AddAttributeSet({kv("service.name", "db"), kv("host.name", "h1")});
  const uint32_t c = d.AddAttributeSet({kv("service.name", "api"), kv("host.name", "h2")});
  auto passing = [&](std::vector<AttributeFilter> filters) {
    std::vector<uint8_t> m = MatchAttributeSets(d, filters);
    return std::vector<int>{m[0], m[a], m[b], m[c]};
  };
  CHECK(passing({}) == std::vector<int>{1, 1, 1, 1});
  CHECK(passing({{"service.name", {"api"}}}) == std::vector<int>{0, 1, 0, 1});
  CHECK(passing({{"service.name", {"api", "db"}}}) == std::vector<int>{0, 1, 1, 1});
  CHECK(passing({{"service.name", {"api"}}, {"host.name", {"h1"}}}) == std::vector<int>{0, 1, 0, 0});
  CHECK(passing({{"nope", {"api"}}}) == std::vector<int>{0, 0, 0, 0});
}

TEST_CASE("slices: weight per stack and attribute set, events, totals, time range") {
  // 4 samples 1 ms apart, value 10 each.
  ProfileBatch batch = testing::BatchFromFolded("main;a 3\nmain;b 1", {.value = 10});
  const int64_t t0 = testing::FoldedFixtureOptions{}.first_time_ns;
  Query q;
  auto all = SliceFromBatch(batch, q);
  CHECK(all->total_weight == 40);
  CHECK(all->total_events == 4);
  CHECK(all->weights.size() == 2);
  CHECK(all->first_sample_ns == t0);
  CHECK(all->last_sample_ns == t0 + 3'000'000);
  q.from_ns = t0 + 1'000'000;
  q.to_ns = t0 + 3'000'000;  // exclusive
  auto part = SliceFromBatch(batch, q);
  CHECK(part->total_events == 2);
  CHECK(SelectSamples(batch, q) == std::vector<uint32_t>{1, 2});
  q.sample_type = OffCpuTime();
  CHECK(SliceFromBatch(batch, q)->weights.empty());
  CHECK(SliceFromBatch(batch, q)->sample_type.type == OffCpuTime());
}

TEST_CASE("timelines: buckets over the query range; an open end is the source's first or last sample") {
  ProfileBatch batch = testing::BatchFromFolded("main;a 3\nmain;b 1");
  const int64_t t0 = testing::FoldedFixtureOptions{}.first_time_ns;
  Query q;
  Timeline t = TimelineFromBatch(batch, q, 4);
  CHECK(t.start_ns == t0);
  CHECK(t.bucket_ns == 750'001);  // 3 ms + 1 ns over 4 buckets, rounded up
  CHECK(t.events == std::vector<uint64_t>{1, 1, 1, 1});
  // A filter does not move an open end: timelines of one source line up.
  q.filters.push_back({"nope", {"x"}});
  Timeline none = TimelineFromBatch(batch, q, 4);
  CHECK(none.start_ns == t.start_ns);
  CHECK(none.bucket_ns == t.bucket_ns);
  CHECK(none.events == std::vector<uint64_t>{0, 0, 0, 0});
  CHECK(TimelineSpan(Query{.from_ns = 5, .to_ns = 5}, 0, 0).to_ns == 6);  // never empty
}

}  // namespace kiln::storage
