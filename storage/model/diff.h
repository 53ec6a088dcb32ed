// Differential profiles: a baseline and a target merged into one tree, and
// per node how its share of the whole changed and whether the change is
// more than sampling noise.
//
// Which test: each sample either lands in a node or not, so a node's share
// is a proportion of its side's samples, and "did the share change" is a
// two-proportion z-test on sample counts (pooled standard error). It needs
// only the two counts and the two totals, which every node has, and it
// answers in O(1) per node for trees of millions of nodes. The flame graph
// tests every node at once, so a 5 % level would colour about one in twenty
// unchanged nodes; a node is called significant at |z| >= 3.29 (two-sided
// p < 0.001). Counts are samples: the weight of a count-valued type
// (samples, events), else the number of sample entries (weights in ns or
// bytes are not independent trials).
#pragma once

#include <cstdint>
#include <vector>

#include "storage/model/flame_tree.h"

namespace kiln::storage {

struct DiffTree {
  // The union of both sides' paths, as a diff flame graph lays it out: a
  // node's total is the mean of its shares of both sides (in units of 1e-9
  // of the whole, so children still fit in their parent and nodes gone
  // from the target stay visible), its self what its children leave.
  FlameTree tree;
  std::vector<NodeWeights> base;    // each side's own weights per node
  std::vector<NodeWeights> target;
  SampleTypeInfo sample_type;      // the target's
  int64_t base_total = 0;          // the sides' totals (the roots' weights)
  int64_t target_total = 0;
  uint64_t base_events = 0;
  uint64_t target_events = 0;
};

// Both sides are transformed and grouped by `options` before they merge.
DiffTree BuildDiffTree(std::shared_ptr<const ProfileSlice> base, std::shared_ptr<const ProfileSlice> target,
                       const FlameTreeOptions& options);
// The same from stacks already transformed (StacksFor with `options`),
// which are grouped by `options` here.
DiffTree BuildDiffTree(const Stacks& base, const Stacks& target, const FlameTreeOptions& options);

inline constexpr double kSignificantZ = 3.29;  // two-sided p < 0.001

struct NodeChange {
  int64_t base = 0;     // total weight of the node on each side
  int64_t target = 0;
  double base_share = 0;    // of its side's total, 0..1
  double target_share = 0;
  // normalized: target_share - base_share; absolute: (target - base)
  // relative to the larger of the two sides' totals. -1..1.
  double change = 0;
  double z = 0;  // two-proportion z on events; 0 when undefined
  bool significant = false;
  bool added = false;    // only in the target
  bool removed = false;  // only in the baseline
};
NodeChange CompareNode(const DiffTree& diff, uint32_t node, bool normalized = true);

// How strongly to colour a node: the change's sign, full at a change of
// 5 points of share (or of the larger total, absolute), and a quarter as
// strong when the test does not support it, so noise never looks like a
// finding. -1 (much less) .. 1 (much more).
double DiffStrength(const NodeChange& change);

// Where a subtree only one side has starts: the node is new (or gone) and
// its parent is not. Every node below is new (gone) too; a view that marks
// only the start stays readable.
enum class DiffMark : uint8_t { kNone, kNew, kGone };
DiffMark SubtreeMarkOf(const DiffTree& diff, uint32_t node);

// The z statistic for `a` of `n` samples against `b` of `m` (0 when either
// total is 0 or the pooled proportion is 0 or 1).
// One side of a comparison: a part (a node, a function) of a whole.
struct Proportion {
  int64_t weight = 0, total_weight = 0;   // the part's and the whole's
  uint64_t events = 0, total_events = 0;  // numbers of sample entries
};
// The z of the change in the part's share from `base` to `target`: a
// count-valued type's weights are its samples; otherwise the entries are
// (pre-aggregated pprof entries undercount them, which only makes the test
// more cautious).
double ShareChangeZ(const SampleType& type, const Proportion& base, const Proportion& target);
double TwoProportionZ(uint64_t a, uint64_t n, uint64_t b, uint64_t m);

}  // namespace kiln::storage
