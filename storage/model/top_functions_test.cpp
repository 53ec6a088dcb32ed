#include "storage/model/top_functions.h"

#include <doctest/doctest.h>

#include "storage/model/diff.h"
#include "storage/model/test_fixtures.h"
#include "storage/model/transforms.h"

namespace kiln::storage {

namespace {
const TopFunctionRow* Find(const std::vector<TopFunctionRow>& rows, std::string_view name) {
  for (const auto& r : rows) {
    if (r.function == name) return &r;
  }
  return nullptr;
}
}  // namespace

TEST_CASE("self is leaf weight, total counts recursion once per stack") {
  auto rows = BuildTopFunctions(testing::WholeSlice(testing::BatchFromFolded(R"(
main;fib;fib;fib 3
main;fib;print 1
main;sys_write@k 2
)")));
  REQUIRE(rows.size() == 4);
  CHECK(rows[0].function == "fib");
  CHECK(rows[0].self == 3);
  CHECK(rows[0].total == 4);
  CHECK(Find(rows, "main")->total == 6);
  CHECK(Find(rows, "main")->self == 0);
  CHECK(Find(rows, "sys_write")->type == FrameType::kKernel);
  CHECK(Find(rows, "sys_write")->self == 2);
}

TEST_CASE("hiding inline frames moves self weight to the outer function") {
  auto slice = testing::WholeSlice(testing::BatchFromFolded("main;helper@i 5"));
  CHECK(Find(BuildTopFunctions(slice, true), "helper")->self == 5);
  auto rows = BuildTopFunctions(slice, false);
  CHECK(Find(rows, "helper") == nullptr);
  CHECK(Find(rows, "main")->self == 5);
}

TEST_CASE("executables table: weight per executable once per stack, unsymbolized frames") {
  auto rows = BuildExecutableTable(*testing::WholeSlice(testing::BatchFromFolded(R"(
main;libc.so.6+0x10;libc.so.6+0x20 3
main;app+0x5 1
)")));
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].file_name == "libc.so.6");
  CHECK(rows[0].weight == 3);  // two frames in one stack count once
  CHECK(rows[0].frames == 2);
  CHECK(rows[0].unsymbolized_frames == 2);
  CHECK(rows.back().file_name == "app");
  CHECK(rows.back().weight == 1);
}

}  // namespace kiln::storage

namespace kiln::storage {

TEST_CASE("top functions are those of the transformed stacks") {
  auto slice = testing::WholeSlice(testing::BatchFromFolded("main;a;b 3\nmain;c 1"));
  auto merged = BuildTopFunctions(ApplyTransforms(StacksOf(slice), {*ParseTransform("merge=b")}));
  CHECK(Find(merged, "b") == nullptr);
  CHECK(Find(merged, "a")->self == 3);
  auto focused = BuildTopFunctions(ApplyTransforms(StacksOf(slice), {*ParseTransform("focus=c")}));
  REQUIRE(focused.size() == 1);
  CHECK(focused[0].function == "c");
  CHECK(focused[0].total == 1);
}

}  // namespace kiln::storage

namespace kiln::storage {

TEST_CASE("diff top functions: both sides joined, sorted by the change in total share") {
  auto base = StacksOf(testing::WholeSlice(testing::BatchFromFolded("main;a 6\nmain;b 4")));
  auto target = StacksOf(testing::WholeSlice(testing::BatchFromFolded("main;a 2\nmain;c 6")));
  auto rows = BuildDiffTopFunctions(base, target);
  REQUIRE(rows.size() == 4);
  CHECK(rows[0].function == "c");  // 0 -> 75 %
  CHECK(rows[0].target_total_share == doctest::Approx(0.75));
  CHECK(rows[2].function == "a");  // 60 % -> 25 %
  CHECK(rows[2].base_self == 6);
  CHECK(rows[2].target_self == 2);
  CHECK(rows[3].function == "b");  // 40 % -> gone
  CHECK(rows[3].target_total == 0);
}

TEST_CASE("diff top functions: a change is significant as the diff flame graph would call its node") {
  // Counts: `a` goes from 500 of 1000 samples to 530 of 1000 (z about 1.3,
  // noise) and `b` from 100 to 300 (z about 11).
  auto base = StacksOf(testing::WholeSlice(testing::BatchFromFolded("main;a 500\nmain;b 100\nmain;c 400")));
  auto target = StacksOf(testing::WholeSlice(testing::BatchFromFolded("main;a 530\nmain;b 300\nmain;c 170")));
  auto rows = BuildDiffTopFunctions(base, target);
  auto find = [&](std::string_view name) -> const DiffFunctionRow& {
    for (const DiffFunctionRow& r : rows) {
      if (r.function == name) return r;
    }
    FAIL("no row " << name);
    return rows.front();
  };
  const DiffFunctionRow& a = find("a");
  CHECK(a.z == doctest::Approx(TwoProportionZ(500, 1000, 530, 1000)));
  CHECK_FALSE(a.significant);
  CHECK(find("b").significant);
  CHECK(find("b").z > 10);
  CHECK(find("c").significant);
  CHECK(find("c").z < -10);
  // main holds everything on both sides: no change at all.
  CHECK(find("main").z == 0);
  CHECK_FALSE(find("main").significant);
  // The diff tree's own test gives the same z for the same part.
  const DiffTree diff = BuildDiffTree(base, target, {});
  for (uint32_t n = 1; n < diff.tree.nodes.size(); ++n) {
    if (diff.tree.nodes[n].depth == 2) {
      CHECK(CompareNode(diff, n).z == doctest::Approx(find(diff.tree.labels[diff.tree.nodes[n].label]).z));
    }
  }
}

}  // namespace kiln::storage
