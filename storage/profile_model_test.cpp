#include "storage/profile_model.h"

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

TEST_CASE("sample kind names parse") {
  SampleKind k{};
  CHECK(ParseSampleKind("off-cpu", &k));
  CHECK(k == SampleKind::kOffCpu);
  CHECK_FALSE(ParseSampleKind("offcpu", &k));
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
