#include "storage/model/diff.h"

#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <random>

#include "absl/strings/str_cat.h"
#include "storage/model/folded.h"
#include "storage/model/test_fixtures.h"

namespace kiln::storage {
namespace {

// The union tree, one node per line: label, base total, target total, and
// + / - for nodes only in the target / baseline.
std::string PrintDiff(const DiffTree& diff) {
  std::string out;
  std::vector<uint32_t> stack = {0};
  while (!stack.empty()) {
    uint32_t i = stack.back();
    stack.pop_back();
    const FlameNode& n = diff.tree.nodes[i];
    NodeChange c = CompareNode(diff, i);
    absl::StrAppend(&out, std::string(n.depth * 2u, ' '), diff.tree.Label(i), " ", c.base, " ", c.target,
                    c.added ? " +" : "", c.removed ? " -" : "", "\n");
    for (uint32_t k = n.child_count; k > 0; --k) stack.push_back(n.first_child + k - 1);
  }
  return out;
}

DiffTree Diff(std::string_view base, std::string_view target, FlameTreeOptions options = {}) {
  return BuildDiffTree(testing::WholeSlice(testing::BatchFromFolded(base)),
                       testing::WholeSlice(testing::BatchFromFolded(target)), options);
}

uint32_t Find(const DiffTree& diff, std::string_view label) {
  for (uint32_t i = 0; i < diff.tree.nodes.size(); ++i) {
    if (diff.tree.Label(i) == label) return i;
  }
  FAIL("no node " << label);
  return 0;
}

}  // namespace

TEST_CASE("diff tree: the union of both sides, each node with both weights") {
  DiffTree d = Diff("main;a 6\nmain;b 4", "main;a 3\nmain;c 5");
  CHECK(PrintDiff(d) ==
        "all 10 8\n"
        "  main 10 8\n"
        "    a 6 3\n"
        "    b 4 0 -\n"
        "    c 0 5 +\n");
  CHECK(d.base_total == 10);
  CHECK(d.target_total == 8);
  // A node only in the baseline has no frame of the target's slice.
  CHECK(d.tree.nodes[Find(d, "b")].frame == 0);
  CHECK(d.tree.nodes[Find(d, "c")].frame != 0);
  CHECK(d.tree.nodes[Find(d, "a")].frame != 0);
}

TEST_CASE("diff: shares are of each side's total; absolute change on request") {
  DiffTree d = Diff("main;a 50\nmain;b 50", "main;a 150\nmain;b 50");
  NodeChange a = CompareNode(d, Find(d, "a"));
  CHECK(a.base_share == doctest::Approx(0.5));
  CHECK(a.target_share == doctest::Approx(0.75));
  CHECK(a.change == doctest::Approx(0.25));
  NodeChange b = CompareNode(d, Find(d, "b"));
  CHECK(b.change == doctest::Approx(-0.25));  // same weight, smaller share
  CHECK(CompareNode(d, Find(d, "b"), /*normalized=*/false).change == doctest::Approx(0.0));
  CHECK(CompareNode(d, Find(d, "a"), false).change == doctest::Approx(100.0 / 200.0));
}

TEST_CASE("diff: significance is a two-proportion z-test on sample counts") {
  // Reference: z = (p2 - p1) / sqrt(p (1 - p) (1/n + 1/m)), p pooled.
  const double p1 = 30.0 / 100, p2 = 45.0 / 100, p = 75.0 / 200;
  const double z = (p2 - p1) / std::sqrt(p * (1 - p) * (1.0 / 100 + 1.0 / 100));
  CHECK(TwoProportionZ(30, 100, 45, 100) == doctest::Approx(z));
  CHECK(TwoProportionZ(0, 0, 1, 10) == 0);
  CHECK(TwoProportionZ(10, 10, 10, 10) == 0);  // pooled share 1: no variance

  // 30 % -> 45 % of 100 samples is noise at p < 0.001 (z ~ 2.2); of 10 000
  // samples it is not (z ~ 22).
  DiffTree few = Diff("main;a 30\nmain;b 70", "main;a 45\nmain;b 55");
  CHECK(!CompareNode(few, Find(few, "a")).significant);
  DiffTree many = Diff("main;a 3000\nmain;b 7000", "main;a 4500\nmain;b 5500");
  NodeChange a = CompareNode(many, Find(many, "a"));
  CHECK(a.significant);
  CHECK(a.z > 20);
  CHECK(CompareNode(many, Find(many, "b")).z < -20);
  CHECK(!CompareNode(many, 0).significant);  // the root is always 100 %

  // Time-valued samples: the trials are the samples, not the nanoseconds
  // (100 samples of 10 ms are still 100 samples).
  const SampleTypeInfo cpu_ns{{"cpu", "nanoseconds"}, "cpu", "nanoseconds", 10'000'000};
  testing::FoldedFixtureOptions timed{.sample_type = cpu_ns, .value = 10'000'000};
  DiffTree ns = BuildDiffTree(testing::WholeSlice(testing::BatchFromFolded("main;a 30\nmain;b 70", timed)),
                              testing::WholeSlice(testing::BatchFromFolded("main;a 45\nmain;b 55", timed)), {});
  NodeChange ns_a = CompareNode(ns, Find(ns, "a"));
  CHECK(ns_a.base == 300'000'000);
  CHECK(ns_a.z == doctest::Approx(CompareNode(few, Find(few, "a")).z));
  CHECK(!ns_a.significant);
}

TEST_CASE("diff: both sides are transformed and grouped alike") {
  FlameTreeOptions options{.group_by = GroupBy::kNone};
  options.transforms.push_back(*ParseTransform("invert"));
  DiffTree d = Diff("main;a;leaf 2", "main;b;leaf 3", options);
  CHECK(PrintDiff(d) ==
        "all 2 3\n"
        "  leaf 2 3\n"
        "    a 2 0 -\n"
        "      main 2 0 -\n"
        "    b 0 3 +\n"
        "      main 0 3 +\n");
}

}  // namespace kiln::storage

namespace kiln::storage {

TEST_CASE("new and gone are marked where their subtree starts, not below") {
  DiffTree d = Diff("main;a;x 6\nmain;b;y;z 4", "main;a;x 3\nmain;c;w 5");
  CHECK(SubtreeMarkOf(d, Find(d, "c")) == DiffMark::kNew);
  CHECK(SubtreeMarkOf(d, Find(d, "w")) == DiffMark::kNone);  // under c
  CHECK(SubtreeMarkOf(d, Find(d, "b")) == DiffMark::kGone);
  CHECK(SubtreeMarkOf(d, Find(d, "y")) == DiffMark::kNone);
  CHECK(SubtreeMarkOf(d, Find(d, "z")) == DiffMark::kNone);
  CHECK(SubtreeMarkOf(d, Find(d, "a")) == DiffMark::kNone);  // on both sides
  CHECK(SubtreeMarkOf(d, 0) == DiffMark::kNone);
}

TEST_CASE("diff tree layout: widths are the mean of both shares, children fit their parent, weights kept") {
  DiffTree d = Diff("main;a 6\nmain;b 4", "main;a 3\nmain;c 5");
  const FlameTree& display = d.tree;
  auto width = [&](std::string_view label) { return display.nodes[Find(d, label)].total; };
  CHECK(display.nodes[0].total == 1'000'000'000);
  CHECK(width("a") == 487'500'000);  // (0.6 + 0.375) / 2
  CHECK(width("b") == 200'000'000);  // gone, still visible: (0.4 + 0) / 2
  CHECK(width("c") == 312'500'000);  // new: (0 + 0.625) / 2
  for (const FlameNode& n : display.nodes) {
    int64_t children = 0;
    for (uint32_t c = n.first_child; c < n.first_child + n.child_count; ++c) children += display.nodes[c].total;
    CHECK(n.total == n.self + children);
  }
  // Each side's own weights stay beside the widths.
  CHECK(d.base[Find(d, "a")].total == 6);
  CHECK(d.target[Find(d, "a")].total == 3);
  CHECK(d.target[Find(d, "c")].self == 5);
  CHECK(d.base[Find(d, "c")].total == 0);
}

TEST_CASE("diff strength: sign of the change, pale unless significant") {
  NodeChange c;
  c.change = 0.025;
  c.significant = true;
  CHECK(DiffStrength(c) == doctest::Approx(0.5));
  c.significant = false;
  CHECK(DiffStrength(c) == doctest::Approx(0.125));
  c.change = -0.3;
  c.significant = true;
  CHECK(DiffStrength(c) == doctest::Approx(-1.0));
}

TEST_CASE("a diff of two 40 k-stack sides (built in parallel halves) holds both sides' weights exactly") {
  // Overlapping random stacks: many on both sides, some on one only. The
  // expected lines are summed per stack by a map, not by the builder.
  std::mt19937 rng(11);
  std::map<std::string, std::pair<int64_t, int64_t>> expected;
  std::string base, target;
  for (int i = 0; i < 40000; ++i) {
    std::string stack = "main";
    for (int d = 0, n = 2 + static_cast<int>(rng() % 9); d < n; ++d) stack += ";f" + std::to_string(rng() % 40);
    const int64_t count = 1 + static_cast<int64_t>(rng() % 4);
    const int side = static_cast<int>(rng() % 4);  // 0: base, 1: target, 2-3: both
    if (side != 1) {
      base += stack + " " + std::to_string(count) + "\n";
      expected[stack].first += count;
    }
    if (side != 0) {
      target += stack + " " + std::to_string(count + 1) + "\n";
      expected[stack].second += count + 1;
    }
  }
  const DiffTree d = Diff(base, target, {.group_by = GroupBy::kNone});
  std::vector<std::string> want;
  for (const auto& [stack, w] : expected) want.push_back(absl::StrCat(stack, " ", w.first, " ", w.second));
  std::sort(want.begin(), want.end());
  CHECK(DiffFoldedLines(d, {}) == want);
  // A node names a frame exactly when the target (the primary side) has it.
  for (uint32_t i = 1; i < d.tree.nodes.size(); ++i) {
    if ((d.tree.nodes[i].frame != 0) != (d.target[i].total > 0)) FAIL_CHECK("node " << d.tree.Label(i));
  }
  CHECK(d.base_total > 0);
  CHECK(d.target_total > 0);
}

TEST_CASE("a diff whose halves split a stack both sides have still counts it once per side") {
  // Every stack on both sides makes pairs of equal entries next to each
  // other; one more baseline stack sorting first shifts them so the
  // halves split a pair: the second half then adds to a node the first
  // half made, and names its frame.
  std::string both;
  for (int i = 0; i < 20000; ++i) both += absl::StrCat("main;f", i / 100, ";g", i % 100, " ", 1 + i % 3, "\n");
  const DiffTree d = Diff("a 5\n" + both, both, {.group_by = GroupBy::kNone});
  std::vector<std::string> want = {"a 5 0"};
  for (int i = 0; i < 20000; ++i) want.push_back(absl::StrCat("main;f", i / 100, ";g", i % 100, " ", 1 + i % 3, " ", 1 + i % 3));
  std::sort(want.begin(), want.end());
  CHECK(DiffFoldedLines(d, {}) == want);
  for (uint32_t i = 1; i < d.tree.nodes.size(); ++i) {
    if ((d.tree.nodes[i].frame != 0) != (d.target[i].total > 0)) FAIL_CHECK("node " << d.tree.Label(i));
  }
}

}  // namespace kiln::storage
