// Unit tests of the capture importers on small inline fixtures. Corpus
// conformance lives in tests/import/.
#include "ingest/capture/capture.h"

#include <doctest/doctest.h>

#include <optional>
#include <zstd.h>

#include "absl/strings/escaping.h"
#include "ingest/capture/export.h"
#include "ingest/capture/importers.h"
#include "storage/model/query.h"
#include "pprof/profile.pb.h"
#include "storage/model/flame_tree.h"
#include "storage/model/folded.h"

namespace kiln::capture {
namespace {

// The capture's default sample type unless `type` is given.
std::string Folded(const ImportedCapture& c, storage::GroupBy group_by, bool annotate,
                   const std::optional<storage::SampleType>& type = std::nullopt) {
  storage::Query q;
  q.sample_type = type.value_or(c.default_sample_type);
  auto slice = storage::SliceFromBatch(c.batch, q);
  storage::FlameTreeOptions to;
  to.group_by = group_by;
  auto tree = storage::BuildFlameTree(slice, to);
  std::string text;
  for (const std::string& l : storage::FoldedLines(tree, {annotate})) text += l + "\n";
  return text;
}

TEST_CASE("folded: CRLF, comments and invalid lines are skipped and counted") {
  auto c = ImportBytes("# comment\r\na;b;c 1\r\na;b;c 2\r\ninvalid line\r\na;b 5\r\n", "t.txt");
  REQUIRE(c.ok());
  CHECK(c->format == CaptureFormat::kFolded);
  CHECK(c->skipped_records == 2);
  CHECK(Folded(*c, storage::GroupBy::kNone, false) == "a;b 5\na;b;c 3\n");
}

TEST_CASE("folded: UTF-16 LE with BOM and kernel/JIT suffixes round trip") {
  std::string utf8 = "x;y_[k] 2\nx;z_[j] 1\n";
  std::string utf16 = "\xFF\xFE";
  for (char ch : utf8) {
    utf16.push_back(ch);
    utf16.push_back('\0');
  }
  auto c = ImportBytes(utf16, "t16.txt");
  REQUIRE(c.ok());
  CHECK(Folded(*c, storage::GroupBy::kNone, true) == utf8);
  CHECK(Folded(*c, storage::GroupBy::kNone, false) == "x;y 2\nx;z 1\n");
}

TEST_CASE("perf script: header variants, kernel/JIT frames, event filter, period") {
  const char* text =
      "# captured on: Thu Jul  7 20:48:39 2016\n"
      "java 12688/12764 [002] 100.000001:   250 cycles: \n"
      "\t    ffffffff8103ce3b native_safe_halt+0x1 ([kernel.kallsyms])\n"
      "\t    7f722d142778 Ljava/io/PrintStream;::print (/tmp/perf-19982.map)\n"
      "\t    400577 main(int, char**) (/root/a.out)\n"
      "\n"
      "V8 WorkerThread 25607 101.5: 100 instructions: \n"
      "\t    400577 main (/root/a.out)\n"
      "\n"
      "java 12688/12764 [002] 102.000001:   250 cycles: \n"
      "\t    0 [unknown] ([unknown])\n\n";
  auto c = ImportBytes(text, "perf.txt");
  REQUIRE(c.ok());
  CHECK(c->format == CaptureFormat::kPerfScript);
  CHECK(c->batch.samples.size() == 2);
  CHECK(Folded(*c, storage::GroupBy::kProcess, true) ==
        "java;[unknown] 250\n"
        "java;main;java/io/PrintStream:::print_[j];native_safe_halt_[k] 250\n");
  // Last sample anchored at "captured on" (2016-07-07T20:48:39Z).
  CHECK(c->last_time_ns == int64_t{1467924519} * 1000000000);
  CHECK(c->first_time_ns == c->last_time_ns - 2000000000);

  ImportOptions o;
  o.perf_event = "instructions";
  auto d = ImportBytes(text, "perf.txt", o);
  REQUIRE(d.ok());
  CHECK(Folded(*d, storage::GroupBy::kProcess, true) ==
        "V8_WorkerThread;main 100\n");
}

perftools::profiles::Profile SmallPprof() {
  perftools::profiles::Profile p;
  for (const char* s : {"", "samples", "count", "cpu", "nanoseconds", "main", "work", "inl", "/bin/app",
                        "a.c", "thread.name", "t1"})
    p.add_string_table(s);
  auto* st = p.add_sample_type();
  st->set_type(1);
  st->set_unit(2);
  st = p.add_sample_type();
  st->set_type(3);
  st->set_unit(4);
  auto* m = p.add_mapping();
  m->set_id(1);
  m->set_filename(8);
  for (int i = 1; i <= 3; ++i) {
    auto* f = p.add_function();
    f->set_id(i);
    f->set_name(4 + i);
    f->set_filename(9);
  }
  auto* l1 = p.add_location();  // main
  l1->set_id(1);
  l1->set_mapping_id(1);
  l1->set_address(0x1000);
  l1->add_line()->set_function_id(1);
  auto* l2 = p.add_location();  // work with inl inlined into it
  l2->set_id(2);
  l2->set_mapping_id(1);
  l2->set_address(0x2000);
  l2->add_line()->set_function_id(3);  // innermost first
  l2->add_line()->set_function_id(2);  // caller last
  auto* s = p.add_sample();
  s->add_location_id(2);
  s->add_location_id(1);
  s->add_value(3);
  s->add_value(30);
  auto* lab = s->add_label();
  lab->set_key(10);
  lab->set_str(11);
  s = p.add_sample();
  s->add_location_id(1);
  s->add_value(1);
  s->add_value(10);
  p.set_time_nanos(1000);
  p.set_duration_nanos(5000);
  return p;
}

TEST_CASE("pprof: default sample type is the last, inlined lines expand caller first") {
  std::string bytes = GzipCompress(SmallPprof().SerializeAsString());
  auto c = ImportBytes(bytes, "p.pb.gz");
  REQUIRE(c.ok());
  CHECK(c->compression == Compression::kGzip);
  CHECK(c->format == CaptureFormat::kPprof);
  CHECK(c->default_sample_type == storage::SampleType{"cpu", "nanoseconds"});
  CHECK(c->sample_types ==
        std::vector<storage::SampleType>{{"samples", "count"}, {"cpu", "nanoseconds"}});
  // Every type is imported, each apart.
  CHECK(Folded(*c, storage::GroupBy::kNone, false, storage::OnCpuSamples()) == "main 1\nmain;work;inl 3\n");
  CHECK(Folded(*c, storage::GroupBy::kNone, false) ==
        "main 10\nmain;work;inl 30\n");
  CHECK(c->first_time_ns == 1000);
  CHECK(c->range_start_ns == 1000);
  CHECK(c->range_end_ns == 1000 + 5000);

  ImportOptions o;
  o.sample_type = "samples";
  auto d = ImportBytes(bytes, "p.pb.gz", o);
  REQUIRE(d.ok());
  CHECK(d->sample_types == std::vector<storage::SampleType>{{"samples", "count"}});
  CHECK(Folded(*d, storage::GroupBy::kThread, false) ==
        "t1;main;work;inl 3\nunknown thread;main 1\n");

  o.sample_type = "nope";
  auto e = ImportBytes(bytes, "p.pb.gz", o);
  REQUIRE(!e.ok());
  CHECK(std::string(e.status().message()).find("samples/count, cpu/nanoseconds") != std::string::npos);
}

TEST_CASE("pprof: unpacked and split location ids, values after labels, types after samples") {
  std::string bytes = SmallPprof().SerializeAsString();
  // Appended fields extend the repeated ones (protobuf merge rules).
  // ids 2, 1 unpacked; values unpacked.
  bytes += std::string("\x12\x08\x08\x02\x08\x01\x10\x03\x10\x1e", 10);
  // ids in two packed fields (2, then 1), packed values.
  bytes += std::string("\x12\x0a\x0a\x01\x02\x0a\x01\x01\x12\x02\x03\x1e", 12);
  // a label (key 10 = "thread", str 11 = "t1") before the values.
  bytes += std::string("\x12\x0e\x0a\x02\x02\x01\x1a\x04\x08\x0a\x10\x0b\x12\x02\x01\x0a", 16);
  auto c = ImportBytes(bytes, "odd.pb");
  REQUIRE_MESSAGE(c.ok(), c.status().message());
  CHECK(Folded(*c, storage::GroupBy::kThread, false) ==
        "t1;main;work;inl 40\nunknown thread;main 10\n"
        "unknown thread;main;work;inl 60\n");

  // A sample before the sample types: the walk cannot know which value
  // pprof's rule picks, so it reads the values again at the end.
  perftools::profiles::Profile p = SmallPprof();
  perftools::profiles::Profile types_last = p;
  types_last.clear_sample_type();
  std::string reordered = types_last.SerializeAsString();
  for (const auto& st : p.sample_type()) {
    std::string one = st.SerializeAsString();
    reordered += '\x0a';
    reordered += static_cast<char>(one.size());
    reordered += one;
  }
  auto d = ImportBytes(reordered, "late-types.pb");
  REQUIRE_MESSAGE(d.ok(), d.status().message());
  CHECK(Folded(*d, storage::GroupBy::kNone, false) ==
        "main 10\nmain;work;inl 30\n");
}

TEST_CASE("pprof: malformed input names the file and the byte") {
  std::string good = SmallPprof().SerializeAsString();
  // Truncated in the middle.
  auto c = ImportBytes(std::string_view(good).substr(0, good.size() - 5), "cut.pb");
  REQUIRE(!c.ok());
  CHECK(std::string(c.status().message()).rfind("cut.pb: byte ", 0) == 0);
  // A huge declared length.
  std::string huge = "\x12\xff\xff\xff\xff\x0f";
  auto h = ImportBytes(huge, "huge.pb");
  REQUIRE(!h.ok());
  INFO(h.status().message());
  CHECK(std::string(h.status().message()).find("huge.pb: byte 0:") == 0);
  // A dangling location id.
  auto p = SmallPprof();
  p.mutable_sample(0)->set_location_id(0, 99);
  auto d = ImportBytes(p.SerializeAsString(), "dangling.pb");
  REQUIRE(!d.ok());
  CHECK(std::string(d.status().message()).find("location_id 99 does not exist") != std::string::npos);
  // Truncated gzip.
  std::string gz = GzipCompress(good);
  auto g = ImportBytes(std::string_view(gz).substr(0, gz.size() / 2), "cut.pb.gz");
  REQUIRE(!g.ok());
  CHECK(std::string(g.status().message()).find("cut.pb.gz: byte ") == 0);
}

TEST_CASE("sniffing ignores names and recognises each format") {
  CHECK(SniffFormat("{\"resourceProfiles\":[]}") == CaptureFormat::kOtlpJson);
  CHECK(SniffFormat("a;b 1\n") == CaptureFormat::kFolded);
  CHECK(SniffFormat("x 1 cpu-clock:\n\t 1234 main (/bin/x)\n") == CaptureFormat::kPerfScript);
  CHECK(SniffFormat("# ========\n# captured on: x\n# ========\n") == CaptureFormat::kPerfScript);
  CHECK(SniffFormat(SmallPprof().SerializeAsString()) == CaptureFormat::kPprof);
  CHECK(SniffCompression("\x28\xb5\x2f\xfd") == Compression::kZstd);
  auto e = ImportBytes("", "empty.pb.gz");
  CHECK(!e.ok());
}

TEST_CASE("OTLP JSON: hex ids become bytes, syntax errors have line:column") {
  auto ok = PrepareOtlpJson("{\"traceId\": \"0a0b\", \"x\": [1, 2]}", "j.json");
  REQUIRE(ok.ok());
  CHECK(*ok == "{\"traceId\": \"Cgs=\", \"x\": [1, 2]}");
  auto bad = PrepareOtlpJson("{\n  \"a\": [1, 2,\n}", "j.json");
  REQUIRE(!bad.ok());
  CHECK(std::string(bad.status().message()).find("j.json:3:1:") == 0);
  std::string deep(200, '[');
  auto d = PrepareOtlpJson(deep, "deep.json");
  REQUIRE(!d.ok());
  CHECK(std::string(d.status().message()).find("deeper than 64") != std::string::npos);
}

TEST_CASE("OTLP JSON: attribute keys and values by string-table reference (v1.10+)") {
  // keyStrindex / stringValueStrindex in resource, scope and dictionary
  // attributes, as the Collector's encoders write them.
  const char* json = R"({
 "resourceProfiles": [{
   "resource": {"attributes": [{"keyStrindex": 7, "value": {"stringValueStrindex": 8}}]},
   "scopeProfiles": [{
     "scope": {"attributes": [{"keyStrindex": 11, "value": {"stringValueStrindex": 12}}]},
     "profiles": [{
      "sampleType": {"typeStrindex": 1, "unitStrindex": 2},
      "timeUnixNano": "1700000000000000000",
      "samples": [{"stackIndex": 1, "values": ["3"], "attributeIndices": [1]}]
   }]}]
 }],
 "dictionary": {
   "stringTable": ["", "alloc_space", "bytes", "", "", "main", "work", "process.executable.name", "app",
                   "thread.name", "worker", "scope.flavour", "vanilla"],
   "functionTable": [{}, {"nameStrindex": 5}, {"nameStrindex": 6}],
   "locationTable": [{}, {"lines": [{"functionIndex": 1}]}, {"lines": [{"functionIndex": 2}]}],
   "stackTable": [{}, {"locationIndices": [2, 1]}],
   "attributeTable": [{}, {"keyStrindex": 9, "value": {"stringValueStrindex": 10}}],
   "mappingTable": [{}], "linkTable": [{}]
 }
})";
  auto c = ImportBytes(json, "refs.json");
  REQUIRE_MESSAGE(c.ok(), c.status().message());
  CHECK(c->warnings.empty());
  CHECK(c->sample_types == std::vector<storage::SampleType>{{"alloc_space", "bytes"}});
  CHECK(Folded(*c, storage::GroupBy::kThread, false) == "app;worker;main;work 3\n");
  const auto& d = c->batch.dict;
  REQUIRE(!c->batch.samples.empty());
  CHECK(d.AttributeValue(c->batch.samples[0].attribute_set, "scope.flavour") == "vanilla");
}

TEST_CASE("OTLP JSON: camelCase names, hex ids, int64 as string or number") {
  const char* json = R"({
 "resourceProfiles": [{
   "resource": {"attributes": [{"key": "process.executable.name", "value": {"stringValue": "app"}}]},
   "scopeProfiles": [{"profiles": [{
      "sampleType": {"typeStrindex": 1, "unitStrindex": 2},
      "periodType": {"typeStrindex": 3, "unitStrindex": 4},
      "timeUnixNano": "1700000000000000000",
      "samples": [{"stackIndex": 1, "values": ["3"], "linkIndex": 1},
                  {"stackIndex": 2, "values": [2]}]
   }]}]
 }],
 "dictionary": {
   "stringTable": ["", "samples", "count", "cpu", "nanoseconds", "main", "work"],
   "functionTable": [{}, {"nameStrindex": 5}, {"nameStrindex": 6}],
   "locationTable": [{}, {"lines": [{"functionIndex": 1}]}, {"lines": [{"functionIndex": 2}]}],
   "stackTable": [{}, {"locationIndices": [2, 1]}, {"locationIndices": [1]}],
   "linkTable": [{}, {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174"}],
   "mappingTable": [{}], "attributeTable": [{}]
 }
})";
  auto c = ImportBytes(json, "capture.json");
  REQUIRE_MESSAGE(c.ok(), c.status().message());
  CHECK(c->format == CaptureFormat::kOtlpJson);
  CHECK(Folded(*c, storage::GroupBy::kProcess, false) ==
        "app;main 2\napp;main;work 3\n");
  CHECK(c->first_time_ns == 1700000000000000000);
  bool has_link = false;
  for (const auto& l : c->batch.dict.links) {
    has_link = has_link || l.trace_id == absl::HexStringToBytes("5b8efff798038103d269b633813fc60c");
  }
  CHECK(has_link);

  auto bad = ImportBytes("{\"resourceProfiles\": [{\"scopeProfiles\": 5}]}", "bad.json");
  REQUIRE(!bad.ok());
  CHECK(std::string(bad.status().message()).rfind("bad.json: ", 0) == 0);
}

TEST_CASE("perf script: -F comm,pid,tid,time,ip,sym,dso and -F ip,sym without dso") {
  const char* with_dso =
      "app 10/11 5.000000: \n"
      "\t  400577 func_b+0x10 (/bin/app)\n"
      "\t  4005b1 main (/bin/app)\n"
      "\n"
      "app 10/12 6.000000: \n"
      "\t  4005b1 main (/bin/app)\n"
      "\n";
  ImportOptions o;
  o.anchor_time_ns = 0;  // keep perf's clock
  auto c = ImportBytes(with_dso, "f.txt", o);
  REQUIRE(c.ok());
  CHECK(Folded(*c, storage::GroupBy::kProcess, true) ==
        "app;main 1\napp;main;func_b 1\n");
  CHECK(c->first_time_ns == 5000000000);
  CHECK(c->batch.dict.AttributeValue(c->batch.samples[1].attribute_set, "thread.id") == "12");
  CHECK(c->batch.dict.AttributeValue(c->batch.samples[1].attribute_set, "process.pid") == "10");

  const char* no_dso =
      "app 11 cpu-clock: \n"
      "\t  400577 func_b\n"
      "\t  4005b1 main\n"
      "\t  some_file.c:10\n"
      "\n";
  auto d = ImportBytes(no_dso, "g.txt", o);
  REQUIRE(d.ok());
  CHECK(Folded(*d, storage::GroupBy::kProcess, false) == "app;main;func_b 1\n");
  CHECK(d->skipped_records == 1);
}

TEST_CASE("perf script: times past int64 nanoseconds are no times, not overflows") {
  // The perf script fuzzer (with UBSan made fatal) found seconds * 1e9
  // overflowing, in sample times and in the "captured on" header.
  const char* script =
      "# captured on: Fri Dec 31 23:59:59 9999\n"
      "app 10/11 20326645517.000000: \n"
      "\t  4005b1 main (/bin/app)\n"
      "\n"
      "app 10/12 6.000000: \n"
      "\t  4005b1 main (/bin/app)\n"
      "\n";
  ImportOptions o;
  o.anchor_time_ns = 0;  // keep perf's clock
  auto c = ImportBytes(script, "f.txt", o);
  REQUIRE(c.ok());
  REQUIRE(c->batch.samples.size() == 2);
  CHECK(c->batch.samples[0].time_ns == 0);  // no time: the anchor, here 0
  CHECK(c->batch.samples[1].time_ns == 6000000000);
}

TEST_CASE("exports of samples far apart in time: the duration is exact, never an overflow") {
  // OTLP times are unsigned, so imported times can be anywhere in int64;
  // last - first overflowed int64 (found by the fuzzers with UBSan fatal).
  auto c = ImportBytes("main;leaf 1\nmain 1\n", "t.folded");
  REQUIRE(c.ok());
  REQUIRE(c->batch.samples.size() == 2);
  const int64_t first = -8746744073709551616, last = 1700000000000000001;
  c->batch.samples[0].time_ns = first;
  c->batch.samples[1].time_ns = last;
  storage::Query q;
  q.sample_type = c->default_sample_type;
  auto slice = storage::SliceFromBatch(c->batch, q);
  REQUIRE(slice->first_sample_ns == first);
  REQUIRE(slice->last_sample_ns == last);
  const uint64_t span = uint64_t{1700000000000000001} + uint64_t{8746744073709551616u};
  auto otlp = BuildOtlpRequest(*slice);
  REQUIRE(otlp.resource_profiles_size() == 1);
  const auto& profile = otlp.resource_profiles(0).scope_profiles(0).profiles(0);
  CHECK(profile.duration_nano() == span);
  // pprof's duration is int64: the longest it can say.
  CHECK(BuildPprofProfile(*slice).duration_nanos() == INT64_MAX);
}

TEST_CASE("SliceFromBatch and TimelineFromBatch filter by sample type, time and attributes") {
  const char* text =
      "a 1/1 1.0: 1 cpu-clock:\n\t 10 f (/bin/a)\n\n"
      "b 2/2 2.0: 1 cpu-clock:\n\t 10 g (/bin/b)\n\n"
      "a 1/1 3.0: 1 cpu-clock:\n\t 10 f (/bin/a)\n\n";
  auto c = ImportBytes(text, "t.txt");
  REQUIRE(c.ok());
  storage::Query q;
  q.sample_type = c->default_sample_type;
  CHECK(q.sample_type == storage::SampleType{"cpu", "nanoseconds"});  // cpu-clock periods
  q.filters.push_back({"process.pid", {"1"}});
  auto slice = storage::SliceFromBatch(c->batch, q);
  CHECK(slice->total_events == 2);
  CHECK(slice->weights.size() == 1);
  auto t = storage::TimelineFromBatch(c->batch, q, 2);
  CHECK(t.start_ns == 1000000000);
  CHECK(t.events == std::vector<uint64_t>{1, 1});
  q.from_ns = 2500000000;
  CHECK(storage::SliceFromBatch(c->batch, q)->total_events == 1);
  q.sample_type = storage::OffCpuTime();
  CHECK(storage::SliceFromBatch(c->batch, q)->weights.empty());
}

TEST_CASE("gzip: concatenated members, trailing bytes, a wrong trailer, the size limit") {
  // A first member that inflates far beyond 5x (past every size guess) and
  // a small second one whose ISIZE ends the file.
  std::string big;
  for (int i = 0; i < 20000; ++i) big += "main;work;leaf 1\n";
  const std::string small = "main;other 7\n";
  const std::string two = GzipCompress(big) + GzipCompress(small);
  auto c = ImportBytes(two, "two.gz");
  REQUIRE_MESSAGE(c.ok(), c.status().message());
  CHECK(c->decompressed_bytes == big.size() + small.size());
  CHECK(Folded(*c, storage::GroupBy::kNone, false) ==
        "main;other 7\nmain;work;leaf 20000\n");

  // Bytes after the last member are ignored, as gzip(1) does.
  auto t = ImportBytes(GzipCompress(small) + "trailing", "trail.gz");
  REQUIRE_MESSAGE(t.ok(), t.status().message());
  CHECK(Folded(*t, storage::GroupBy::kNone, false) == "main;other 7\n");

  // A trailer whose length does not match the content.
  std::string bad = GzipCompress(small);
  bad[bad.size() - 4] = static_cast<char>(bad[bad.size() - 4] + 1);
  auto b = ImportBytes(bad, "badlen.gz");
  REQUIRE(!b.ok());
  CHECK(std::string(b.status().message()).rfind("badlen.gz: byte ", 0) == 0);

  // Over the limit.
  ImportOptions o;
  o.max_decompressed_bytes = big.size() / 2;
  auto l = ImportBytes(two, "limit.gz", o);
  REQUIRE(!l.ok());
  CHECK(std::string(l.status().message()).find("larger than the limit") != std::string::npos);
}

TEST_CASE("zstd input and invalid UTF-8 names") {
  std::string folded = "caf\xe9;ok\xc3\xa9 2\n";  // Latin-1 e-acute, then UTF-8
  std::string z(ZSTD_compressBound(folded.size()), '\0');
  z.resize(ZSTD_compress(z.data(), z.size(), folded.data(), folded.size(), 3));
  auto c = ImportBytes(z, "f.folded.zst");
  REQUIRE(c.ok());
  CHECK(c->compression == Compression::kZstd);
  CHECK(Folded(*c, storage::GroupBy::kNone, false) ==
        "caf\xef\xbf\xbd;ok\xc3\xa9 2\n");
  auto cut = ImportBytes(std::string_view(z).substr(0, z.size() - 3), "cut.zst");
  REQUIRE(!cut.ok());
  CHECK(std::string(cut.status().message()).rfind("cut.zst: byte ", 0) == 0);
}

TEST_CASE("svg: tooltips, escaping, the caller's colours") {
  auto c = ImportBytes("a;b<c> 3\na;d 1\n", "t.txt");
  REQUIRE(c.ok());
  storage::Query q;
  ExportOptions o;
  o.format = ExportFormat::kSvg;
  o.tree.group_by = storage::GroupBy::kNone;
  auto svg = ExportSlice(storage::SliceFromBatch(c->batch, q), o);
  REQUIRE(svg.ok());
  CHECK(svg->find("<title>b&lt;c&gt; (3 samples, 75.00%, self 3 samples, native)</title>") != std::string::npos);
  o.node_color = [](storage::NodeKind, storage::FrameType, std::string_view) { return Rgb{1, 2, 3}; };
  auto mine = ExportSlice(storage::SliceFromBatch(c->batch, q), o);
  REQUIRE(mine.ok());
  CHECK(mine->find("fill=\"#010203\"") != std::string::npos);
}

TEST_CASE("names that are not UTF-8 export as valid OTLP and pprof (U+FFFD), which import again") {
  // Found by the perf script fuzzer: a Latin-1 byte in an event or
  // function name made an OTLP file no protobuf reader accepts.
  const std::string script =
      "prog 10 19893: 1001001 cpu-c\x94\x95"
      "ck:\n"
      "\t     643 caf\xe9 (/workdir/prog)\n"
      "\t     6f3 main (/workdir/prog)\n\n";
  std::string three;
  for (int i = 0; i < 3; ++i) three += script;
  auto c = ImportBytes(three +
                           "prog 10 19893: 1001001 cpu-c\x94\x95"
                           "ck:\n\t     6f3 main (/workdir/prog)\n\n",
                       "t.perf");
  REQUIRE(c.ok());
  storage::Query q;
  q.sample_type = c->default_sample_type;
  for (ExportFormat f : {ExportFormat::kOtlp, ExportFormat::kPprof}) {
    ExportOptions o;
    o.format = f;
    auto bytes = ExportSlice(storage::SliceFromBatch(c->batch, q), o);
    REQUIRE(bytes.ok());
    auto back = ImportBytes(*bytes, f == ExportFormat::kOtlp ? "t.otlp" : "t.pb");
    REQUIRE_MESSAGE(back.ok(), back.status().ToString());
    CHECK(Folded(*back, storage::GroupBy::kNone, false) == "main 1001001\nmain;caf\xef\xbf\xbd 3003003\n");
  }
}

TEST_CASE("progress callback and cancellation") {
  std::string big;
  for (int i = 0; i < 300000; ++i) big += "main;work;leaf" + std::to_string(i % 100) + " 1\n";
  ImportOptions o;
  int calls = 0;
  o.progress = [&](const ImportProgress& p) {
    ++calls;
    CHECK(p.bytes_total == big.size());
    return true;
  };
  auto ok = ImportBytes(big, "big.txt", o);
  REQUIRE(ok.ok());
  CHECK(calls >= 2);
  o.progress = [](const ImportProgress&) { return false; };
  auto cancelled = ImportBytes(big, "big.txt", o);
  CHECK(absl::IsCancelled(cancelled.status()));
  std::atomic<bool> cancel{true};
  ImportOptions o2;
  o2.cancel = &cancel;
  CHECK(absl::IsCancelled(ImportBytes(big, "big.txt", o2).status()));
}

TEST_CASE("an OTLP export always reads back, whatever its first bytes look like") {
  // A ResourceProfiles of 123 bytes makes the message start "\n{", which
  // once sniffed as JSON (found by fuzz_capture_folded).
  for (int n = 1; n <= 120; ++n) {
    std::string text =
        std::string(static_cast<size_t>(n), 'p') + " 1/1 1.0: 1 cpu-clock:\n\t 10 f (/bin/a)\n\n";
    auto c = ImportBytes(text, "t.txt");
    REQUIRE(c.ok());
    storage::Query q;
    std::string raw = BuildOtlpRequest(*storage::SliceFromBatch(c->batch, q)).SerializeAsString();
    CAPTURE(n);
    auto back = ImportBytes(raw, "back.pb");
    REQUIRE_MESSAGE(back.ok(), back.status().message());
    CHECK(back->format == CaptureFormat::kOtlpProtobuf);
  }
}

TEST_CASE("pprof: a last sample shorter than two bytes (fuzz finding)") {
  std::string input =
      absl::HexStringToBytes("0a000a007a000a000a000a0012001200650a001200320012006500310032120165");
  ImportOptions options;
  ImportedCapture out;
  ParseContext ctx("short.pb", options, &out);
  absl::Status status = ImportPprof(input, ctx);  // an error or not, never an exception
  CHECK((status.ok() || std::string(status.message()).rfind("short.pb", 0) == 0));
}

}  // namespace
}  // namespace kiln::capture
