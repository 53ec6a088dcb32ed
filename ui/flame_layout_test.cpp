#include "ui/flame_layout.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include "ui/test_trees.h"

namespace kiln::ui {
namespace {

using testing::TreeFromFolded;

// One line per rect in row order: depth, label (or "[merged N..]"), x, width.
std::string PrintLayout(const storage::FlameTree& tree, const FlameLayout& layout) {
  std::string out;
  char buf[160];
  for (const FlameRect& r : layout.rects) {
    std::snprintf(buf, sizeof buf, "%d %s%s x=%.1f w=%.1f\n", r.depth, r.merged ? "[merged] " : "",
                  tree.Label(r.node).c_str(), r.x, r.width);
    out += buf;
  }
  return out;
}

constexpr const char* kFolded =
    "main;a;x 2\n"
    "main;a;y 2\n"
    "main;b 4\n";

TEST_CASE("left offsets follow tree order") {
  const auto tree = TreeFromFolded(kFolded);
  const auto left = ComputeLeftOffsets(tree);
  REQUIRE(tree.nodes.size() == 6);
  // all, main, a, b, x, y (breadth first, children sorted)
  CHECK(left[0] == 0);
  CHECK(left[1] == 0);
  CHECK(tree.Label(3) == "b");
  CHECK(left[3] == 4);
  CHECK(tree.Label(5) == "y");
  CHECK(left[5] == 2);
}

TEST_CASE("layout of the whole tree at 80 px") {
  const auto tree = TreeFromFolded(kFolded);
  const auto layout = LayoutFlame(tree, ComputeLeftOffsets(tree), 0, 80.f);
  CHECK(PrintLayout(tree, layout) ==
        "0 all x=0.0 w=80.0\n"
        "1 main x=0.0 w=80.0\n"
        "2 a x=0.0 w=40.0\n"
        "2 b x=40.0 w=40.0\n"
        "3 x x=0.0 w=20.0\n"
        "3 y x=20.0 w=20.0\n");
  CHECK(layout.Rows() == 4);
}

TEST_CASE("zooming puts the node full width with ancestors above") {
  const auto tree = TreeFromFolded(kFolded);
  const auto left = ComputeLeftOffsets(tree);
  const uint32_t a = 2;
  REQUIRE(tree.Label(a) == "a");
  const auto layout = LayoutFlame(tree, left, a, 100.f);
  CHECK(PrintLayout(tree, layout) ==
        "0 all x=0.0 w=100.0\n"
        "1 main x=0.0 w=100.0\n"
        "2 a x=0.0 w=100.0\n"
        "3 x x=0.0 w=50.0\n"
        "3 y x=50.0 w=50.0\n");
  CHECK(layout.rects[0].ancestor);
  CHECK_FALSE(layout.rects[2].ancestor);
}

TEST_CASE("sub-pixel siblings merge into runs; tiny subtrees are not visited") {
  std::string folded = "main;big;deep 1000\n";
  for (int i = 0; i < 10; ++i) folded += "main;t" + std::to_string(i) + ";under 1\n";
  const auto tree = TreeFromFolded(folded);
  // 1010 weight over 102 px: each tiny node is ~0.1 px, the ten make ~1 px.
  const auto layout = LayoutFlame(tree, ComputeLeftOffsets(tree), 0, 102.f);
  const std::string printed = PrintLayout(tree, layout);
  CHECK(printed.find("[merged] t0") != std::string::npos);
  CHECK(printed.find("under") == std::string::npos);
  int merged = 0;
  for (const auto& r : layout.rects) merged += r.merged;
  CHECK(merged == 1);
}

TEST_CASE("runs narrower than the threshold are skipped and counted") {
  const auto tree = TreeFromFolded("main;big 100000\nmain;tiny 1\n");
  const auto layout = LayoutFlame(tree, ComputeLeftOffsets(tree), 0, 100.f);
  CHECK(layout.skipped_nodes == 1);
  CHECK(PrintLayout(tree, layout).find("tiny") == std::string::npos);
}

TEST_CASE("hit testing finds the rect under x in a row") {
  const auto tree = TreeFromFolded(kFolded);
  const auto layout = LayoutFlame(tree, ComputeLeftOffsets(tree), 0, 80.f);
  auto label_at = [&](float x, int depth) -> std::string {
    const int i = HitTest(layout, x, depth);
    return i < 0 ? "-" : tree.Label(layout.rects[i].node);
  };
  CHECK(label_at(10, 0) == "all");
  CHECK(label_at(39.9f, 2) == "a");
  CHECK(label_at(40.f, 2) == "b");
  CHECK(label_at(25, 3) == "y");
  CHECK(label_at(60, 3) == "-");  // b has no children
  CHECK(label_at(85, 1) == "-");  // right of the graph
  CHECK(label_at(10, 9) == "-");  // below the deepest row
}

TEST_CASE("icicle and flame rows map both ways") {
  CHECK(RowTop(0, 4, 20.f, false) == 0.f);
  CHECK(RowTop(0, 4, 20.f, true) == 60.f);
  CHECK(RowAt(65.f, 4, 20.f, true) == 0);
  CHECK(RowAt(65.f, 4, 20.f, false) == 3);
  CHECK(RowAt(85.f, 4, 20.f, false) == -1);
  CHECK(RowAt(-1.f, 4, 20.f, false) == -1);
}

TEST_CASE("breadcrumb path and common ancestor") {
  const auto tree = TreeFromFolded(kFolded);
  const auto path = PathToNode(tree, 5);  // y
  REQUIRE(path.size() == 4);
  CHECK(tree.Label(path[1]) == "main");
  CHECK(tree.Label(path[2]) == "a");
  CHECK(tree.Label(CommonAncestor(tree, {4, 5})) == "a");
  CHECK(tree.Label(CommonAncestor(tree, {4, 3})) == "main");
  CHECK(CommonAncestor(tree, {}) == 0);
}

TEST_CASE("frame type weights for the legend") {
  const auto tree = TreeFromFolded("main;read_[k] 3\nmain;fib_[py];fib_[py] 2\n");
  const FrameTypeWeights w = ComputeFrameTypeWeights(tree);
  CHECK(w.self[static_cast<int>(storage::FrameType::kKernel)] == 3);
  CHECK(w.self[static_cast<int>(storage::FrameType::kPython)] == 2);
  CHECK(w.present[static_cast<int>(storage::FrameType::kNative)]);  // main: no self weight, still listed
  CHECK_FALSE(w.present[static_cast<int>(storage::FrameType::kGo)]);
}

TEST_CASE("a million-node tree lays out only what is visible") {
  const auto tree = testing::SyntheticTree(1'000'000);
  CHECK(tree.nodes.size() == 1'000'000);
  const auto left = ComputeLeftOffsets(tree);
  const auto layout = LayoutFlame(tree, left, 0, 1920.f);
  CHECK(layout.rects.size() < 100'000);
  CHECK(layout.rects.size() > 100);
}

}  // namespace
}  // namespace kiln::ui

namespace kiln::ui {

TEST_CASE("arrow keys move to the parent, the heaviest child and the siblings") {
  const auto tree = testing::TreeFromFolded("main;a;x 2\nmain;a;y 2\nmain;b 4\n");
  auto find = [&](std::string_view label) {
    for (uint32_t i = 0; i < tree.nodes.size(); ++i) {
      if (tree.Label(i) == label) return i;
    }
    return UINT32_MAX;
  };
  const uint32_t main = find("main"), a = find("a"), b = find("b"), x = find("x"), y = find("y");
  CHECK(MoveInFlame(tree, 0, FlameMove::kHeaviestChild) == main);
  CHECK(MoveInFlame(tree, main, FlameMove::kHeaviestChild) == a);  // a and b weigh 4: the first
  CHECK(MoveInFlame(tree, a, FlameMove::kNextSibling) == b);
  CHECK(MoveInFlame(tree, b, FlameMove::kNextSibling) == b);  // the last stays
  CHECK(MoveInFlame(tree, b, FlameMove::kPreviousSibling) == a);
  CHECK(MoveInFlame(tree, a, FlameMove::kPreviousSibling) == a);
  CHECK(MoveInFlame(tree, x, FlameMove::kNextSibling) == y);
  CHECK(MoveInFlame(tree, y, FlameMove::kParent) == a);
  CHECK(MoveInFlame(tree, b, FlameMove::kHeaviestChild) == b);  // a leaf
  CHECK(MoveInFlame(tree, 0, FlameMove::kParent) == 0);
  CHECK(MoveInFlame(tree, 0, FlameMove::kNextSibling) == 0);
  CHECK(IsAncestorOrSelf(tree, a, y));
  CHECK(IsAncestorOrSelf(tree, 0, y));
  CHECK(!IsAncestorOrSelf(tree, b, y));
  // Down goes where the time went, not to the leftmost sliver.
  const auto skewed = testing::TreeFromFolded("main;aaa 1\nmain;hot 90\nmain;zzz 9\n");
  uint32_t hot = 0, skewed_main = 0;
  for (uint32_t i = 0; i < skewed.nodes.size(); ++i) {
    if (skewed.Label(i) == "hot") hot = i;
    if (skewed.Label(i) == "main") skewed_main = i;
  }
  CHECK(MoveInFlame(skewed, skewed_main, FlameMove::kHeaviestChild) == hot);
}

}  // namespace kiln::ui
