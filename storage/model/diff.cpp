#include "storage/model/diff.h"

#include <algorithm>
#include <cmath>

namespace kiln::storage {

DiffTree BuildDiffTree(std::shared_ptr<const ProfileSlice> base, std::shared_ptr<const ProfileSlice> target,
                       const FlameTreeOptions& options) {
  return BuildDiffTree(StacksFor(std::move(base), options), StacksFor(std::move(target), options), options);
}

namespace {

// The node totals become display widths (see DiffTree::tree) after the
// target's own weights are moved beside the baseline's.
void LayOut(DiffTree* diff) {
  std::vector<FlameNode>& nodes = diff->tree.nodes;
  diff->target.resize(nodes.size());
  constexpr double kScale = 1e9;
  const double b_total = static_cast<double>(std::max<int64_t>(diff->base_total, 0));
  const double t_total = static_cast<double>(std::max<int64_t>(diff->target_total, 0));
  for (size_t i = 0; i < nodes.size(); ++i) {
    FlameNode& n = nodes[i];
    diff->target[i] = {n.total, n.self, n.events};
    const double b = b_total > 0 ? static_cast<double>(diff->base[i].total) / b_total : 0;
    const double t = t_total > 0 ? static_cast<double>(n.total) / t_total : 0;
    n.total = std::llround((b + t) / 2 * kScale);
  }
  // Self is what the children leave (rounding must never let children
  // outgrow their parent). Children come after their parent: bottom-up.
  for (size_t i = nodes.size(); i-- > 0;) {
    FlameNode& n = nodes[i];
    int64_t children = 0;
    for (uint32_t c = n.first_child; c < n.first_child + n.child_count; ++c) children += nodes[c].total;
    if (children > n.total) n.total = children;
    n.self = n.total - children;
  }
}

}  // namespace

DiffTree BuildDiffTree(const Stacks& base, const Stacks& target, const FlameTreeOptions& options) {
  DiffTree diff;
  diff.tree = BuildUnionTree({&base, &target}, options, &diff.base);
  if (target.slice) diff.sample_type = target.slice->sample_type;
  diff.target_total = diff.tree.nodes[0].total;
  diff.target_events = diff.tree.nodes[0].events;
  if (!diff.base.empty()) {
    diff.base_total = diff.base[0].total;
    diff.base_events = diff.base[0].events;
  } else {
    diff.base.assign(diff.tree.nodes.size(), NodeWeights{});
  }
  LayOut(&diff);
  return diff;
}

double TwoProportionZ(uint64_t a, uint64_t n, uint64_t b, uint64_t m) {
  if (n == 0 || m == 0) return 0;
  const double p1 = static_cast<double>(a) / static_cast<double>(n);
  const double p2 = static_cast<double>(b) / static_cast<double>(m);
  const double pooled = static_cast<double>(a + b) / static_cast<double>(n + m);
  const double variance = pooled * (1 - pooled) * (1.0 / static_cast<double>(n) + 1.0 / static_cast<double>(m));
  if (variance <= 0) return 0;
  return (p2 - p1) / std::sqrt(variance);
}

double ShareChangeZ(const SampleType& type, const Proportion& base, const Proportion& target) {
  auto count = [](int64_t w) { return static_cast<uint64_t>(std::max<int64_t>(w, 0)); };
  if (ClassOfUnit(type.unit) == UnitClass::kCount) {
    return TwoProportionZ(count(base.weight), count(base.total_weight), count(target.weight),
                          count(target.total_weight));
  }
  return TwoProportionZ(base.events, base.total_events, target.events, target.total_events);
}

NodeChange CompareNode(const DiffTree& diff, uint32_t node, bool normalized) {
  NodeChange c;
  const NodeWeights& n = diff.target[node];
  const NodeWeights& b = diff.base[node];
  c.base = b.total;
  c.target = n.total;
  c.base_share = diff.base_total > 0 ? static_cast<double>(b.total) / static_cast<double>(diff.base_total) : 0;
  c.target_share =
      diff.target_total > 0 ? static_cast<double>(n.total) / static_cast<double>(diff.target_total) : 0;
  if (normalized) {
    c.change = c.target_share - c.base_share;
  } else {
    const int64_t scale = std::max(diff.base_total, diff.target_total);
    c.change = scale > 0 ? static_cast<double>(n.total - b.total) / static_cast<double>(scale) : 0;
  }
  c.z = ShareChangeZ(diff.sample_type.type, {b.total, diff.base_total, b.events, diff.base_events},
                     {n.total, diff.target_total, n.events, diff.target_events});
  c.significant = std::abs(c.z) >= kSignificantZ;
  c.added = b.total == 0 && b.events == 0 && (n.total != 0 || n.events != 0);
  c.removed = (n.total == 0 && n.events == 0) && (b.total != 0 || b.events != 0);
  return c;
}

DiffMark SubtreeMarkOf(const DiffTree& diff, uint32_t node) {
  if (node == 0 || node >= diff.tree.nodes.size()) return DiffMark::kNone;
  const NodeChange self = CompareNode(diff, node);
  if (!self.added && !self.removed) return DiffMark::kNone;
  const NodeChange parent = CompareNode(diff, diff.tree.nodes[node].parent);
  if (self.added && !parent.added) return DiffMark::kNew;
  if (self.removed && !parent.removed) return DiffMark::kGone;
  return DiffMark::kNone;
}

double DiffStrength(const NodeChange& change) {
  double strength = std::min(1.0, std::abs(change.change) * 20.0);
  if (!change.significant) strength *= 0.25;
  return change.change >= 0 ? strength : -strength;
}

}  // namespace kiln::storage
