#include "storage/model/profile_model.h"

#include <doctest/doctest.h>

namespace kiln::storage {

TEST_CASE("frame type names round trip, unknown names are kUnknown") {
  for (int i = 0; i < kFrameTypeCount; ++i) {
    auto t = static_cast<FrameType>(i);
    CHECK(FrameTypeFromName(FrameTypeName(t)) == t);
  }
  CHECK(FrameTypeFromName("cpython") == FrameType::kPython);
  CHECK(FrameTypeFromName("phpjit") == FrameType::kPhp);
  CHECK(FrameTypeFromName("brainfuck") == FrameType::kUnknown);
}

TEST_CASE("frame types from source files and labels that name them") {
  CHECK(FrameTypeOfSourceFile("/usr/lib/go/src/runtime/proc.go") == FrameType::kGo);
  CHECK(FrameTypeOfSourceFile("app/views.py") == FrameType::kPython);
  CHECK(FrameTypeOfSourceFile("Main.kt") == FrameType::kJvm);
  CHECK(FrameTypeOfSourceFile("lib/x.rb") == FrameType::kRuby);
  CHECK(FrameTypeOfSourceFile("src/main.c") == FrameType::kUnknown);  // native: the caller knows
  CHECK(FrameTypeOfSourceFile("/opt/v1.2/bin") == FrameType::kUnknown);
  CHECK(FrameTypeOfSourceFile("") == FrameType::kUnknown);
  CHECK(FrameTypeOfLabel("handle (app/views.py:42)") == FrameType::kPython);
  CHECK(FrameTypeOfLabel("main.go:17") == FrameType::kGo);
  CHECK(FrameTypeOfLabel("std::map<int, int>::at") == FrameType::kUnknown);
  CHECK(FrameTypeOfLabel("Foo::bar(int) const") == FrameType::kUnknown);
}

TEST_CASE("values are written in their sample type's unit") {
  // What `go tool pprof` prints for a CPU profile's cpu/nanoseconds total
  // of 1.76 s, and a heap profile's 116 GiB of alloc_space.
  CHECK(FormatValue({"cpu", "nanoseconds"}, 1'760'000'000) == "1.76 s");
  CHECK(FormatValue({"alloc_space", "bytes"}, int64_t{116} << 30) == "116 GiB");
  CHECK(FormatValue({"alloc_space", "kilobytes"}, 2048) == "2.0 MiB");
  CHECK(FormatValue({"delay", "microseconds"}, 1500) == "1.50 ms");
  CHECK(FormatValue({"samples", "count"}, 12'345) == "12.3k samples");
  CHECK(FormatValue({"samples", "count"}, 1) == "1 sample");
  CHECK(FormatValue({"inuse_objects", "count"}, 3) == "3 objects");
  CHECK(FormatValue({"events", "count"}, 7) == "7 events");
  CHECK(FormatValue({"off_cpu", "nanoseconds"}, 90'000'000'000) == "1m 30s");
  // An unknown unit keeps its name; an unknown count type names itself.
  CHECK(FormatValue({"gc", "pauses"}, 4) == "4 pauses");
  CHECK(FormatValue({"goroutine", "count"}, 12) == "12 goroutine");
  CHECK(FormatValueShort({"samples", "count"}, 12'345) == "12.3k");
  CHECK(FormatValue({"cpu", "nanoseconds"}, -2'000'000) == "-2.00 ms");
}

TEST_CASE("sample types have labels, and unknown ones keep their own name and unit") {
  CHECK(SampleTypeLabel(OnCpuSamples()) == "On-CPU (samples)");
  CHECK(SampleTypeLabel({"cpu", "nanoseconds"}) == "CPU time (ns)");
  CHECK(SampleTypeLabel(OffCpuTime()) == "Off-CPU (ns)");
  CHECK(SampleTypeLabel({"alloc_space", "bytes"}) == "Allocated bytes");
  CHECK(SampleTypeLabel({"inuse_objects", "count"}) == "In-use objects");
  CHECK(SampleTypeLabel(ProbeEvents()) == "Probe events");
  CHECK(SampleTypeLabel({"gc_pause", "milliseconds"}) == "gc_pause (milliseconds)");
  CHECK(SampleTypeName({"alloc_space", "bytes"}) == "alloc_space/bytes");
}

TEST_CASE("a sample type is found by type/unit, type name or alias; the default is pprof's") {
  const std::vector<SampleType> heap = {
      {"alloc_objects", "count"}, {"alloc_space", "bytes"}, {"inuse_objects", "count"}, {"inuse_space", "bytes"}};
  CHECK(FindSampleType("alloc_space", heap) == SampleType{"alloc_space", "bytes"});
  CHECK(FindSampleType("inuse_objects/count", heap) == SampleType{"inuse_objects", "count"});
  CHECK_FALSE(FindSampleType("cpu", heap).has_value());
  CHECK(FindSampleType("off-cpu", {OnCpuSamples(), OffCpuTime()}) == OffCpuTime());
  CHECK(FindSampleType("on-cpu", {OnCpuSamples(), OffCpuTime()}) == OnCpuSamples());
  CHECK(DefaultSampleType(heap) == SampleType{"inuse_space", "bytes"});
  CHECK(DefaultSampleType(heap, "alloc_space") == SampleType{"alloc_space", "bytes"});
  CHECK(DefaultSampleType(heap, "missing") == SampleType{"inuse_space", "bytes"});
  CHECK(DefaultSampleType({}) == OnCpuSamples());
  CHECK(OnCpuOrFirst(heap) == SampleType{"alloc_objects", "count"});
  CHECK(OnCpuOrFirst({OffCpuTime(), OnCpuSamples()}) == OnCpuSamples());
  CHECK(OnCpuOrFirst({}) == OnCpuSamples());
}

TEST_CASE("a dictionary's sample types dedupe by type and keep the newest period") {
  ProfileDictionary d;
  CHECK(d.AddSampleType({OnCpuSamples(), "cpu", "nanoseconds", 10'000'000}) == 0);
  CHECK(d.sample_types[0].period == 10'000'000);
  uint32_t off = d.AddSampleType({OffCpuTime()});
  CHECK(off == 1);
  CHECK(d.AddSampleType({OffCpuTime()}) == off);
  CHECK(d.AddSampleType({OnCpuSamples()}) == 0);
  CHECK(d.sample_types[0].period == 10'000'000);  // no period: the known one stays
}

TEST_CASE("attribute sets are sorted by key and the last repeated key wins") {
  ProfileDictionary d;
  uint32_t b = d.AddString("b"), a = d.AddString("a"), v1 = d.AddString("1"), v2 = d.AddString("2");
  uint32_t set = d.AddAttributeSet({{b, v1}, {a, v1}, {b, v2}});
  REQUIRE(d.AttributeSet(set).size() == 2);
  CHECK(d.AttributeValue(set, "a") == "1");
  CHECK(d.AttributeValue(set, "b") == "2");
  CHECK(d.AttributeValue(set, "c").empty());
  CHECK(d.strings[d.AttributeSet(set).begin()->key] == "a");
}

TEST_CASE("frame labels: function name, else executable basename plus address") {
  ProfileDictionary d;
  Frame named;
  named.function = d.AddString("main");
  d.frames.push_back(named);
  Executable e;
  e.file_name = d.AddString("/usr/lib/libc.so.6");
  d.executables.push_back(e);
  Frame raw;
  raw.executable = 1;
  raw.address = 0x1f2a;
  d.frames.push_back(raw);
  Frame bare;
  bare.address = 0xABC;
  d.frames.push_back(bare);
  CHECK(FrameLabel(d, 1) == "main");
  CHECK(FrameLabel(d, 2) == "libc.so.6+0x1f2a");
  CHECK(FrameLabel(d, 3) == "0xabc");
}

}  // namespace kiln::storage

namespace kiln::storage {

TEST_CASE("text made valid UTF-8: valid text is kept, every bad byte becomes U+FFFD") {
  CHECK(ToValidUtf8("plain, caf\xc3\xa9, \xe2\x82\xac, \xf0\x9f\x94\xa5") ==
        "plain, caf\xc3\xa9, \xe2\x82\xac, \xf0\x9f\x94\xa5");
  const std::string r = "\xef\xbf\xbd";
  CHECK(ToValidUtf8("caf\xe9") == "caf" + r);               // Latin-1
  CHECK(ToValidUtf8("\xc0\xaf") == r + r);                  // overlong '/'
  CHECK(ToValidUtf8("\xed\xa0\x80") == r + r + r);          // a surrogate
  CHECK(ToValidUtf8("\xf4\x90\x80\x80") == r + r + r + r);  // past U+10FFFF
  CHECK(ToValidUtf8("ab\xe2\x82") == "ab" + r + r);         // cut short
  CHECK(ToValidUtf8(std::string("a\0b", 3)) == std::string("a\0b", 3));
  CHECK(ToValidUtf8("").empty());
}

}  // namespace kiln::storage
