#include "storage/model/spans.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "storage/model/flame_tree.h"
#include "storage/model/query.h"
#include "storage/model/test_fixtures.h"

namespace kiln::storage {
namespace {

using testing::AppendBatch;
using testing::BatchFromFolded;
using testing::FoldedFixtureOptions;

const std::string kTraceA(16, '\xaa'), kTraceB(16, '\xbb');
const std::string kSpan1("\x01\x02\x03\x04\x05\x06\x07\x08", 8), kSpan2(8, '\x22'), kSpan3(8, '\x33');

// Two traces, three spans: A/1 (3 samples of 10), A/2 (2 of 20), B/3 (1 of
// 5) as OTLP links; 2 samples in no span; and one pprof-style sample whose
// span is said by labels (attributes), in upper case.
ProfileBatch Fixture() {
  FoldedFixtureOptions o;
  o.process = "svc";
  o.thread = "worker";
  o.attributes = {{"process.pid", "9"}, {"thread.id", "10"}};
  o.value = 10;
  ProfileBatch batch = BatchFromFolded("main;handle;parse 3\n", o);
  o.value = 20;
  AppendBatch(&batch, BatchFromFolded("main;handle;query 2\n", o));
  o.value = 5;
  o.thread = "io";
  o.attributes = {{"process.pid", "9"}, {"thread.id", "11"}, {"span_name", "GET /items"}};
  AppendBatch(&batch, BatchFromFolded("main;poll 1\n", o));
  o.value = 1;
  o.attributes = {{"process.pid", "9"}, {"thread.id", "10"}};
  AppendBatch(&batch, BatchFromFolded("main;idle 2\n", o));
  o.attributes = {{"process.pid", "9"}, {"thread.id", "12"}, {"trace_id", "CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC"},
                  {"span_id", "4444444444444444"}};
  AppendBatch(&batch, BatchFromFolded("main;labelled 1\n", o));
  ProfileDictionary& d = batch.dict;
  d.links.resize(1);  // AppendBatch kept each part's empty link
  d.links.push_back({kTraceA, kSpan1});
  d.links.push_back({kTraceA, kSpan2});
  d.links.push_back({kTraceB, kSpan3});
  const uint32_t links[] = {1, 1, 1, 2, 2, 3, 0, 0, 0};
  REQUIRE(batch.samples.size() == 9);
  for (size_t i = 0; i < batch.samples.size(); ++i) {
    batch.samples[i].link = links[i];
    batch.samples[i].time_ns = 1'000'000'000 + static_cast<int64_t>(i) * 1'000'000;
  }
  return batch;
}

std::shared_ptr<const ProfileSlice> Select(const ProfileBatch& batch, std::vector<AttributeFilter> filters) {
  Query q;
  q.keep_samples = true;
  q.filters = std::move(filters);
  return SliceFromBatch(batch, q);
}

TEST_CASE("spans: ids as lowercase hex, from the link or else the attributes") {
  CHECK(HexId(kSpan1) == "0102030405060708");
  CHECK(HexId("") == "");
  CHECK(BytesOfHex("0102030405060708") == kSpan1);
  CHECK(BytesOfHex("AAaa") == std::string(2, '\xaa'));
  CHECK_FALSE(BytesOfHex("abc").has_value());
  CHECK_FALSE(BytesOfHex("zz").has_value());
  CHECK_FALSE(BytesOfHex("").has_value());
  const ProfileBatch batch = Fixture();
  CHECK(SpanOf(batch.dict, 1, 0) == SpanIdentity{std::string(32, 'a'), "0102030405060708"});
  const uint32_t labelled = batch.samples[8].attribute_set;
  CHECK(SpanOf(batch.dict, 0, labelled) == SpanIdentity{std::string(32, 'c'), "4444444444444444"});
  CHECK(SpanOf(batch.dict, 0, 0).empty());
}

TEST_CASE("spans: --filter trace_id / span_id select exactly a trace's or a span's samples") {
  const ProfileBatch batch = Fixture();
  auto weight = [&](std::vector<AttributeFilter> f) {
    const auto s = Select(batch, std::move(f));
    return std::pair{s->total_events, s->total_weight};
  };
  CHECK(weight({{"trace_id", {std::string(32, 'a')}}}) == std::pair<uint64_t, int64_t>{5, 70});
  CHECK(weight({{"span_id", {"2222222222222222"}}}) == std::pair<uint64_t, int64_t>{2, 40});
  CHECK(weight({{"span_id", {"2222222222222222", "3333333333333333"}}}) == std::pair<uint64_t, int64_t>{3, 45});
  // Both keys: AND (span 3 is not in trace A).
  CHECK(weight({{"trace_id", {std::string(32, 'a')}}, {"span_id", {"3333333333333333"}}}) ==
        std::pair<uint64_t, int64_t>{0, 0});
  // Upper-case hex as typed, and a span said by labels.
  CHECK(weight({{"trace_id", {std::string(32, 'C')}}}) == std::pair<uint64_t, int64_t>{1, 1});
  // With another attribute filter: AND.
  CHECK(weight({{"trace_id", {std::string(32, 'a')}}, {"thread.id", {"11"}}}) == std::pair<uint64_t, int64_t>{0, 0});
  CHECK(weight({{"trace_id", {std::string(32, 'b')}}, {"thread.id", {"11"}}}) == std::pair<uint64_t, int64_t>{1, 5});
  CHECK(weight({{"trace_id", {"not hex"}}}) == std::pair<uint64_t, int64_t>{0, 0});
  // From the command line, such a value is refused with the reason.
  auto parsed = ParseFilterArguments({"trace_id=zz"});
  REQUIRE_FALSE(parsed.ok());
  CHECK(parsed.status().message() ==
        "--filter trace_id wants an id in hex, as OTLP/JSON writes it (32 digits), got \"zz\"");
  CHECK(ParseFilterArguments({"span_id=0102030405060708", "thread.name=zz"}).ok());
}

TEST_CASE("spans: each span's weight, samples, times and threads; samples in no span counted") {
  uint64_t unspanned = 99;
  const std::vector<SpanRow> rows = SpansOf(*Select(Fixture(), {}), &unspanned);
  REQUIRE(rows.size() == 4);
  CHECK(unspanned == 2);
  CHECK(rows[0].id.span == "2222222222222222");
  CHECK(rows[0].weight == 40);
  CHECK(rows[0].samples == 2);
  CHECK(rows[0].first_ns == 1'003'000'000);
  CHECK(rows[0].last_ns == 1'004'000'000);
  CHECK(rows[0].threads == std::vector<std::string>{"svc [9] \xc2\xb7 worker [10]"});
  CHECK(rows[1].id.span == "0102030405060708");
  CHECK(rows[1].weight == 30);
  CHECK(rows[1].samples == 3);
  CHECK(rows[2].id.trace == std::string(32, 'b'));
  CHECK(rows[2].name == "GET /items");
  CHECK(rows[2].threads == std::vector<std::string>{"svc [9] \xc2\xb7 io [11]"});
  CHECK(rows[3].id.trace == std::string(32, 'c'));
  CHECK(rows[3].weight == 1);
}

TEST_CASE("spans: a tree grouped by span, from the links and from the labels; a group's filter") {
  const ProfileBatch batch = Fixture();
  FlameTreeOptions options;
  REQUIRE(ParseGroupBy("span", &options));
  CHECK(options.group_by == GroupBy::kSpan);
  CHECK(NeedsSamples(options));
  const auto slice = Select(batch, {});
  const FlameTree tree = BuildFlameTree(slice, options);
  CHECK(PrintFlameTree(tree) ==
        "all 78\n"
        "  GET /items (span 3333333333333333) 5\n"
        "    main 5\n"
        "      poll 5 self=5\n"
        "  no span 2\n"
        "    main 2\n"
        "      idle 2 self=2\n"
        "  span 0102030405060708 30\n"
        "    main 30\n"
        "      handle 30\n"
        "        parse 30 self=30\n"
        "  span 2222222222222222 40\n"
        "    main 40\n"
        "      handle 40\n"
        "        query 40 self=40\n"
        "  span 4444444444444444 1\n"
        "    main 1\n"
        "      labelled 1 self=1\n");
  // The slice itself is not changed: the other views' trees are as before.
  CHECK(PrintFlameTree(BuildFlameTree(slice, {.group_by = GroupBy::kNone})).find("span") == std::string::npos);
  // Each group's label gives back the filter that selects its samples.
  using Filter = std::pair<std::string, std::string>;
  CHECK(SpanFilterOfGroupLabel("GET /items (span 3333333333333333)") == Filter{"span_id", "3333333333333333"});
  CHECK(SpanFilterOfGroupLabel("span 0102030405060708") == Filter{"span_id", "0102030405060708"});
  CHECK(SpanFilterOfGroupLabel("trace " + std::string(32, 'a')) == Filter{"trace_id", std::string(32, 'a')});
  CHECK_FALSE(SpanFilterOfGroupLabel("no span").has_value());
  CHECK_FALSE(SpanFilterOfGroupLabel("span of life").has_value());
  CHECK_FALSE(SpanFilterOfGroupLabel("lifespan (span xyz)").has_value());
  const auto chosen = Select(batch, {{"span_id", {"3333333333333333"}}});
  CHECK(chosen->total_weight == 5);
  // A trace id without a span id is its own group.
  ProfileBatch trace_only = Fixture();
  trace_only.dict.links[3].span_id.clear();
  CHECK(PrintFlameTree(BuildFlameTree(Select(trace_only, {}), options))
            .find("  GET /items (span") == std::string::npos);
  CHECK(PrintFlameTree(BuildFlameTree(Select(trace_only, {}), options)).find("  trace " + std::string(32, 'b') + " 5\n") !=
        std::string::npos);
}

}  // namespace
}  // namespace kiln::storage
