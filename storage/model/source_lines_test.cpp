#include "storage/model/source_lines.h"

#include <doctest/doctest.h>

#include "storage/model/test_fixtures.h"

namespace kiln::storage {

namespace {

// f at a.c lines 10 and 12 (12 recursing into 10), g calling f, and h
// inlined into f from util.h.
ProfileBatch Program() {
  ProfileBatch b;
  ProfileDictionary& d = b.dict;
  const uint32_t a_c = d.AddString("/src/a.c"), util_h = d.AddString("/src/util.h");
  auto frame = [&](std::string_view fn, uint32_t file, int64_t line, bool inlined = false) {
    Frame f;
    f.function = d.AddString(fn);
    f.file = file;
    f.line = line;
    f.type = FrameType::kNative;
    f.inlined = inlined;
    d.frames.push_back(f);
    return static_cast<uint32_t>(d.frames.size() - 1);
  };
  const uint32_t g = frame("g", a_c, 30), f10 = frame("f", a_c, 10), f12 = frame("f", a_c, 12),
                 h = frame("h", util_h, 4, true);
  auto add = [&](std::vector<uint32_t> stack, int64_t value) {
    b.samples.push_back({1, d.AddStack(stack), 0, 0, 0, value});
  };
  add({g, f10}, 5);            // self at line 10
  add({g, f12, f10}, 3);       // recursion: total once per line, self at 10
  add({g, f12}, 2);            // self at 12
  add({g, f12, h}, 4);         // h inlined: f is not the leaf
  return b;
}

}  // namespace

TEST_CASE("source lines: self at the leaf's line, total once per stack and line") {
  auto slice = testing::WholeSlice(Program());
  std::vector<FunctionSource> f = SourceLinesOf(*slice, "f");
  REQUIRE(f.size() == 1);
  CHECK(f[0].file == "/src/a.c");
  CHECK(f[0].total == 14);
  CHECK(f[0].self == 10);
  REQUIRE(f[0].lines.size() == 2);
  CHECK(f[0].lines[0].line == 10);
  CHECK(f[0].lines[0].self == 8);
  CHECK(f[0].lines[0].total == 8);
  CHECK(f[0].lines[1].line == 12);
  CHECK(f[0].lines[1].self == 2);
  CHECK(f[0].lines[1].total == 9);
  CHECK(f[0].HottestLine() == 12);
  // Without inline frames h's weight is f's own, at line 12.
  std::vector<FunctionSource> outer = SourceLinesOf(*slice, "f", false);
  CHECK(outer[0].lines[1].self == 6);
  CHECK(SourceLinesOf(*slice, "h")[0].file == "/src/util.h");
  CHECK(SourceLinesOf(*slice, "nothing").empty());
}

TEST_CASE("source paths map by whole-component prefixes") {
  const std::vector<std::pair<std::string, std::string>> map = {{"/build/src", "/home/me/src"}};
  CHECK(MapSourcePath("/build/src/a.c", map) == "/home/me/src/a.c");
  CHECK(MapSourcePath("/build/srcx/a.c", map) == "/build/srcx/a.c");
  CHECK(MapSourcePath("/other/a.c", map) == "/other/a.c");
}

}  // namespace kiln::storage
