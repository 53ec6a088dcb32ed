#include "storage/store.h"

#include <doctest/doctest.h>
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <random>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "storage/model/flame_tree.h"
#include "storage/model/folded.h"
#include "storage/model/spans.h"
#include "storage/model/test_fixtures.h"
#include "storage/symbol_table_fixture.h"
#include "storage/varint.h"
#include "tests/child_process.h"
#include "tests/temp_dir.h"

namespace kiln::storage {
namespace {

using ::kiln::testing::DirectoryBytes;
using ::kiln::testing::TempDir;

// The store's RocksDB opened directly, with every family this kiln
// writes, to make a store what an older kiln (or damage) left.
struct RawStore {
  rocksdb::DB* db = nullptr;
  // default (meta), blocks, log, symbols, summaries, forward, spans: every
  // family the store has, in the order it made them.
  std::vector<rocksdb::ColumnFamilyHandle*> cf;
  explicit RawStore(const std::string& dir) {
    std::vector<std::string> names;
    REQUIRE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), dir, &names).ok());
    std::vector<rocksdb::ColumnFamilyDescriptor> families;
    for (const std::string& name : names) families.push_back({name, {}});
    REQUIRE(rocksdb::DB::Open(rocksdb::DBOptions(), dir, families, &cf, &db).ok());
  }
  ~RawStore() {
    for (auto* h : cf) db->DestroyColumnFamilyHandle(h);
    delete db;
  }
};

std::unique_ptr<Store> OpenOrDie(const std::string& dir, Store::Mode mode = Store::Mode::kReadWrite) {
  auto store = Store::Open(dir, mode);
  REQUIRE_MESSAGE(store.ok(), store.status().ToString());
  return std::move(*store);
}

std::vector<std::string> Folded(const Store& store, Query q = {}, GroupBy g = GroupBy::kNone) {
  auto slice = store.Run(q);
  REQUIRE_MESSAGE(slice.ok(), slice.status().ToString());
  return FoldedLines(BuildFlameTree(*slice, {.group_by = g}), {});
}

// Minute `m` from `t0` of a busy process: 10,000 samples over 20 stacks at
// jittered times, so the blocks, not the dictionary or the tables' fixed
// overhead, are the size (retention's tests).
ProfileBatch MinuteBatch(int64_t t0, int m, std::mt19937_64* rng) {
  constexpr int64_t kMinute = 60'000'000'000;
  std::string folded;
  for (int k = 0; k < 20; ++k) folded += "main;work" + std::to_string(k) + " 500\n";
  ProfileBatch batch = testing::BatchFromFolded(folded, {.first_time_ns = t0 + m * kMinute, .process = "app"});
  for (Sample& sample : batch.samples) {
    sample.time_ns += static_cast<int64_t>((*rng)() % 50'000'000);
    sample.stack = 1 + static_cast<uint32_t>((*rng)() % (batch.dict.StackCount() - 1));
  }
  return batch;
}

}  // namespace

TEST_CASE("written samples come back from a query, after a restart too") {
  TempDir dir;
  {
    auto store = OpenOrDie(dir.path);
    REQUIRE(store->Write(testing::BatchFromFolded("main;a 3\nmain;b 1", {.process = "app"})).ok());
    REQUIRE(store->Write(testing::BatchFromFolded("main;a 2", {.process = "app"})).ok());
    CHECK(Folded(*store) == std::vector<std::string>{"main;a 5", "main;b 1"});
  }
  auto store = OpenOrDie(dir.path);
  CHECK(Folded(*store, {}, GroupBy::kProcess) == std::vector<std::string>{"app;main;a 5", "app;main;b 1"});
  StoreStats st = store->Stats();
  CHECK(st.samples == 6);
  CHECK(st.stacks == 2);
  CHECK(st.disk_bytes > 0);
  CHECK(st.first_sample_ns == 1'700'000'000'000'000'000);
  // Dictionary entries were deduplicated across writes.
  CHECK(st.frames == 3);
}

TEST_CASE("Stats names where the disk goes: each part's files, within the directory's size") {
  TempDir dir;
  auto store = OpenOrDie(dir.path);
  // Nothing flushed yet: the parts' files are empty, the WAL holds it all.
  REQUIRE(store->Write(testing::BatchFromFolded("main;a 3\nmain;b 1", {.process = "app"})).ok());
  StoreStats st = store->Stats();
  std::vector<std::string> names;
  for (const auto& p : st.part_bytes) names.push_back(p.part);
  CHECK(names == std::vector<std::string>{"dictionary", "sample blocks", "log", "symbols", "summaries",
                                          "forward queue", "span index"});
  const auto part = [](const StoreStats& s, std::string_view name) {
    for (const auto& p : s.part_bytes) {
      if (p.part == name) return p.bytes;
    }
    return uint64_t{0};
  };
  CHECK(part(st, "sample blocks") == 0);
  // A thousand distinct stacks, flushed: both the dictionary and the
  // blocks have files, and the parts never add up past the directory.
  std::string folded;
  for (int i = 0; i < 1000; ++i) folded += "main;function_" + std::to_string(i) + " 1\n";
  REQUIRE(store->Write(testing::BatchFromFolded(folded, {.process = "app"})).ok());
  REQUIRE(store->Flush().ok());
  st = store->Stats();
  CHECK(part(st, "dictionary") > 1000);
  CHECK(part(st, "sample blocks") > 0);
  uint64_t sum = 0;
  for (const auto& p : st.part_bytes) sum += p.bytes;
  CHECK(sum <= st.disk_bytes);
}

TEST_CASE("queries select sample type and half-open time range") {
  TempDir dir;
  auto store = OpenOrDie(dir.path);
  int64_t t0 = 1'700'000'000'000'000'000;
  REQUIRE(store->Write(testing::BatchFromFolded("cpu 4", {.first_time_ns = t0})).ok());
  REQUIRE(store
              ->Write(testing::BatchFromFolded(
                  "wait 2", {.sample_type = {OffCpuTime()}, .first_time_ns = t0, .value = 1000}))
              .ok());
  // Samples at t0, t0+1ms, t0+2ms, t0+3ms; a window across a 10 s bucket edge too.
  REQUIRE(store->Write(testing::BatchFromFolded("later 1", {.first_time_ns = t0 + 25'000'000'000})).ok());
  CHECK(Folded(*store) == std::vector<std::string>{"cpu 4", "later 1"});
  CHECK(Folded(*store, {.sample_type = OffCpuTime()}) == std::vector<std::string>{"wait 2000"});
  CHECK(Folded(*store, {.from_ns = t0 + 1'000'000, .to_ns = t0 + 3'000'000}) ==
        std::vector<std::string>{"cpu 2"});
  CHECK(Folded(*store, {.from_ns = t0 + 20'000'000'000}) == std::vector<std::string>{"later 1"});
  CHECK(Folded(*store, {.from_ns = t0, .to_ns = t0}).empty());
  auto slice = store->Run({.from_ns = t0 + 1'000'000});
  REQUIRE(slice.ok());
  CHECK((*slice)->first_sample_ns == t0 + 1'000'000);
  CHECK((*slice)->last_sample_ns == t0 + 25'000'000'000);
  CHECK((*slice)->total_events == 4);
}

TEST_CASE("filters match any resource or sample attribute, AND across keys") {
  TempDir dir;
  auto store = OpenOrDie(dir.path);
  REQUIRE(store->Write(testing::BatchFromFolded("a 1", {.process = "app", .thread = "main"})).ok());
  REQUIRE(store->Write(testing::BatchFromFolded("b 2", {.process = "app", .thread = "io"})).ok());
  REQUIRE(store->Write(testing::BatchFromFolded("c 4", {.process = "db", .thread = "io"})).ok());
  CHECK(Folded(*store, {.filters = {{"thread.name", {"io"}}}}) == std::vector<std::string>{"b 2", "c 4"});
  CHECK(Folded(*store, {.filters = {{"thread.name", {"io"}}, {"process.executable.name", {"app"}}}}) ==
        std::vector<std::string>{"b 2"});
  CHECK(Folded(*store, {.filters = {{"process.executable.name", {"db", "app"}}}}).size() == 3);
  CHECK(Folded(*store, {.filters = {{"no.such.key", {"x"}}}}).empty());
  CHECK(store->AttributeValues("thread.name", 10) == std::vector<std::string>{"io", "main"});
  CHECK(store->AttributeKeys() == std::vector<std::string>{"process.executable.name", "thread.name"});
}

TEST_CASE("timeline buckets weight over time") {
  TempDir dir;
  auto store = OpenOrDie(dir.path);
  int64_t t0 = 1'700'000'000'000'000'000;
  REQUIRE(store->Write(testing::BatchFromFolded("a 10", {.first_time_ns = t0})).ok());
  auto timeline = store->RunTimeline({.from_ns = t0, .to_ns = t0 + 10'000'000}, 2);
  REQUIRE(timeline.ok());
  CHECK(timeline->weights == std::vector<int64_t>{5, 5});
  CHECK(timeline->bucket_ns == 5'000'000);
}

TEST_CASE("a data dir in use is reported clearly; read-only opens work beside a writer") {
  TempDir dir;
  auto writer = OpenOrDie(dir.path);
  REQUIRE(writer->Write(testing::BatchFromFolded("a 2")).ok());
  auto second = Store::Open(dir.path, Store::Mode::kReadWrite);
  REQUIRE_FALSE(second.ok());
  CHECK(IsStoreInUse(second.status()));
  CHECK(second.status().message().find("in use") != std::string_view::npos);
  auto reader = OpenOrDie(dir.path, Store::Mode::kReadOnly);
  CHECK(Folded(*reader) == std::vector<std::string>{"a 2"});
  CHECK_FALSE(reader->Write(testing::BatchFromFolded("b 1")).ok());
}

TEST_CASE("read-only open of a missing store says so") {
  TempDir dir;
  auto store = Store::Open(dir.path + "/nothing", Store::Mode::kReadOnly);
  REQUIRE_FALSE(store.ok());
  CHECK(store.status().message().find("no kiln store") != std::string_view::npos);
}

TEST_CASE("schema version mismatch names both versions") {
  TempDir dir;
  { OpenOrDie(dir.path); }
  {
    // Patch the version key the way an older or newer kiln would have
    // written it.
    RawStore raw_store(dir.path);
    rocksdb::DB* raw = raw_store.db;
    const std::vector<rocksdb::ColumnFamilyHandle*>& handles = raw_store.cf;
    REQUIRE(raw->Put(rocksdb::WriteOptions(), handles[0], "meta:schema", std::string("\0\0\0\x07", 4)).ok());
  }
  auto store = Store::Open(dir.path, Store::Mode::kReadWrite);
  REQUIRE_FALSE(store.ok());
  CHECK(store.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_FALSE(IsStoreInUse(store.status()));  // waiting for another kiln would not help
  CHECK(store.status().message().find("schema version 7") != std::string_view::npos);
  CHECK(store.status().message().find("reads version " + std::to_string(kSchemaVersion)) !=
        std::string_view::npos);
}

TEST_CASE("schema 3 and 4 stores (no gaps in their dictionary) are read as they are, and marked 5 when written") {
  std::string old_version;
  SUBCASE("3: before forgetting") { old_version = std::string("\0\0\0\x03", 4); }
  SUBCASE("4: forgetting rewrote every key") { old_version = std::string("\0\0\0\x04", 4); }
  TempDir dir;
  {
    auto store = OpenOrDie(dir.path);
    REQUIRE(store->Write(testing::BatchFromFolded("main;a 3")).ok());
  }
  auto version = [&] {
    RawStore raw_store(dir.path);
    std::string v;
    REQUIRE(raw_store.db->Get(rocksdb::ReadOptions(), raw_store.cf[0], "meta:schema", &v).ok());
    return v.size() == 4 ? static_cast<int>(v[3]) : -1;
  };
  {
    RawStore raw_store(dir.path);
    REQUIRE(raw_store.db->Put(rocksdb::WriteOptions(), raw_store.cf[0], "meta:schema", old_version).ok());
  }
  CHECK(Folded(*OpenOrDie(dir.path, Store::Mode::kReadOnly)) == std::vector<std::string>{"main;a 3"});
  CHECK(version() == old_version[3]);  // a reader leaves it as it is
  CHECK(Folded(*OpenOrDie(dir.path)) == std::vector<std::string>{"main;a 3"});
  CHECK(version() == 5);  // an older kiln now refuses it rather than misread it
}

TEST_CASE(
    "a schema 2 store (before summaries) is read as it is, and gains summaries when opened read-write") {
  TempDir dir;
  const int64_t t0 = 1'700'000'000'000'000'000;
  {
    auto store = OpenOrDie(dir.path);
    REQUIRE(store->Write(testing::BatchFromFolded("main;a 3", {.first_time_ns = t0})).ok());
    // A sample two hours on, so the first hour is over.
    REQUIRE(
        store->Write(testing::BatchFromFolded("main;b 1", {.first_time_ns = t0 + 7'200'000'000'000})).ok());
  }
  {
    // Make it what kiln wrote before summaries: no such family (nor the
    // forward queue and the span index, which came later), version 2.
    RawStore raw_store(dir.path);
    rocksdb::DB* raw = raw_store.db;
    const std::vector<rocksdb::ColumnFamilyHandle*>& handles = raw_store.cf;
    REQUIRE(raw->DropColumnFamily(handles[6]).ok());
    REQUIRE(raw->DropColumnFamily(handles[5]).ok());
    REQUIRE(raw->DropColumnFamily(handles[4]).ok());
    REQUIRE(raw->Put(rocksdb::WriteOptions(), handles[0], "meta:schema", std::string("\0\0\0\x02", 4)).ok());
  }
  {
    auto reader = OpenOrDie(dir.path, Store::Mode::kReadOnly);
    CHECK(Folded(*reader) == std::vector<std::string>{"main;a 3", "main;b 1"});
    CHECK(reader->Stats().summarized_hours == 0);
  }
  StoreOptions o;
  o.summarize_in_background = false;
  auto store = Store::Open(dir.path, Store::Mode::kReadWrite, o);
  REQUIRE(store.ok());
  CHECK(*(*store)->Summarize() == 1);
  CHECK(Folded(**store) == std::vector<std::string>{"main;a 3", "main;b 1"});
  CHECK((*store)->Stats().summary_hours_read == 1);
  // A range that holds t0's hour but starts mid-hour does not use it.
  CHECK(Folded(**store, {.from_ns = t0 - 1, .to_ns = t0 + 3'600'000'000'000}) ==
        std::vector<std::string>{"main;a 3"});
  CHECK((*store)->Stats().summary_hours_read == 1);
}

TEST_CASE("bad batches are rejected whole and change nothing") {
  TempDir dir;
  auto store = OpenOrDie(dir.path);
  ProfileBatch bad = testing::BatchFromFolded("x;y 1");
  bad.samples[0].stack = 99;
  CHECK(store->Write(bad).code() == absl::StatusCode::kInvalidArgument);
  ProfileBatch bad_frame = testing::BatchFromFolded("x;y 1");
  bad_frame.dict.stack_frames[0] = 1000;
  CHECK(store->Write(bad_frame).code() == absl::StatusCode::kInvalidArgument);
  CHECK(store->Stats().samples == 0);
  CHECK(store->Stats().strings == 0);
  REQUIRE(store->Write(testing::BatchFromFolded("x;y 1")).ok());
  CHECK(Folded(*store) == std::vector<std::string>{"x;y 1"});
}

TEST_CASE("the event log keeps entries newest first across restarts") {
  TempDir dir;
  {
    auto store = OpenOrDie(dir.path);
    REQUIRE(store->AppendLog(LogLevel::kInfo, "listening").ok());
    REQUIRE(store->AppendLog(LogLevel::kWarning, "rejected 1 profile").ok());
  }
  auto store = OpenOrDie(dir.path);
  REQUIRE(store->AppendLog(LogLevel::kError, "third").ok());
  auto log = store->ReadLog(10);
  REQUIRE(log.size() == 3);
  CHECK(log[0].message == "third");
  CHECK(log[1].level == LogLevel::kWarning);
  CHECK(log[2].message == "listening");
  CHECK(log[0].sequence > log[1].sequence);
  CHECK(store->ReadLog(1).size() == 1);
}

TEST_CASE("links and unsymbolized frames survive storage") {
  TempDir dir;
  auto store = OpenOrDie(dir.path);
  ProfileBatch batch = testing::BatchFromFolded("main;libfoo.so+0x1a2b 1");
  batch.dict.links.push_back({std::string(16, '\x01'), std::string(8, '\x02')});
  batch.samples[0].link = 1;
  REQUIRE(store->Write(batch).ok());
  CHECK(Folded(*store) == std::vector<std::string>{"main;libfoo.so+0x1a2b 1"});
}

namespace {

// Minute `m` of a service whose requests are spans: 6,000 samples, 10 ms
// apart, each in one of 60 traces of the minute (spans of 100 samples, one
// link each), so a trace is a second's blocks, not the store's.
ProfileBatch TracedMinute(int64_t t0, int m) {
  ProfileBatch batch = testing::BatchFromFolded("main;serve;query 6000\n", {.first_time_ns = t0, .process = "svc"});
  ProfileDictionary& d = batch.dict;
  for (int k = 0; k < 60; ++k) {
    std::string trace(16, '\0'), span(8, '\0');
    trace[0] = static_cast<char>(m);
    trace[15] = static_cast<char>(k + 1);
    span[7] = static_cast<char>(k + 1);
    span[0] = static_cast<char>(m);
    d.links.push_back({trace, span});
  }
  for (size_t i = 0; i < batch.samples.size(); ++i) {
    batch.samples[i].time_ns = t0 + m * 60'000'000'000LL + static_cast<int64_t>(i) * 10'000'000;
    batch.samples[i].link = 1 + static_cast<uint32_t>(i / 100);
  }
  return batch;
}

std::string TraceHex(int m, int k) {
  std::string trace(16, '\0');
  trace[0] = static_cast<char>(m);
  trace[15] = static_cast<char>(k + 1);
  return HexId(trace);
}

}  // namespace

TEST_CASE("a trace id finds its samples through the span index, not a scan of the range") {
  TempDir dir;
  const int64_t t0 = 1'760'000'000'000'000'000;
  {
    auto store = OpenOrDie(dir.path);
    for (int m = 0; m < 10; ++m) REQUIRE(store->Write(TracedMinute(t0, m)).ok());
  }
  auto store = OpenOrDie(dir.path);  // as kiln leaves it: flushed, reopened
  Query all;
  REQUIRE((*store->Run(all))->total_events == 60'000);
  const uint64_t full_scan = store->Stats().blocks_read;

  Query q;
  q.keep_samples = true;
  q.filters = {{"trace_id", {TraceHex(7, 12)}}};
  const uint64_t before = store->Stats().blocks_read;
  auto slice = store->Run(q);
  REQUIRE(slice.ok());
  CHECK((*slice)->total_events == 100);
  for (const SliceSample& s : (*slice)->samples) {
    CHECK(SpanOf((*slice)->dict, s.link, 0).trace == TraceHex(7, 12));
    CHECK(s.time_ns >= t0 + 7 * 60'000'000'000LL + 1200 * 10'000'000LL);
    CHECK(s.time_ns < t0 + 7 * 60'000'000'000LL + 1300 * 10'000'000LL);
  }
  const uint64_t read = store->Stats().blocks_read - before;
  MESSAGE("blocks read: ", read, " for one trace, ", full_scan, " for the whole store");
  CHECK(read <= 2);  // its second, which may straddle two 10 s buckets
  CHECK(full_scan >= 60);

  // Two traces, and a span id; a trace of nothing.
  q.filters = {{"trace_id", {TraceHex(7, 12), TraceHex(2, 0)}}};
  CHECK((*store->Run(q))->total_events == 200);
  std::string span(8, '\0');
  span[0] = 3;
  span[7] = 5;
  q.filters = {{"span_id", {HexId(span)}}};
  CHECK((*store->Run(q))->total_events == 100);
  q.filters = {{"trace_id", {TraceHex(11, 1)}}};
  CHECK((*store->Run(q))->total_events == 0);
  // The time range still applies.
  q.filters = {{"trace_id", {TraceHex(7, 12)}}};
  q.from_ns = t0 + 8 * 60'000'000'000LL;
  CHECK((*store->Run(q))->total_events == 0);
}

TEST_CASE("a store from before the span index: its trace filters scan and stay exact; what comes later is indexed") {
  TempDir dir;
  const int64_t t0 = 1'760'000'000'000'000'000;
  {
    auto store = OpenOrDie(dir.path);
    REQUIRE(store->Write(TracedMinute(t0, 0)).ok());
  }
  {  // What an older kiln left: no index, no start mark.
    RawStore raw(dir.path);
    REQUIRE(raw.cf.size() == 7);
    REQUIRE(raw.db->Delete(rocksdb::WriteOptions(), raw.cf[0], "meta:span_index_since").ok());
    REQUIRE(raw.db->DeleteRange(rocksdb::WriteOptions(), raw.cf[6], "", "\xff").ok());
  }
  auto store = OpenOrDie(dir.path);
  REQUIRE(store->Write(TracedMinute(t0, 1)).ok());
  Query q;
  q.filters = {{"trace_id", {TraceHex(0, 3)}}};
  CHECK((*store->Run(q))->total_events == 100);  // by a scan: the index does not know minute 0
  q.filters = {{"trace_id", {TraceHex(1, 3)}}};
  q.from_ns = t0 + 60'000'000'000LL;
  const uint64_t before = store->Stats().blocks_read;
  CHECK((*store->Run(q))->total_events == 100);
  CHECK(store->Stats().blocks_read - before <= 2);  // minute 1 came after: indexed
}

namespace {

constexpr std::string_view kAppHtlhash = "00112233445566778899aabbccddeeff";
constexpr std::string_view kAppBuildId = "beef01";

// Two stacks of native frames in executable "app" (the ids above): an
// address inside the fixture's inline chain under an address the table does
// not cover, and an unnamed address in the table's outer function alone.
ProfileBatch NativeBatch(std::string_view htlhash = kAppHtlhash, std::string_view build_id = kAppBuildId) {
  ProfileBatch b;
  ProfileDictionary& d = b.dict;
  d.executables.push_back({d.AddString("/usr/bin/app"), d.AddString(htlhash), d.AddString(build_id), 0});
  auto native = [&](std::string_view name, uint64_t address) {
    d.frames.push_back({name.empty() ? 0 : d.AddString(name), 0, 1, 0, address, FrameType::kNative, false});
    return static_cast<uint32_t>(d.frames.size() - 1);
  };
  uint32_t in_chain = native("producer_name", 0x135);
  uint32_t uncovered = native("producer_leaf", 0x300);
  uint32_t outer = native("", 0x1ff);
  uint32_t s1 = d.AddStack({in_chain, uncovered});
  uint32_t s2 = d.AddStack({outer});
  b.samples.push_back({.time_ns = 1'000, .stack = s1});
  b.samples.push_back({.time_ns = 2'000, .stack = s2, .value = 2});
  return b;
}

}  // namespace

TEST_CASE("stored symbols name native frames in queries, with inline chains, after restart too") {
  TempDir dir;
  {
    auto store = OpenOrDie(dir.path);
    REQUIRE(store->Write(NativeBatch()).ok());
    CHECK(Folded(*store) == std::vector<std::string>{"app+0x1ff 2", "producer_name;producer_leaf 1"});
    CHECK(store->SymbolsVersion() == 0);

    SymbolStatus status{.source = "debug file /tmp/app.debug"};
    REQUIRE(
        store->PutSymbols(SymbolKeys(kAppHtlhash, kAppBuildId), testing::NestedSymbolTable(), status).ok());
    CHECK(store->SymbolsVersion() == 1);
    // The table's names replace the producer's; the uncovered address keeps
    // its producer name; the inline chain becomes frames root first.
    CHECK(Folded(*store) == std::vector<std::string>{"f 2", "f;g;h;producer_leaf 1"});

    auto slice = store->Run({});
    REQUIRE(slice.ok());
    auto tree = BuildFlameTree(*slice, {.group_by = GroupBy::kNone, .show_inline = false});
    CHECK(FoldedLines(tree, {}) == std::vector<std::string>{"f 2", "f;producer_leaf 1"});
    // Frames of the chain carry file and line from the table.
    bool saw_h = false;
    for (const Frame& f : (*slice)->dict.frames) {
      if ((*slice)->dict.strings[f.function] == "h") {
        saw_h = true;
        CHECK((*slice)->dict.strings[f.file] == "/src/util.h");
        CHECK(f.line == 2);
        CHECK(f.inlined);
        CHECK(f.address == 0x135);
      }
    }
    CHECK(saw_h);

    auto statuses = store->SymbolStatuses();
    REQUIRE(statuses.size() == 2);
    CHECK(statuses[0].first == "gnu:beef01");
    CHECK(statuses[1].first == "htlhash:00112233445566778899aabbccddeeff");
    CHECK(statuses[1].second.state == SymbolStatus::State::kSymbolized);
    CHECK(statuses[1].second.functions == 1);
    CHECK(statuses[1].second.source == "debug file /tmp/app.debug");
  }
  {
    auto store = OpenOrDie(dir.path);
    CHECK(Folded(*store) == std::vector<std::string>{"f 2", "f;g;h;producer_leaf 1"});
    CHECK(store->SymbolStatuses().size() == 2);
    auto executables = store->Executables();
    REQUIRE(executables.size() == 1);
    CHECK(executables[0].file_name == "/usr/bin/app");
    CHECK(executables[0].htlhash == kAppHtlhash);
    CHECK(executables[0].gnu_build_id == kAppBuildId);
  }
  // A read-only reader beside nothing else sees the symbols as well.
  auto reader = OpenOrDie(dir.path, Store::Mode::kReadOnly);
  CHECK(Folded(*reader) == std::vector<std::string>{"f 2", "f;g;h;producer_leaf 1"});
}

TEST_CASE("symbol tables past the cache's budget are dropped and read again when needed") {
  TempDir dir;
  StoreOptions options;
  options.symbol_cache_bytes = 1;  // every table over it: only the newest stays loaded
  auto opened = Store::Open(dir.path, Store::Mode::kReadWrite, options);
  REQUIRE(opened.ok());
  Store& store = **opened;
  // Three builds of one program (a developer rebuilding what they profile).
  const std::vector<std::pair<std::string, std::string>> builds = {
      {"00112233445566778899aabbccddeef1", "beef11"},
      {"00112233445566778899aabbccddeef2", "beef12"},
      {"00112233445566778899aabbccddeef3", "beef13"}};
  for (const auto& [htlhash, build_id] : builds) {
    REQUIRE(store.Write(NativeBatch(htlhash, build_id)).ok());
    REQUIRE(store.PutSymbols(SymbolKeys(htlhash, build_id), testing::NestedSymbolTable(), {}).ok());
  }
  // Each query needs all three: each is named every time, from the cache or
  // read again.
  for (int round = 0; round < 3; ++round) {
    CHECK(Folded(store) == std::vector<std::string>{"f 6", "f;g;h;producer_leaf 3"});
  }
}

TEST_CASE("names kept from one query to the next: a status leaves them, a new or replaced table renames") {
  TempDir dir;
  auto store = OpenOrDie(dir.path);
  const std::pair<std::string, std::string> first = {"00112233445566778899aabbccddeef1", "beef11"};
  const std::pair<std::string, std::string> second = {"00112233445566778899aabbccddeef2", "beef12"};
  REQUIRE(store->Write(NativeBatch(first.first, first.second)).ok());
  REQUIRE(store->Write(NativeBatch(second.first, second.second)).ok());
  REQUIRE(store->PutSymbols(SymbolKeys(first.first, first.second), testing::NestedSymbolTable(), {}).ok());
  // The second build has no table yet: its frames stay raw, and that is
  // what the query keeps for them, twice.
  const std::vector<std::string> half = {"app+0x1ff 2", "f 2", "f;g;h;producer_leaf 1", "producer_name;producer_leaf 1"};
  CHECK(Folded(*store) == half);
  CHECK(Folded(*store) == half);
  // "No symbols" for the second build: the first's names stand, the
  // second's frames stay raw.
  REQUIRE(store
              ->PutSymbolStatus(SymbolKeys(second.first, second.second),
                                {.state = SymbolStatus::State::kNoSymbols, .detail = "no debug file"})
              .ok());
  CHECK(Folded(*store) == half);
  // The first build's table replaced by one that names its code "renamed"
  // (a user adding a better debug file): every name it gave changes.
  SymbolTableBuilder other;
  const uint32_t renamed = other.AddScope(other.Intern("renamed"), SymbolTableBuilder::kNoScope);
  other.AddRange(renamed, 0x100, 0x400);
  REQUIRE(store->PutSymbols(SymbolKeys(first.first, first.second), std::move(other).Build(), {}).ok());
  CHECK(Folded(*store) ==
        std::vector<std::string>{"app+0x1ff 2", "producer_name;producer_leaf 1", "renamed 2", "renamed;renamed 1"});
  // The second build's table arrives: the next query names its frames, and
  // the first's keep the names the replacement gave.
  REQUIRE(store->PutSymbols(SymbolKeys(second.first, second.second), testing::NestedSymbolTable(), {}).ok());
  CHECK(Folded(*store) == std::vector<std::string>{"f 2", "f;g;h;producer_leaf 1", "renamed 2", "renamed;renamed 1"});
}

TEST_CASE("a table stored under a build id applies to executables that only carry the build id") {
  TempDir dir;
  auto store = OpenOrDie(dir.path);
  REQUIRE(store->Write(NativeBatch("", kAppBuildId)).ok());
  REQUIRE(store
              ->PutSymbols(SymbolKeys("ffffffffffffffffffffffffffffffff", kAppBuildId),
                           testing::NestedSymbolTable(), {})
              .ok());
  CHECK(Folded(*store) == std::vector<std::string>{"f 2", "f;g;h;producer_leaf 1"});
}

TEST_CASE("symbol statuses without tables, and dropping a table") {
  TempDir dir;
  auto store = OpenOrDie(dir.path);
  REQUIRE(store->Write(NativeBatch()).ok());
  auto keys = SymbolKeys(kAppHtlhash, kAppBuildId);
  SymbolStatus none{.state = SymbolStatus::State::kNoSymbols,
                    .source = "local files, debuginfod",
                    .detail = "no debug file with build id beef01"};
  REQUIRE(store->PutSymbolStatus(keys, none).ok());
  CHECK(store->SymbolStatuses()[0].second == none);
  CHECK(Folded(*store) == std::vector<std::string>{"app+0x1ff 2", "producer_name;producer_leaf 1"});

  REQUIRE(store->PutSymbols(keys, testing::NestedSymbolTable(), {.source = "added: app.debug"}).ok());
  // A later failed attempt keeps the table that works, noting the failure.
  SymbolStatus failed{.state = SymbolStatus::State::kFailed, .detail = "debuginfod: timeout"};
  REQUIRE(store->PutSymbolStatus(keys, failed).ok());
  CHECK(store->SymbolStatuses()[0].second.state == SymbolStatus::State::kSymbolized);
  CHECK(store->SymbolStatuses()[0].second.detail == "debuginfod: timeout");
  CHECK(Folded(*store) == std::vector<std::string>{"f 2", "f;g;h;producer_leaf 1"});

  REQUIRE(store->PutSymbolStatus(keys, failed, /*drop_table=*/true).ok());
  CHECK(store->SymbolStatuses()[0].second == failed);
  CHECK(Folded(*store) == std::vector<std::string>{"app+0x1ff 2", "producer_name;producer_leaf 1"});
  CHECK(store->SymbolsVersion() == 4);  // every change bumps it
}

TEST_CASE("a store written before symbols existed opens read-only and read-write") {
  TempDir dir;
  {
    // The layout of a store from before the "symbols" column family.
    rocksdb::DB* raw = nullptr;
    rocksdb::DBOptions options;
    options.create_if_missing = true;
    options.create_missing_column_families = true;
    std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {
        {rocksdb::kDefaultColumnFamilyName, {}}, {"blocks", {}}, {"log", {}}};
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    REQUIRE(rocksdb::DB::Open(options, dir.path, cfs, &handles, &raw).ok());
    REQUIRE(raw->Put(rocksdb::WriteOptions(), handles[0], "meta:schema", std::string("\0\0\0\x02", 4)).ok());
    for (auto* h : handles) raw->DestroyColumnFamilyHandle(h);
    delete raw;
  }
  {
    auto reader = OpenOrDie(dir.path, Store::Mode::kReadOnly);
    CHECK(reader->SymbolStatuses().empty());
    CHECK(Folded(*reader).empty());
  }
  auto store = OpenOrDie(dir.path);
  REQUIRE(store->Write(NativeBatch()).ok());
  REQUIRE(store->PutSymbols(SymbolKeys(kAppHtlhash, ""), testing::NestedSymbolTable(), {}).ok());
  CHECK(Folded(*store) == std::vector<std::string>{"f 2", "f;g;h;producer_leaf 1"});
}

TEST_CASE("a schema 1 store (four fixed kinds) is upgraded in place and keeps every sample") {
  TempDir dir;
  const int64_t t0 = 1'700'000'000'000'000'000;
  {
    auto store = OpenOrDie(dir.path);
    REQUIRE(store->Write(testing::BatchFromFolded("cpu;a 3", {.first_time_ns = t0})).ok());
    REQUIRE(store
                ->Write(testing::BatchFromFolded(
                    "wait 2", {.sample_type = {OffCpuTime()}, .first_time_ns = t0 + 20'000'000'000, .value = 7}))
                .ok());
    REQUIRE(store->Flush().ok());
  }
  {
    // Rewrite it as schema 1 wrote it: block keys led by a kind byte (0
    // on-CPU, 1 off-CPU), four fixed counters, no sample type entries.
    RawStore raw_store(dir.path);
    rocksdb::DB* raw = raw_store.db;
    const std::vector<rocksdb::ColumnFamilyHandle*>& handles = raw_store.cf;
    rocksdb::WriteBatch wb;
    std::unique_ptr<rocksdb::Iterator> it(raw->NewIterator(rocksdb::ReadOptions(), handles[1]));
    int blocks = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      std::string key = it->key().ToString();
      REQUIRE(key.size() == 20);
      std::string old(1, key[3]);  // type ids 0 and 1 are kinds 0 and 1 here
      old += key.substr(4);
      wb.Put(handles[1], old, it->value());
      wb.Delete(handles[1], key);
      ++blocks;
    }
    CHECK(blocks == 2);
    wb.Delete(handles[0], std::string("y\0\0\0\x01", 5));
    std::string stats;
    for (uint64_t v : {uint64_t{3}, uint64_t{2}, uint64_t{0}, uint64_t{0}, uint64_t{2}}) PutVarint(&stats, v);
    PutVarint(&stats, ZigZag(t0));
    PutVarint(&stats, ZigZag(t0 + 20'001'000'000));
    PutVarint(&stats, 3);
    wb.Put(handles[0], "meta:stats", stats);
    wb.Put(handles[0], "meta:schema", std::string("\0\0\0\x01", 4));
    REQUIRE(raw->Write(rocksdb::WriteOptions(), &wb).ok());
    it.reset();
  }
  {
    // Read-only cannot upgrade, and says how to.
    auto reader = Store::Open(dir.path, Store::Mode::kReadOnly);
    REQUIRE_FALSE(reader.ok());
    CHECK(reader.status().message().find("schema 1") != std::string_view::npos);
  }
  auto store = OpenOrDie(dir.path);
  CHECK(Folded(*store) == std::vector<std::string>{"cpu;a 3"});
  CHECK(Folded(*store, {.sample_type = OffCpuTime()}) == std::vector<std::string>{"wait 14"});
  StoreStats st = store->Stats();
  CHECK(st.samples == 5);
  REQUIRE(st.sample_types.size() == 2);
  CHECK(st.sample_types[0].info.type == OnCpuSamples());
  CHECK(st.sample_types[0].samples == 3);
  CHECK(st.sample_types[1].info.type == OffCpuTime());
  CHECK(st.sample_types[1].samples == 2);
  // New writes land beside the upgraded blocks.
  REQUIRE(store->Write(testing::BatchFromFolded("cpu;b 1", {.first_time_ns = t0 + 5})).ok());
  CHECK(Folded(*store) == std::vector<std::string>{"cpu;a 3", "cpu;b 1"});
}

TEST_CASE("sample types of any name are kept apart, with their periods") {
  TempDir dir;
  auto store = OpenOrDie(dir.path);
  SampleTypeInfo heap{{"alloc_space", "bytes"}, "space", "bytes", 524288};
  REQUIRE(store->Write(testing::BatchFromFolded("main;malloc 2", {.sample_type = heap, .value = 4096})).ok());
  REQUIRE(store->Write(testing::BatchFromFolded("main;work 5")).ok());
  REQUIRE(store->Write(testing::BatchFromFolded("main;custom 1", {.sample_type = {{"gc_pause", "ms"}}})).ok());
  CHECK(Folded(*store, {.sample_type = heap.type}) == std::vector<std::string>{"main;malloc 8192"});
  CHECK(Folded(*store) == std::vector<std::string>{"main;work 5"});
  CHECK(Folded(*store, {.sample_type = {"gc_pause", "ms"}}) == std::vector<std::string>{"main;custom 1"});
  CHECK(Folded(*store, {.sample_type = {"alloc_space", "kilobytes"}}).empty());  // same name, other unit
  auto slice = store->Run({.sample_type = heap.type});
  REQUIRE(slice.ok());
  CHECK((*slice)->sample_type == heap);
  store.reset();
  store = OpenOrDie(dir.path, Store::Mode::kReadOnly);
  StoreStats st = store->Stats();
  REQUIRE(st.sample_types.size() == 3);
  CHECK(st.sample_types[0].info.type == OnCpuSamples());
  CHECK(st.sample_types[1].info == heap);  // the period survives reopening
  CHECK(st.sample_types[2].info.type == SampleType{"gc_pause", "ms"});
}

namespace {

// The store answers `q` (slice and timeline) as the batch's samples in
// memory do: one query implementation.
void CheckSameAnswers(Store& store, const ProfileBatch& batch, const Query& q, int buckets) {
  auto stored = store.Run(q);
  REQUIRE(stored.ok());
  auto memory = SliceFromBatch(batch, q);
  CHECK(FoldedLines(BuildFlameTree(*stored, {.group_by = GroupBy::kThread}), {}) ==
        FoldedLines(BuildFlameTree(memory, {.group_by = GroupBy::kThread}), {}));
  CHECK((*stored)->total_weight == memory->total_weight);
  CHECK((*stored)->total_events == memory->total_events);
  CHECK((*stored)->first_sample_ns == memory->first_sample_ns);
  CHECK((*stored)->last_sample_ns == memory->last_sample_ns);
  CHECK((*stored)->sample_type.type == memory->sample_type.type);
  auto timeline = store.RunTimeline(q, buckets);
  REQUIRE(timeline.ok());
  Timeline in_memory = TimelineFromBatch(batch, q, buckets);
  CHECK(timeline->start_ns == in_memory.start_ns);
  CHECK(timeline->bucket_ns == in_memory.bucket_ns);
  CHECK(timeline->weights == in_memory.weights);
  CHECK(timeline->events == in_memory.events);
}

}  // namespace

TEST_CASE("a long range is scanned in time shards side by side and gives what one pass gives") {
  // 20 minutes of samples every 3 s (120 of the store's 10 s buckets, so a
  // scan is split over the cores), with stacks and processes that change
  // over time: each shard sees different data.
  const char* stacks[] = {"main;a 2", "main;b;c 1", "main;b;d 3", "io;read 1", "main;a;e 2"};
  const int64_t t0 = 1'700'000'000'000'000'000;
  ProfileBatch batch;
  for (int i = 0; i < 400; ++i) {
    testing::AppendBatch(&batch, testing::BatchFromFolded(stacks[(i / 7) % 5],
                                                          {.first_time_ns = t0 + i * 3'000'000'000LL,
                                                           .process = i < 250 ? "app" : "db",
                                                           .thread = i % 2 ? "t1" : "t2"}));
  }
  TempDir dir;
  auto store = OpenOrDie(dir.path);
  REQUIRE(store->Write(batch).ok());
  const std::vector<Query> queries = {
      {},
      {.from_ns = t0 + 100'000'000'000, .to_ns = t0 + 900'000'000'000},
      {.filters = {{"process.executable.name", {"db"}}}},
      {.to_ns = t0 + 610'000'000'000},
  };
  for (size_t i = 0; i < queries.size(); ++i) {
    CAPTURE(i);
    auto stored = store->Run(queries[i]);
    REQUIRE(stored.ok());
    auto memory = SliceFromBatch(batch, queries[i]);
    CHECK((*stored)->total_events > 0);
    CheckSameAnswers(*store, batch, queries[i], 37);
    // The same distinct (stack, thread) entries with the same weights (the
    // batch repeats its stacks per append: merged here).
    auto entries = [](const ProfileSlice& slice) {
      std::vector<std::pair<std::string, int64_t>> out;
      for (const StackWeight& w : slice.weights) {
        std::string key = ThreadLabel(slice.dict, w.attribute_set);
        for (uint32_t f : slice.dict.Stack(w.stack)) key += ";" + slice.dict.strings[slice.dict.frames[f].function];
        auto it = std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.first == key; });
        if (it == out.end()) out.emplace_back(key, w.weight);
        else it->second += w.weight;
      }
      std::sort(out.begin(), out.end());
      return out;
    };
    CHECK(entries(**stored) == entries(*memory));
    CHECK((*stored)->samples.empty());  // listed only when asked
  }
  // Asked for, the samples come from every shard, each pointing at its
  // merged entry.
  auto listed = store->Run({.keep_samples = true});
  REQUIRE(listed.ok());
  const ProfileSlice& slice = **listed;
  REQUIRE(slice.samples.size() == slice.total_events);
  std::vector<int64_t> sums(slice.weights.size(), 0);
  std::set<int64_t> times;
  for (const SliceSample& s : slice.samples) {
    REQUIRE(s.entry < slice.weights.size());
    sums[s.entry] += s.value;
    times.insert(s.time_ns);
  }
  for (size_t e = 0; e < slice.weights.size(); ++e) CHECK(sums[e] == slice.weights[e].weight);
  CHECK(*times.begin() == slice.first_sample_ns);
  CHECK(*times.rbegin() == slice.last_sample_ns);
  CHECK(times.size() == batch.samples.size());  // every sample has its own time here
}

}  // namespace kiln::storage

namespace kiln::storage {

TEST_CASE("a store answers every query as the same samples in memory do (one query implementation)") {
  // Two processes, two sample types, samples 1 ms apart.
  ProfileBatch batch = testing::BatchFromFolded("main;a 5\nmain;b;c 3", {.process = "app", .thread = "t1"});
  testing::AppendBatch(&batch, testing::BatchFromFolded("main;d 4", {.first_time_ns = 1'700'000'000'004'000'000,
                                                                     .process = "db", .thread = "t2"}));
  testing::AppendBatch(&batch, testing::BatchFromFolded("main;a 2", {.sample_type = {OffCpuTime(), "", "", 0},
                                                                     .first_time_ns = 1'700'000'000'001'500'000,
                                                                     .process = "app", .value = 1000}));
  TempDir dir;
  auto store = OpenOrDie(dir.path);
  REQUIRE(store->Write(batch).ok());
  const int64_t t0 = 1'700'000'000'000'000'000;
  std::vector<Query> queries = {
      {},
      {.from_ns = t0 + 2'000'000, .to_ns = t0 + 6'000'000},
      {.sample_type = OffCpuTime()},
      {.filters = {{"process.executable.name", {"db"}}}},
      {.filters = {{"process.executable.name", {"app", "db"}}, {"thread.name", {"t1"}}}},
      {.from_ns = t0 + 3'000'000},
      {.sample_type = {"nothing", "count"}},
  };
  for (size_t i = 0; i < queries.size(); ++i) {
    CAPTURE(i);
    CheckSameAnswers(*store, batch, queries[i], 7);
  }
}

}  // namespace kiln::storage

namespace kiln::storage {
namespace {

// Bytes in the store's write-ahead log files (NNNNNN.log).
uint64_t WalBytes(const std::string& dir) {
  uint64_t bytes = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".log") bytes += e.file_size();
  }
  return bytes;
}

std::string ManyStacks(int n) {
  std::string folded;
  for (int i = 0; i < n; ++i)
    folded += "main;work" + std::to_string(i) + ";leaf " + std::to_string(1 + i % 7) + "\n";
  return folded;
}

}  // namespace

TEST_CASE("a closed store leaves its data in tables, not in the write-ahead log, and reopens whole") {
  TempDir dir;
  {
    auto store = OpenOrDie(dir.path);
    REQUIRE(store->Write(testing::BatchFromFolded(ManyStacks(2000), {.process = "app"})).ok());
    REQUIRE(store->AppendLog(LogLevel::kInfo, "a line in a family that rarely writes").ok());
    CHECK(WalBytes(dir.path) > 10'000);  // acknowledged: in the WAL until flushed
  }
  CHECK(WalBytes(dir.path) == 0);
  auto store = OpenOrDie(dir.path);
  uint64_t samples = 0;
  for (int i = 0; i < 2000; ++i) samples += 1 + i % 7;  // ManyStacks' weights
  CHECK(store->Stats().samples == samples);
  CHECK(Folded(*store).size() == 2000);
  CHECK(store->ReadLog(10).front().message == "a line in a family that rarely writes");
}

TEST_CASE("a running store flushes its write-ahead log once ingest pauses") {
  TempDir dir;
  auto opened = Store::Open(
      dir.path, Store::Mode::kReadWrite,
      {.settle_after_idle = std::chrono::milliseconds(100), .settle_max_age = std::chrono::hours(1)});
  REQUIRE(opened.ok());
  auto store = std::move(*opened);
  REQUIRE(store->Write(testing::BatchFromFolded(ManyStacks(2000), {.process = "app"})).ok());
  REQUIRE(WalBytes(dir.path) > 10'000);
  uint64_t wal = 0;
  for (int i = 0; i < 200; ++i) {
    wal = WalBytes(dir.path);
    if (wal == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  CHECK(wal == 0);
  CHECK(Folded(*store).size() == 2000);  // still all there, now from tables
}

TEST_CASE("an agent that never pauses still gets its data flushed at the age limit") {
  TempDir dir;
  auto opened = Store::Open(
      dir.path, Store::Mode::kReadWrite,
      {.settle_after_idle = std::chrono::hours(1), .settle_max_age = std::chrono::milliseconds(300)});
  REQUIRE(opened.ok());
  auto store = std::move(*opened);
  uint64_t wal = 0, peak = 0;
  bool flushed = false;
  // Writes every 20 ms for up to 3 s: never idle; the WAL must still shrink.
  for (int i = 0; i < 150 && !flushed; ++i) {
    REQUIRE(
        store->Write(testing::BatchFromFolded("main;w" + std::to_string(i) + " 1", {.process = "app"})).ok());
    wal = WalBytes(dir.path);
    peak = std::max(peak, wal);
    flushed = peak > 0 && wal < peak / 2;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK_MESSAGE(flushed, "WAL " << wal << " bytes, peak " << peak);
}

}  // namespace kiln::storage

namespace kiln::storage {

TEST_CASE("retention by age deletes whole old buckets, keeps the counters true, and bumps the data version") {
  TempDir dir;
  constexpr int64_t kMinute = 60'000'000'000;
  const int64_t now = 1'700'000'000'000'000'000 + 60 * kMinute;
  auto opened = Store::Open(
      dir.path, Store::Mode::kReadWrite,
      {.retention_age = std::chrono::minutes(30), .retention_interval = std::chrono::milliseconds(0)});
  REQUIRE(opened.ok());
  auto store = std::move(*opened);
  // An hour ago (gone), 40 minutes ago (gone), 10 minutes ago (kept).
  REQUIRE(store
              ->Write(testing::BatchFromFolded("main;old 5",
                                               {.first_time_ns = now - 60 * kMinute, .process = "app"}))
              .ok());
  REQUIRE(store
              ->Write(testing::BatchFromFolded("main;older 3",
                                               {.first_time_ns = now - 40 * kMinute, .process = "app"}))
              .ok());
  REQUIRE(store
              ->Write(testing::BatchFromFolded("main;new 2",
                                               {.first_time_ns = now - 10 * kMinute, .process = "app"}))
              .ok());
  const uint64_t version = store->Stats().data_version;

  absl::StatusOr<RetentionReport> r = store->ApplyRetention(now);
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  CHECK(r->reason == "age");
  CHECK(r->samples_deleted == 8);
  CHECK(r->blocks_deleted == 2);
  CHECK(Folded(*store) == std::vector<std::string>{"main;new 2"});
  StoreStats st = store->Stats();
  CHECK(st.samples == 2);
  CHECK(st.first_sample_ns == now - 10 * kMinute);
  CHECK(st.data_version > version);
  CHECK(st.samples_deleted_by_retention == 8);
  Timeline t = *store->RunTimeline({}, 10);
  CHECK(t.start_ns == now - 10 * kMinute);  // the timeline starts where the data now does

  // Nothing more is due: no deletion, no version bump.
  r = store->ApplyRetention(now);
  CHECK(r->reason.empty());
  CHECK(r->samples_deleted == 0);
  CHECK(store->Stats().data_version == st.data_version);
  CHECK(store->ReadLog(10).front().message.find("retention (age limit): deleted 8 samples in 2 blocks") == 0);

  // The counters are stored: a reopened store agrees.
  store.reset();
  auto again = OpenOrDie(dir.path);
  CHECK(again->Stats().samples == 2);
  CHECK(again->Stats().first_sample_ns == now - 10 * kMinute);
  // What retention deleted is a named data-loss count, kept across restarts.
  CHECK(again->DataLossTotals()[static_cast<size_t>(DataLoss::kRetentionDeleted)] == 8);
  DataLossCounts more{};
  more[static_cast<size_t>(DataLoss::kStringTruncated)] = 3;
  REQUIRE(again->AddDataLoss(more).ok());
  REQUIRE(again->AddDataLoss(more).ok());
  again.reset();
  auto read_only = OpenOrDie(dir.path, Store::Mode::kReadOnly);
  CHECK(read_only->DataLossTotals()[static_cast<size_t>(DataLoss::kStringTruncated)] == 6);
  CHECK(read_only->DataLossTotals()[static_cast<size_t>(DataLoss::kRetentionDeleted)] == 8);
}

TEST_CASE("retention by size deletes the oldest data until the store is under its limit") {
  TempDir dir;
  constexpr int64_t kMinute = 60'000'000'000;
  const int64_t t0 = 1'700'000'000'000'000'000;
  std::mt19937_64 rng(7);
  {
    auto store = OpenOrDie(dir.path);
    // 60 minutes, one batch a minute.
    for (int m = 0; m < 60; ++m) REQUIRE(store->Write(MinuteBatch(t0, m, &rng)).ok());
    REQUIRE(store->Compact().ok());
  }
  uint64_t full = 0;
  {
    auto store = OpenOrDie(dir.path);
    for (const auto& e : std::filesystem::directory_iterator(dir.path)) {
      if (e.path().extension() == ".sst") full += e.file_size();
    }
  }
  auto opened =
      Store::Open(dir.path, Store::Mode::kReadWrite,
                  {.retention_size_bytes = full / 2, .retention_interval = std::chrono::milliseconds(0)});
  REQUIRE(opened.ok());
  auto store = std::move(*opened);
  const uint64_t before = store->Stats().samples;
  RetentionReport total;
  for (int pass = 0; pass < 5; ++pass) {
    absl::StatusOr<RetentionReport> r = store->ApplyRetention(t0 + 61 * kMinute);
    REQUIRE(r.ok());
    if (r->reason.empty()) break;
    CHECK(r->reason == "size");
    total.samples_deleted += r->samples_deleted;
  }
  const StoreStats st = store->Stats();
  CHECK(st.samples == before - total.samples_deleted);
  CHECK(total.samples_deleted > before / 3);  // about half the data went
  CHECK(total.samples_deleted < before * 3 / 4);
  CHECK(st.first_sample_ns > t0 + 20 * kMinute);  // the oldest went first
  CHECK(st.last_sample_ns >= t0 + 59 * kMinute);  // the newest stayed
  uint64_t sst = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path)) {
    if (e.path().extension() == ".sst") sst += e.file_size();
  }
  CHECK(sst <= full / 2);
}

}  // namespace kiln::storage

namespace kiln::storage {

TEST_CASE(
    "attribute caps: a key's new values past its cap become 'other', keys past theirs are left out, "
    "counted") {
  TempDir dir;
  auto opened = Store::Open(dir.path, Store::Mode::kReadWrite,
                            {.max_values_per_attribute_key = 3, .max_attribute_keys = 2});
  REQUIRE(opened.ok());
  auto store = std::move(*opened);
  // Keys: process.executable.name and thread.name (the fixture's two).
  for (int t = 0; t < 5; ++t) {
    REQUIRE(store
                ->Write(testing::BatchFromFolded("main;w 1",
                                                 {.process = "app", .thread = "t" + std::to_string(t)}))
                .ok());
  }
  CHECK(store->AttributeValues("thread.name", 100) == std::vector<std::string>{"other", "t0", "t1", "t2"});
  CHECK(store->DataLossTotals()[static_cast<size_t>(DataLoss::kAttributeCapped)] == 2);
  CHECK(store->Stats().samples == 5);  // the samples are all kept

  // A third key is left out; its samples stay, without it.
  ProfileBatch batch = testing::BatchFromFolded("main;w 1", {.process = "app", .thread = "t0"});
  batch.dict.AddAttributeSet({{batch.dict.AddString("container.id"), batch.dict.AddString("c1")}});
  batch.samples[0].attribute_set = static_cast<uint32_t>(batch.dict.AttributeSetCount() - 1);
  REQUIRE(store->Write(batch).ok());
  CHECK(store->AttributeKeys() == std::vector<std::string>{"process.executable.name", "thread.name"});
  CHECK(store->DataLossTotals()[static_cast<size_t>(DataLoss::kAttributeCapped)] == 3);

  // The caps hold across a restart (the counts are rebuilt from the dictionary).
  store.reset();
  auto again = Store::Open(dir.path, Store::Mode::kReadWrite,
                           {.max_values_per_attribute_key = 3, .max_attribute_keys = 2});
  REQUIRE(again.ok());
  REQUIRE((*again)->Write(testing::BatchFromFolded("main;w 1", {.process = "app", .thread = "t9"})).ok());
  CHECK((*again)->AttributeValues("thread.name", 100) == std::vector<std::string>{"other", "t0", "t1", "t2"});
}

}  // namespace kiln::storage

namespace kiln::storage {

TEST_CASE("attribute sets past their cap keep their keys with every value 'other', counted") {
  TempDir dir;
  StoreOptions o;
  o.max_attribute_sets = 3;
  auto opened = Store::Open(dir.path, Store::Mode::kReadWrite, o);
  REQUIRE(opened.ok());
  Store& store = **opened;
  // Each thread of each process is a set: app/t0..t2 fill the cap.
  for (int t = 0; t < 5; ++t) {
    REQUIRE(store
                .Write(testing::BatchFromFolded("main;w 1",
                                                {.process = "app", .thread = "t" + std::to_string(t)}))
                .ok());
  }
  // A known set is still stored as it is.
  REQUIRE(store.Write(testing::BatchFromFolded("main;w 1", {.process = "app", .thread = "t1"})).ok());
  CHECK(store.Stats().attribute_sets == 4);  // three, plus {other, other}
  CHECK(store.DataLossTotals()[static_cast<size_t>(DataLoss::kAttributeCapped)] == 2);
  CHECK(store.Stats().samples == 6);  // no sample is dropped
  CHECK(Folded(store, {}, GroupBy::kThread) == std::vector<std::string>{"app;t0;main;w 1", "app;t1;main;w 2",
                                                                        "app;t2;main;w 1",
                                                                        "other;other;main;w 2"});
}

TEST_CASE("retention passes during ingest delete only what is out of the window; the counters stay true") {
  TempDir dir;
  StoreOptions o;
  o.retention_age = std::chrono::hours(1);
  o.retention_interval = std::chrono::milliseconds(0);  // passes below, with a fixed clock
  auto opened = Store::Open(dir.path, Store::Mode::kReadWrite, o);
  REQUIRE(opened.ok());
  Store& store = **opened;
  const int64_t now = 1'700'000'000'000'000'000;
  const int kWrites = 100;
  // Each write: 20 samples from two hours ago (already too old when they
  // arrive: stored, and gone at the next pass) and 20 recent ones.
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int64_t i = 0; i < kWrites; ++i) {
      ProfileBatch b = testing::BatchFromFolded("old;gone 20",
                                                {.first_time_ns = now - 7'200'000'000'000 + i * 100'000'000});
      testing::AppendBatch(&b, testing::BatchFromFolded(
                                   "new;kept 20", {.first_time_ns = now - 60'000'000'000 + i * 100'000'000}));
      REQUIRE(store.Write(b).ok());
      std::this_thread::sleep_for(std::chrono::milliseconds(3));  // as requests arrive, not all at once
    }
    done = true;
  });
  uint64_t passes = 0, deleted = 0, recounted = 0;
  while (!done) {
    auto r = store.ApplyRetention(now);
    REQUIRE(r.ok());
    ++passes;
    deleted += r->samples_deleted;
    recounted += r->recounted;  // an old write came while it counted without the lock
    // A pass that deletes also compacts what it deleted: a few dozen
    // passes, not hundreds (kiln makes one a minute).
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  writer.join();
  auto last = store.ApplyRetention(now);
  REQUIRE(last.ok());
  deleted += last->samples_deleted;
  MESSAGE("retention during ingest: " << passes + 1 << " passes deleted " << deleted << " samples; "
                                      << recounted << " counted again under the write lock");
  CHECK(passes >= 5);  // the passes really ran between the writes
  CHECK(deleted == 20u * kWrites);
  CHECK(Folded(store) == std::vector<std::string>{"new;kept " + std::to_string(20 * kWrites)});
  const StoreStats st = store.Stats();
  CHECK(st.samples == 20u * kWrites);
  CHECK(st.samples_deleted_by_retention == 20u * kWrites);
  CHECK(st.first_sample_ns == now - 60'000'000'000);
}

}  // namespace kiln::storage

namespace kiln::storage {

TEST_CASE("retention limits changed while the store is open apply from then on") {
  TempDir dir;
  StoreOptions o;
  o.retention_interval = std::chrono::milliseconds(0);  // passes below, with a fixed clock
  auto opened = Store::Open(dir.path, Store::Mode::kReadWrite, o);
  REQUIRE(opened.ok());
  Store& store = **opened;
  const int64_t now = 1'700'000'000'000'000'000;
  REQUIRE(store.Write(testing::BatchFromFolded("old 3", {.first_time_ns = now - 7'200'000'000'000})).ok());
  REQUIRE(store.Write(testing::BatchFromFolded("new 2", {.first_time_ns = now - 60'000'000'000})).ok());
  auto none = store.ApplyRetention(now);
  REQUIRE(none.ok());
  CHECK(none->samples_deleted == 0);  // no limits yet

  store.SetRetention(std::chrono::hours(1), 0);
  CHECK(store.Stats().retention_age_ns == 3'600'000'000'000);
  auto r = store.ApplyRetention(now);
  REQUIRE(r.ok());
  CHECK(r->reason == "age");
  CHECK(Folded(store) == std::vector<std::string>{"new 2"});

  store.SetRetention(std::chrono::nanoseconds(0), 0);
  CHECK(store.Stats().retention_age_ns == 0);
  CHECK(store.Stats().retention_size_bytes == 0);
}

}  // namespace kiln::storage

namespace kiln::storage {
namespace {

// `minutes` minutes of random samples over 20 stacks from `t0`, a batch a
// minute (the blocks, not the dictionary, are the size).
void WriteMinutes(Store* store, int64_t t0, int minutes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (int m = 0; m < minutes; ++m) REQUIRE(store->Write(MinuteBatch(t0, m, &rng)).ok());
}

StoreOptions SizeLimited(uint64_t bytes) {
  return {.retention_size_bytes = bytes, .retention_interval = std::chrono::milliseconds(0)};
}

}  // namespace

TEST_CASE("RocksDB's LOG stays within a 64th of the size limit while the store runs, one older generation kept") {
  // Every flush and compaction writes to LOG; bounded only at open it grew
  // 2 MiB a minute under churn, which the size limit counts and retention
  // cannot delete.
  TempDir dir;
  constexpr uint64_t kLimit = 16 << 20;  // 256 KiB a generation
  auto opened = Store::Open(dir.path, Store::Mode::kReadWrite, SizeLimited(kLimit));
  REQUIRE(opened.ok());
  auto store = std::move(*opened);
  const int64_t t0 = 1'700'000'000'000'000'000;
  namespace fs = std::filesystem;
  uint64_t written = 0;  // LOG bytes seen grow, across rotations
  uint64_t last = 0;
  for (int i = 0; i < 400 && written < (1 << 20); ++i) {
    REQUIRE(store->Write(testing::BatchFromFolded("main;f" + std::to_string(i) + " 1\n",
                                                  {.first_time_ns = t0 + i * 1'000'000'000LL}))
                .ok());
    REQUIRE(store->Flush().ok());
    std::error_code ec;
    const uint64_t now = fs::file_size(fs::path(dir.path) / "LOG", ec);
    written += now >= last ? now - last : now;
    last = now;
    CHECK(now <= kLimit / 64 + 64 * 1024);  // a generation, and the record that passed it
  }
  REQUIRE(written >= (1 << 20));  // RocksDB wrote four generations' worth
  CHECK(fs::exists(fs::path(dir.path) / "LOG.old"));
  CHECK(fs::file_size(fs::path(dir.path) / "LOG.old") <= kLimit / 64 + 64 * 1024);
}

TEST_CASE("retention by size deletes no more than it must when the data has gaps (two runs a day apart)") {
  TempDir dir;
  constexpr int64_t kDay = 86'400'000'000'000;
  const int64_t t0 = 1'700'000'000'000'000'000;
  {
    auto store = OpenOrDie(dir.path);
    WriteMinutes(store.get(), t0, 30, 1);
    WriteMinutes(store.get(), t0 + kDay, 30, 2);
    REQUIRE(store->Compact().ok());
  }
  const uint64_t full = DirectoryBytes(dir.path);
  const uint64_t limit = full * 4 / 5;
  auto opened = Store::Open(dir.path, Store::Mode::kReadWrite, SizeLimited(limit));
  REQUIRE(opened.ok());
  auto store = std::move(*opened);
  const uint64_t before = store->Stats().samples;
  absl::StatusOr<RetentionReport> r = store->ApplyRetention(t0 + 2 * kDay);
  REQUIRE(r.ok());
  CHECK(r->reason == "size");
  // A fifth over the limit, to 90 % of it: about 28 % of the samples go.
  // Spreading the cut evenly over the 24-hour span took the whole first
  // run (half of them).
  CHECK(r->samples_deleted > before / 10);
  CHECK(r->samples_deleted < before * 2 / 5);
  CHECK(store->Stats().first_sample_ns < t0 + kDay);  // part of the first run stays
  CHECK(DirectoryBytes(dir.path) <= limit);
  CHECK(store->Stats().retention_problem.empty());
}

TEST_CASE("retention after a crash counts the write-ahead log and keeps as much as the limit allows") {
  TempDir dir;
  const int64_t t0 = 1'700'000'000'000'000'000;
  // A kiln killed while agents wrote: its samples are only in the WAL.
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    auto store = Store::Open(dir.path, Store::Mode::kReadWrite);
    if (!store.ok()) _exit(1);
    std::mt19937_64 rng(3);
    for (int m = 0; m < 40; ++m) {
      if (!(*store)->Write(MinuteBatch(t0, m, &rng)).ok()) _exit(2);
    }
    _exit(0);  // no destructor: nothing flushed, as after kill -9
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  uint64_t settled = 0;
  {
    // The same data settled, to size the limit: half of it.
    TempDir copy;
    auto store = OpenOrDie(copy.path);
    WriteMinutes(store.get(), t0, 40, 3);
    REQUIRE(store->Compact().ok());
    store.reset();
    settled = DirectoryBytes(copy.path);
  }
  const uint64_t limit = settled / 2;
  auto opened = Store::Open(dir.path, Store::Mode::kReadWrite, SizeLimited(limit));
  REQUIRE(opened.ok());
  auto store = std::move(*opened);
  const uint64_t before = store->Stats().samples;
  REQUIRE(before == 40 * 20 * 500);
  for (int pass = 0; pass < 3; ++pass) REQUIRE(store->ApplyRetention(t0 + 3'600'000'000'000).ok());
  REQUIRE(store->Compact().ok());
  const uint64_t kept = store->Stats().samples;
  // Kept most of half: the case kept 0.7 % of the samples. At
  // this 0.8 MB limit RocksDB's own files are a quarter of it (its LOG
  // dumps every part's options at each open, 7 parts now): 25-30 % kept.
  CHECK(kept > before * 2 / 10);
  CHECK(kept < before * 6 / 10);
  CHECK(DirectoryBytes(dir.path) <= limit);
}

// A store whose dictionary is most of its size: 20,000 distinct random
// function names (a churning fleet's code, which compresses no better than
// real names) in its first seconds, then 30 minutes of ordinary samples.
void WriteDictionaryHeavy(Store* store, int64_t t0) {
  std::mt19937_64 rng(5);
  for (int b = 0; b < 20; ++b) {
    std::string folded;
    for (int k = 0; k < 1000; ++k) {
      folded += "main;f";
      for (int w = 0; w < 4; ++w) folded += absl::StrCat(absl::Hex(rng(), absl::kZeroPad16));
      folded += " 1\n";
    }
    REQUIRE(store->Write(testing::BatchFromFolded(folded, {.first_time_ns = t0, .process = "app"})).ok());
  }
  WriteMinutes(store, t0 + 60'000'000'000, 30, 4);
}

uint64_t PartBytes(const StoreStats& st, std::string_view part) {
  for (const auto& p : st.part_bytes) {
    if (p.part == part) return p.bytes;
  }
  return 0;
}

TEST_CASE("a dictionary that outgrows the limit goes with the oldest samples that use it") {
  TempDir dir;
  const int64_t t0 = 1'700'000'000'000'000'000;
  {
    auto store = OpenOrDie(dir.path);
    WriteDictionaryHeavy(store.get(), t0);
    REQUIRE(store->Compact().ok());
  }
  const uint64_t full = DirectoryBytes(dir.path);
  const uint64_t dictionary = PartBytes(OpenOrDie(dir.path, Store::Mode::kReadOnly)->Stats(), "dictionary");
  REQUIRE(dictionary > full / 2);
  // Over the limit by a quarter, mostly for the dictionary: before, a pass
  // counted it as undeletable and cut only ordinary samples (and with the
  // dictionary past 90 % of the limit, all of them).
  const uint64_t limit = full * 3 / 4;
  auto opened = Store::Open(dir.path, Store::Mode::kReadWrite, SizeLimited(limit));
  REQUIRE(opened.ok());
  auto store = std::move(*opened);
  const StoreStats before = store->Stats();
  // As the settling thread runs them: retention, forgetting, and again
  // while over the limit.
  int passes = 0;
  bool forgot = false;
  for (; passes < 10; ++passes) {
    absl::StatusOr<RetentionReport> r = store->ApplyRetention(t0 + 3'600'000'000'000);
    REQUIRE(r.ok());
    if (r->reason.empty()) break;
    absl::StatusOr<ForgetReport> f = store->ForgetUnused();
    REQUIRE(f.ok());
    forgot |= f->ran;
  }
  REQUIRE(store->Compact().ok());
  const StoreStats after = store->Stats();
  MESSAGE("dictionary-heavy store over its limit: ", passes, " passes kept ", after.samples, " of ",
          before.samples, " samples");
  CHECK(forgot);
  CHECK(after.samples >= 300'000 * 8 / 10);              // most ordinary samples stay
  CHECK(after.last_sample_ns == before.last_sample_ns);  // the newest among them
  CHECK(after.first_sample_ns > t0);                     // the first seconds' went
  CHECK(after.stacks < 100);                             // their 20,000 stacks with them
  CHECK(after.retention_problem.empty());
  CHECK(DirectoryBytes(dir.path) <= limit);
}

TEST_CASE("when what retention cannot delete outgrows the limit, the newest samples stay and it says why") {
  TempDir dir;
  const int64_t t0 = 1'700'000'000'000'000'000;
  {
    auto store = OpenOrDie(dir.path);
    WriteMinutes(store.get(), t0, 30, 4);
    // The log, which retention does not delete: 3 MiB of random text.
    std::mt19937_64 rng(6);
    for (int i = 0; i < 400; ++i) {
      std::string line;
      for (int w = 0; w < 512; ++w) line += absl::StrCat(absl::Hex(rng(), absl::kZeroPad16));
      REQUIRE(store->AppendLog(LogLevel::kDebug, line).ok());
    }
    REQUIRE(store->Compact().ok());
  }
  const uint64_t log = PartBytes(OpenOrDie(dir.path, Store::Mode::kReadOnly)->Stats(), "log");
  REQUIRE(log > (uint64_t{2} << 20));
  const uint64_t limit = log;  // the log alone is over 90 % of it; the samples over a quarter
  auto opened = Store::Open(dir.path, Store::Mode::kReadWrite, SizeLimited(limit));
  REQUIRE(opened.ok());
  auto store = std::move(*opened);
  const StoreStats before = store->Stats();
  absl::StatusOr<RetentionReport> r = store->ApplyRetention(t0 + 3'600'000'000'000);
  REQUIRE(r.ok());
  const StoreStats after = store->Stats();
  CHECK(after.samples > 0);                              // not emptied
  CHECK(after.samples < before.samples);                 // but the oldest went
  CHECK(after.last_sample_ns == before.last_sample_ns);  // the newest stayed
  CHECK(after.retention_problem.find("cannot keep to its size limit") != std::string::npos);
  CHECK(after.retention_problem.find("--retention-size") != std::string::npos);
  bool logged = false;
  for (const LogEntry& e : store->ReadLog(20)) {
    logged |= e.level == LogLevel::kError && e.message == after.retention_problem;
  }
  CHECK(logged);
  // `kiln stats` opens the store read-only beside kiln and shows it too.
  CHECK(OpenOrDie(dir.path, Store::Mode::kReadOnly)->Stats().retention_problem == after.retention_problem);
  // A second pass keeps what the first kept: the floor holds.
  REQUIRE(store->ApplyRetention(t0 + 3'600'000'000'000).ok());
  CHECK(store->Stats().samples == after.samples);
  // With room, the problem clears (and says so once).
  store->SetRetention(std::chrono::nanoseconds(0), limit * 20);
  REQUIRE(store->ApplyRetention(t0 + 3'600'000'000'000).ok());
  CHECK(store->Stats().retention_problem.empty());
}

}  // namespace kiln::storage

namespace kiln::storage {
namespace {

constexpr int64_t kHourNs = 3'600'000'000'000;
const int64_t kForgetT0 = 1'700'002'800'000'000'000 - 1'700'002'800'000'000'000 % kHourNs;

// Hour `h` of a churning fleet: its own process (an attribute value no
// other hour has), stacks of its own, and one every hour shares.
ProfileBatch ChurnHour(int h) {
  std::string folded = "main;common 40\n";
  for (int k = 0; k < 30; ++k) folded += "main;h" + std::to_string(h) + "_f" + std::to_string(k) + " 3\n";
  ProfileBatch batch = testing::BatchFromFolded(
      folded, {.first_time_ns = kForgetT0 + h * kHourNs + 60'000'000'000, .process = "p" + std::to_string(h),
               .thread = "t" + std::to_string(h)});
  return batch;
}

std::vector<std::string> ByThread(const Store& store) { return Folded(store, {}, GroupBy::kThread); }

// What a store holding only hours [first, last] answers: the oracle.
std::vector<std::string> OnlyHours(int first, int last) {
  TempDir dir;
  auto store = OpenOrDie(dir.path);
  for (int h = first; h <= last; ++h) REQUIRE(store->Write(ChurnHour(h)).ok());
  return ByThread(*store);
}

StoreOptions AgeLimited(uint32_t rewrite_at_disk_id = uint32_t{1} << 31) {
  return {.retention_age = std::chrono::nanoseconds(kHourNs * 7 / 2),
          .retention_interval = std::chrono::milliseconds(0),
          .summarize_in_background = false,
          .forget_rewrite_at_disk_id = rewrite_at_disk_id};
}

}  // namespace

TEST_CASE("the dictionary forgets what no kept sample uses; kept samples keep their names, after restarts too") {
  uint32_t rewrite_at = uint32_t{1} << 31;
  SUBCASE("forgotten keys deleted, kept entries left as they are on disk") {}
  SUBCASE("every kept entry written again (as when disk ids near their end)") { rewrite_at = 1; }
  TempDir dir;
  {
    auto opened = Store::Open(dir.path, Store::Mode::kReadWrite, AgeLimited(rewrite_at));
    REQUIRE(opened.ok());
    auto store = std::move(*opened);
    for (int h = 0; h < 6; ++h) REQUIRE(store->Write(ChurnHour(h)).ok());
    REQUIRE(store->Summarize().ok());  // hours 0-4 get summaries, in the old ids
    const StoreStats full = store->Stats();
    CHECK(full.stacks == 1 + 6 * 30);
    CHECK(full.attribute_sets == 6);
    // Retention keeps the last 3.5 hours: hours 3, 4 and 5.
    absl::StatusOr<RetentionReport> r = store->ApplyRetention(kForgetT0 + 6 * kHourNs + 30 * 60'000'000'000LL);
    REQUIRE(r.ok());
    REQUIRE(r->samples_deleted > 0);
    const std::vector<std::string> before = ByThread(*store);
    CHECK(before == OnlyHours(3, 5));

    absl::StatusOr<ForgetReport> f = store->ForgetUnused();
    REQUIRE(f.ok());
    CHECK(f->ran);
    CHECK(f->rewrote == (rewrite_at == 1));
    CHECK(f->stacks_before == 1 + 6 * 30);
    CHECK(f->stacks_after == 1 + 3 * 30);
    CHECK(f->attribute_sets_after == 3);
    const StoreStats after = store->Stats();
    CHECK(after.stacks == 1 + 3 * 30);
    CHECK(after.attribute_sets == 3);
    CHECK(after.dictionary_entries_forgotten == f->entries_before - f->entries_after);
    // The same answers, from blocks and summaries written in the old ids
    // (hour 3's summary, renumbered, is read).
    const uint64_t summaries_read = store->Stats().summary_hours_read;
    CHECK(ByThread(*store) == before);
    CHECK(store->Stats().summary_hours_read > summaries_read);
    CHECK(store->AttributeValues("process.executable.name", 100) == std::vector<std::string>{"p3", "p4", "p5"});
    // Nothing more to forget: a second pass writes nothing.
    absl::StatusOr<ForgetReport> again = store->ForgetUnused();
    REQUIRE(again.ok());
    CHECK_FALSE(again->ran);

    // New data after the pass, then retention and forgetting again: the
    // first pass's blocks go through composed remaps.
    REQUIRE(store->Write(ChurnHour(6)).ok());
    REQUIRE(store->Write(ChurnHour(3)).ok());  // an old process comes back: same names, new ids
    CHECK(ByThread(*store) == [] {
      TempDir d;
      auto s = OpenOrDie(d.path);
      for (int h : {3, 4, 5, 6, 3}) REQUIRE(s->Write(ChurnHour(h)).ok());
      return ByThread(*s);
    }());
  }
  // After a restart: the remaps and the renumbered dictionary load back.
  auto opened = Store::Open(dir.path, Store::Mode::kReadWrite, AgeLimited(rewrite_at));
  REQUIRE(opened.ok());
  auto store = std::move(*opened);
  CHECK(store->Stats().stacks == 1 + 4 * 30);
  absl::StatusOr<RetentionReport> r = store->ApplyRetention(kForgetT0 + 8 * kHourNs);  // keeps 4.5h..8h
  REQUIRE(r.ok());
  REQUIRE(store->Summarize().ok());
  absl::StatusOr<ForgetReport> f = store->ForgetUnused();
  REQUIRE(f.ok());
  CHECK(f->ran);
  CHECK(store->Stats().stacks == 1 + 2 * 30);  // hours 5 and 6
  CHECK(ByThread(*store) == OnlyHours(5, 6));
  store.reset();
  CHECK(ByThread(*OpenOrDie(dir.path, Store::Mode::kReadOnly)) == OnlyHours(5, 6));
  // On disk: one key per kept stack; left where they were (hour 6's stacks
  // were written after hours 0-5's 181), or written again from 1.
  RawStore raw(dir.path);
  std::unique_ptr<rocksdb::Iterator> it(raw.db->NewIterator(rocksdb::ReadOptions(), raw.cf[0]));
  std::vector<uint32_t> stack_keys;
  for (it->Seek("k"); it->Valid() && it->key().starts_with("k"); it->Next()) {
    if (it->key().size() == 5) stack_keys.push_back(GetBigEndian32(it->key().data() + 1));
  }
  REQUIRE(stack_keys.size() == 1 + 2 * 30);
  if (rewrite_at == 1) {
    CHECK(stack_keys.back() == 1 + 2 * 30);
  } else {
    CHECK(stack_keys.back() > 1 + 6 * 30);
  }
}

TEST_CASE("forgetting an executable forgets its symbol records, but not symbols a user added") {
  // Hour h's executable: its own htlhash, build id "b0<h>" (hour 5's only
  // the build id hour 3's table was stored under, as an alias).
  auto htlhash = [](int h) { return std::string(31, '0') + std::to_string(h); };
  auto hour = [&](int h) {
    ProfileBatch b = h == 5 ? NativeBatch("", "b0shared") : NativeBatch(htlhash(h), h == 3 ? "b0shared" : "b0" + std::to_string(h));
    for (Sample& sample : b.samples) sample.time_ns += kForgetT0 + h * kHourNs + 60'000'000'000;
    return b;
  };
  const SymbolStatus none{.state = SymbolStatus::State::kNoSymbols, .source = "local files"};
  TempDir dir;
  {
    auto opened = Store::Open(dir.path, Store::Mode::kReadWrite, AgeLimited());
    REQUIRE(opened.ok());
    auto store = std::move(*opened);
    for (int h = 0; h < 6; ++h) REQUIRE(store->Write(hour(h)).ok());
    REQUIRE(store->PutSymbolStatus(SymbolKeys(htlhash(0), "b00"), none).ok());
    REQUIRE(store->PutSymbols(SymbolKeys(htlhash(1), "b01"), testing::NestedSymbolTable(),
                              {.source = "debug file /usr/lib/debug/app1.debug"})
                .ok());
    REQUIRE(store->PutSymbols(SymbolKeys(htlhash(2), "b02"), testing::NestedSymbolTable(),
                              {.source = "added: /home/me/app2.debug"})
                .ok());
    REQUIRE(store->PutSymbols(SymbolKeys(htlhash(3), "b0shared"), testing::NestedSymbolTable(),
                              {.source = "debuginfod http://debuginfod.example"})
                .ok());
    REQUIRE(store->PutSymbolStatus(SymbolKeys(htlhash(4), "b04"), none).ok());
    CHECK(store->SymbolStatuses().size() == 10);  // two keys for each of hours 0-4

    // Hours 3-5 kept, so the executables of hours 0-2 are forgotten.
    REQUIRE(store->ApplyRetention(kForgetT0 + 6 * kHourNs + 30 * 60'000'000'000LL).ok());
    absl::StatusOr<ForgetReport> f = store->ForgetUnused();
    REQUIRE(f.ok());
    CHECK(f->symbol_keys_forgotten == 4);  // hours 0 and 1, two keys each
    std::vector<std::string> kept;
    for (const auto& [key, st] : store->SymbolStatuses()) kept.push_back(key);
    CHECK(kept == std::vector<std::string>{"gnu:b02", "gnu:b04", "gnu:b0shared", "htlhash:" + htlhash(2),
                                           "htlhash:" + htlhash(3), "htlhash:" + htlhash(4)});
    // Hour 3's table still names hour 3's frames and, through the alias,
    // hour 5's; hour 4 has none.
    const std::vector<std::string> named = {"app+0x1ff 2", "f 4", "f;g;h;producer_leaf 2",
                                            "producer_name;producer_leaf 1"};
    CHECK(Folded(*store) == named);
  }
  CHECK(OpenOrDie(dir.path, Store::Mode::kReadOnly)->SymbolStatuses().size() == 6);
  // On disk: hour 1's table is gone, the added one and hour 3's remain.
  RawStore raw(dir.path);
  std::unique_ptr<rocksdb::Iterator> it(raw.db->NewIterator(rocksdb::ReadOptions(), raw.cf[3]));
  std::vector<std::string> tables;
  for (it->Seek("t"); it->Valid() && it->key().starts_with("t"); it->Next()) tables.push_back(it->key().ToString());
  CHECK(tables == std::vector<std::string>{"thtlhash:" + htlhash(2), "thtlhash:" + htlhash(3)});
}

TEST_CASE("caps count what is kept: after forgetting, new processes keep their own attribute values") {
  TempDir dir;
  StoreOptions o = AgeLimited();
  o.max_attribute_sets = 4;
  auto opened = Store::Open(dir.path, Store::Mode::kReadWrite, o);
  REQUIRE(opened.ok());
  auto store = std::move(*opened);
  for (int h = 0; h < 4; ++h) REQUIRE(store->Write(ChurnHour(h)).ok());
  REQUIRE(store->Write(ChurnHour(4)).ok());  // the fifth set: past the cap, folded
  CHECK(store->DataLossTotals()[static_cast<size_t>(DataLoss::kAttributeCapped)] == 1);
  REQUIRE(store->ApplyRetention(kForgetT0 + 6 * kHourNs + 30 * 60'000'000'000LL).ok());  // keeps 3 and 4
  REQUIRE(store->ForgetUnused().ok());
  REQUIRE(store->Write(ChurnHour(5)).ok());  // room again: its own values
  CHECK(store->DataLossTotals()[static_cast<size_t>(DataLoss::kAttributeCapped)] == 1);
  const std::vector<std::string> values = store->AttributeValues("process.executable.name", 100);
  CHECK(std::find(values.begin(), values.end(), "p5") != values.end());
}

}  // namespace kiln::storage

namespace kiln::storage {

TEST_CASE("a key's distinct values are bounded in bytes: past the budget new values are 'other', counted") {
  TempDir dir;
  StoreOptions o;
  o.max_attribute_value_bytes_per_key = 10;  // "t0".."t4" are 2 bytes each
  auto opened = Store::Open(dir.path, Store::Mode::kReadWrite, o);
  REQUIRE(opened.ok());
  auto store = std::move(*opened);
  for (int t = 0; t < 7; ++t) {
    REQUIRE(store->Write(testing::BatchFromFolded("main;w 1", {.process = "app", .thread = "t" + std::to_string(t)}))
                .ok());
  }
  // t0..t4 fit (10 bytes); t5 and t6 became "other" (5 more bytes: "other" is let in once).
  CHECK(store->AttributeValues("thread.name", 100) ==
        std::vector<std::string>{"other", "t0", "t1", "t2", "t3", "t4"});
  CHECK(store->DataLossTotals()[static_cast<size_t>(DataLoss::kAttributeCapped)] == 2);
  CHECK(store->Stats().samples == 7);
  // What became "other" is not held either: one more thread name costs no
  // string (a sender's 40,000 16 KB values were all held before).
  const uint64_t strings = store->Stats().strings;
  REQUIRE(store->Write(testing::BatchFromFolded("main;w 1", {.process = "app", .thread = "t7"})).ok());
  CHECK(store->Stats().strings == strings);
  // The budget holds across a restart (the bytes are counted again at open).
  store.reset();
  auto again = Store::Open(dir.path, Store::Mode::kReadWrite, o);
  REQUIRE(again.ok());
  REQUIRE((*again)->Write(testing::BatchFromFolded("main;w 1", {.process = "app", .thread = "t9"})).ok());
  CHECK((*again)->AttributeValues("thread.name", 100) ==
        std::vector<std::string>{"other", "t0", "t1", "t2", "t3", "t4"});
}

}  // namespace kiln::storage

namespace kiln::storage {
namespace {

constexpr int64_t kBucket = 10'000'000'000;  // retention's unit
constexpr int kCrashBuckets = 360;           // an hour of them

// Bucket `b`'s samples: 5 stacks no other bucket has (so forgetting has
// their frames and strings to forget), weights 1..5, 1 ms apart.
std::vector<std::string> BucketLines(int b) {
  std::vector<std::string> lines;
  for (int k = 0; k < 5; ++k) lines.push_back(absl::StrCat("main;b", b, ";f", k, " ", k + 1));
  std::sort(lines.begin(), lines.end());
  return lines;
}

ProfileBatch BucketBatch(int64_t t0, int b) {
  std::string folded;
  for (const std::string& line : BucketLines(b)) folded += line + "\n";
  return testing::BatchFromFolded(folded, {.first_time_ns = t0 + b * kBucket, .process = "app"});
}

// The store as a crash left it, checked bucket by bucket: every bucket
// from `first_kept` on is there whole, with its names, and none before it;
// the counters agree.
void CheckBuckets(const Store& store, int64_t t0, int first_kept) {
  uint64_t samples = 0;
  for (int b = 0; b < kCrashBuckets; ++b) {
    std::vector<std::string> got =
        Folded(store, {.from_ns = t0 + b * kBucket, .to_ns = t0 + (b + 1) * kBucket}, GroupBy::kNone);
    std::sort(got.begin(), got.end());
    INFO("bucket ", b);
    if (b < first_kept) {
      CHECK(got.empty());
    } else {
      CHECK(got == BucketLines(b));
      samples += 15;
    }
  }
  CHECK(store.Stats().samples == samples);
  // The whole range at once (hours' summaries answer for the hours they cover).
  std::vector<std::string> all = Folded(store);
  CHECK(all.size() == static_cast<size_t>(kCrashBuckets - first_kept) * 5);
}

}  // namespace

TEST_CASE("kill -9 at any step of a deleting retention pass, or the forgetting after it, loses no kept bucket") {
  const int64_t t0 = 1'700'000'000'000'000'000;  // on a bucket boundary
  const int64_t now = t0 + kCrashBuckets * kBucket;
  constexpr int kCut = kCrashBuckets / 2;  // a 30-minute age limit keeps the newest half
  const StoreOptions limited{.retention_age = std::chrono::minutes(30),
                             .retention_interval = std::chrono::milliseconds(0),
                             .summarize_in_background = false};
  for (const char* step : {"retention: deleted", "retention: compacted", "forgetting: counted",
                           "forgetting: written", "forgetting: compacted"}) {
    CAPTURE(step);
    TempDir dir;
    {
      auto store = OpenOrDie(dir.path);
      for (int b = 0; b < kCrashBuckets; ++b) REQUIRE(store->Write(BucketBatch(t0, b)).ok());
      REQUIRE(store->Summarize().ok());  // so forgetting rewrites a summary too
      REQUIRE(store->Flush().ok());
    }
    // The step kills the child (kill -9 there); any exit is a failure.
    const int code = kiln::testing::WaitChild(kiln::testing::SpawnChild(
        {KILN_STORE_CRASH_CHILD, dir.path, step, std::to_string(now), "1800"}));
    REQUIRE_MESSAGE(code == 128 + SIGKILL, "the child exited with ", code, " before the step");

    // Every step comes after the deleting batch: the cut is all there is.
    {
      auto store = OpenOrDie(dir.path);
      CheckBuckets(*store, t0, kCut);
    }
    // kiln as it starts again: the pass finishes, forgetting with it.
    auto opened = Store::Open(dir.path, Store::Mode::kReadWrite, limited);
    REQUIRE(opened.ok());
    auto store = std::move(*opened);
    REQUIRE(store->ApplyRetention(now).ok());
    absl::StatusOr<ForgetReport> forgot = store->ForgetUnused();
    REQUIRE(forgot.ok());
    CheckBuckets(*store, t0, kCut);
    CHECK(store->Stats().stacks == static_cast<uint64_t>(kCrashBuckets - kCut) * 5);
  }
}

}  // namespace kiln::storage

namespace kiln::storage {

TEST_CASE("past the dictionary's memory budget the oldest samples go a quarter at a time, forgetting after") {
  constexpr int64_t kMinute = 60'000'000'000;
  const int64_t t0 = 1'700'000'000'000'000'000;
  constexpr uint64_t kBudget = 2 << 20;
  TempDir dir;
  auto opened = Store::Open(dir.path, Store::Mode::kReadWrite,
                            {.retention_interval = std::chrono::milliseconds(0),
                             .summarize_in_background = false,
                             .max_dictionary_memory = kBudget});
  REQUIRE(opened.ok());
  auto store = std::move(*opened);
  // Two hours of a churning fleet: every minute a process with 300 stacks
  // of its own, 30 samples each at jittered times (the blocks, measured in
  // their tables, are what the cut weighs).
  auto minute_lines = [](int m) {
    std::vector<std::string> lines;
    for (int k = 0; k < 300; ++k) lines.push_back(absl::StrCat("main;m", m, "_f", k, " 30"));
    std::sort(lines.begin(), lines.end());
    return lines;
  };
  std::mt19937_64 rng(9);
  for (int m = 0; m < 120; ++m) {
    std::string folded;
    for (const std::string& line : minute_lines(m)) folded += line + "\n";
    ProfileBatch batch =
        testing::BatchFromFolded(folded, {.first_time_ns = t0 + m * kMinute, .process = absl::StrCat("p", m)});
    for (Sample& sample : batch.samples) sample.time_ns += static_cast<int64_t>(rng() % 40'000'000'000);
    REQUIRE(store->Write(batch).ok());
  }
  const uint64_t full = store->Stats().dictionary_memory_bytes;
  REQUIRE(full > 2 * kBudget);
  int passes = 0;
  while (store->Stats().dictionary_memory_bytes > kBudget && passes < 20) {
    absl::StatusOr<RetentionReport> r = store->ApplyRetention(t0 + 120 * kMinute);
    REQUIRE(r.ok());
    CHECK(r->reason == "dictionary memory");
    CHECK(r->samples_deleted > 0);
    REQUIRE(store->ForgetUnused().ok());
    ++passes;
  }
  const StoreStats st = store->Stats();
  MESSAGE("dictionary memory ", full >> 10, " KiB -> ", st.dictionary_memory_bytes >> 10, " KiB (budget ",
          kBudget >> 10, " KiB) in ", passes, " passes; ", st.samples, " of ", 120 * 300 * 30, " samples kept");
  CHECK(st.dictionary_memory_bytes <= kBudget);
  CHECK(st.dictionary_memory_bytes > kBudget / 2);  // quarter steps: no more went than about had to
  // The newest minutes stay whole; the oldest went.
  std::vector<std::string> newest = Folded(*store, {.from_ns = t0 + 119 * kMinute});
  std::sort(newest.begin(), newest.end());
  CHECK(newest == minute_lines(119));
  CHECK(Folded(*store, {.to_ns = t0 + kMinute}).empty());
  // Within the budget, a pass deletes nothing.
  absl::StatusOr<RetentionReport> again = store->ApplyRetention(t0 + 120 * kMinute);
  REQUIRE(again.ok());
  CHECK(again->samples_deleted == 0);
}

}  // namespace kiln::storage

namespace kiln::storage {
namespace {

// `batch` as the receiver hands it on from `sender`: kiln.sender joins
// every attribute set.
ProfileBatch FromSender(ProfileBatch batch, std::string_view sender) {
  ProfileDictionary& d = batch.dict;
  const uint32_t key = d.AddString(attr::kKilnSender), value = d.AddString(sender);
  std::vector<Attribute> attributes;
  std::vector<uint32_t> offsets{0, 0};  // set 0 stays the empty set
  for (uint32_t s = 1; s < d.AttributeSetCount(); ++s) {
    for (const Attribute& a : d.AttributeSet(s)) attributes.push_back(a);
    attributes.push_back({key, value});
    offsets.push_back(static_cast<uint32_t>(attributes.size()));
  }
  d.attributes = std::move(attributes);
  d.attribute_set_offsets = std::move(offsets);
  return batch;
}

ProfileBatch ThreadAt(int hour, std::string thread, std::string_view sender) {
  return FromSender(testing::BatchFromFolded("main;w 1", {.first_time_ns = kForgetT0 + hour * kHourNs + 60'000'000'000,
                                                          .thread = std::move(thread)}),
                    sender);
}

std::vector<std::string> Threads(const Store& store) { return store.AttributeValues("thread.name", 100); }

}  // namespace

TEST_CASE("a sender's values are bounded in bytes: past its budget its new values are 'other', not others' values") {
  TempDir dir;
  StoreOptions o = AgeLimited();
  o.max_attribute_value_bytes_per_sender = 12;  // six 2-byte thread names
  const auto capped = [](const Store& s) { return s.DataLossTotals()[static_cast<size_t>(DataLoss::kAttributeCapped)]; };
  {
    auto opened = Store::Open(dir.path, Store::Mode::kReadWrite, o);
    REQUIRE(opened.ok());
    auto store = std::move(*opened);
    // A stranger invents thread names, one an hour; a6..a9 are past its 12 bytes.
    for (int h = 0; h < 10; ++h) REQUIRE(store->Write(ThreadAt(h, "a" + std::to_string(h), "10.0.0.1")).ok());
    CHECK(capped(*store) == 4);
    // Another host's new values are its own: the stranger's budget is not its.
    for (int h = 6; h < 10; ++h) REQUIRE(store->Write(ThreadAt(h, "b" + std::to_string(h), "10.0.0.2")).ok());
    CHECK(capped(*store) == 4);
    CHECK(Threads(*store) == std::vector<std::string>{"a0", "a1", "a2", "a3", "a4", "a5", "b6", "b7", "b8", "b9", "other"});
    // Without a sender (a capture opened here) nothing is bounded by it.
    REQUIRE(store->Write(testing::BatchFromFolded("main;w 1", {.thread = "c0"})).ok());
    CHECK(capped(*store) == 4);
    CHECK(store->Stats().samples == 15);  // every sample kept, with its value or "other"
  }
  // The budget holds across a restart: the bytes are counted again at open.
  auto opened = Store::Open(dir.path, Store::Mode::kReadWrite, o);
  REQUIRE(opened.ok());
  auto store = std::move(*opened);
  REQUIRE(store->Write(ThreadAt(9, "ax", "10.0.0.1")).ok());
  REQUIRE(store->Write(ThreadAt(9, "bx", "10.0.0.2")).ok());
  CHECK(capped(*store) == 5);
  const std::vector<std::string> threads = Threads(*store);
  CHECK(std::find(threads.begin(), threads.end(), "ax") == threads.end());
  CHECK(std::find(threads.begin(), threads.end(), "bx") != threads.end());
  // The budget counts what is kept: once retention deleted the stranger's
  // old hours and forgetting dropped a0..a5, its new values are its own.
  REQUIRE(store->ApplyRetention(kForgetT0 + 10 * kHourNs + 30 * 60'000'000'000LL).ok());  // keeps hours 7..9
  REQUIRE(store->ForgetUnused().ok());
  REQUIRE(store->Write(ThreadAt(10, "a10", "10.0.0.1")).ok());
  CHECK(capped(*store) == 5);
  const std::vector<std::string> kept = Threads(*store);
  CHECK(std::find(kept.begin(), kept.end(), "a10") != kept.end());
  CHECK(std::find(kept.begin(), kept.end(), "a0") == kept.end());
}

}  // namespace kiln::storage

namespace kiln::storage {

TEST_CASE("forward queues: a request is owed to each destination in write order, across a restart, until acked") {
  kiln::testing::TempDir dir;
  const std::vector<std::string> both = {"b:4317", "c:4317"};
  {
    auto store = OpenOrDie(dir.path);
    for (int i = 0; i < 5; ++i) {
      REQUIRE(store->WriteAndForward(testing::BatchFromFolded("main;a 1"), absl::StrCat("request-", i), both).ok());
    }
    // An accepted request with no samples is owed all the same.
    REQUIRE(store->WriteAndForward(ProfileBatch{}, "request-empty", {"b:4317"}).ok());
    CHECK(store->Stats().samples == 5);
    const std::vector<ForwardEntry> b = store->PeekForward("b:4317", 100);
    REQUIRE(b.size() == 6);
    for (int i = 0; i < 5; ++i) CHECK(b[i].bytes == absl::StrCat("request-", i));
    CHECK(b[5].bytes == "request-empty");
    CHECK(b[0].seq < b[1].seq);
    CHECK(b[0].enqueued_ns > 0);
    REQUIRE(store->AckForward("b:4317", b[2].seq).ok());
    CHECK(store->PeekForward("b:4317", 1)[0].bytes == "request-3");
    CHECK(store->ForwardBacklogOf("b:4317") == ForwardBacklog{3, 9 + 9 + 13, b[3].enqueued_ns});
    CHECK(store->ForwardBacklogOf("c:4317").requests == 5);
    CHECK(store->ForwardBacklogOf("nowhere").requests == 0);
  }
  // Reopened (as after kill -9: the WAL holds it): the same queues.
  auto store = OpenOrDie(dir.path);
  CHECK(store->ForwardDestinations() == both);
  CHECK(store->ForwardBacklogOf("b:4317").requests == 3);
  CHECK(store->PeekForward("b:4317", 1)[0].bytes == "request-3");
  REQUIRE(store->WriteAndForward(testing::BatchFromFolded("main;a 1"), "request-5", both).ok());
  const std::vector<ForwardEntry> c = store->PeekForward("c:4317", 100);
  REQUIRE(c.size() == 6);
  CHECK(c.back().bytes == "request-5");
  CHECK(c[4].seq < c[5].seq);  // numbering goes on after the restart
  // A reader sees what is owed (kiln stats while kiln runs).
  auto reader = OpenOrDie(dir.path, Store::Mode::kReadOnly);
  CHECK(reader->ForwardBacklogOf("c:4317").requests == 6);
}

TEST_CASE("forward queues: past the bound the oldest requests are dropped and counted, the newest kept") {
  kiln::testing::TempDir dir;
  StoreOptions options;
  options.max_forward_bytes = 2500;
  auto opened = Store::Open(dir.path, Store::Mode::kReadWrite, options);
  REQUIRE(opened.ok());
  Store& store = **opened;
  const std::string kilobyte(1000, 'x');
  for (int i = 0; i < 5; ++i) {
    REQUIRE(store.WriteAndForward(testing::BatchFromFolded("main;a 1"), absl::StrCat(i, kilobyte), {"b"}).ok());
  }
  const std::vector<ForwardEntry> left = store.PeekForward("b", 100);
  REQUIRE(left.size() == 2);  // 2 x 1001 bytes fit in 2500
  CHECK(left[0].bytes[0] == '3');
  CHECK(left[1].bytes[0] == '4');
  CHECK(store.DataLossTotals()[static_cast<size_t>(DataLoss::kForwardDropped)] == 3);
  CHECK(store.Stats().samples == 5);  // stored here all the same
  // One request over the bound alone is still forwarded.
  REQUIRE(store.WriteAndForward(ProfileBatch{}, std::string(9000, 'y'), {"b"}).ok());
  CHECK(store.PeekForward("b", 100).size() == 1);
  CHECK(store.DataLossTotals()[static_cast<size_t>(DataLoss::kForwardDropped)] == 5);
  // Per destination too, for its status line and metrics: a second
  // destination within the bound has dropped nothing.
  REQUIRE(store.WriteAndForward(ProfileBatch{}, "small", {"c"}).ok());
  CHECK(store.ForwardBacklogOf("b").dropped == 5);
  CHECK(store.ForwardBacklogOf("c").dropped == 0);
}

}  // namespace kiln::storage
