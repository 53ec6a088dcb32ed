#include "ui/flame_layout.h"

#include <algorithm>

namespace kiln::ui {

using storage::FlameNode;
using storage::FlameTree;

std::vector<int64_t> ComputeLeftOffsets(const FlameTree& tree) {
  std::vector<int64_t> left(tree.nodes.size(), 0);
  if (tree.nodes.empty()) return left;
  // Explicit stack: recursion depth is unbounded in profiles (deep recursion).
  std::vector<uint32_t> stack{0};
  while (!stack.empty()) {
    const uint32_t n = stack.back();
    stack.pop_back();
    const FlameNode& node = tree.nodes[n];
    int64_t run = left[n];
    for (uint32_t i = 0; i < node.child_count; ++i) {
      const uint32_t c = node.first_child + i;
      left[c] = run;
      run += tree.nodes[c].total;
      if (tree.nodes[c].child_count > 0) stack.push_back(c);
    }
  }
  return left;
}

FlameLayout LayoutFlame(const FlameTree& tree, const std::vector<int64_t>& left, uint32_t zoom_node,
                        float width, float min_width) {
  FlameLayout layout;
  layout.width = width;
  if (tree.nodes.empty() || width <= 0) return layout;
  if (zoom_node >= tree.nodes.size()) zoom_node = 0;
  layout.zoom_node = zoom_node;

  std::vector<FlameRect> rects;
  // Ancestors and the zoomed node span the full width.
  for (uint32_t n : PathToNode(tree, zoom_node)) {
    rects.push_back({n, 0.f, width, tree.nodes[n].depth, false, n != zoom_node});
  }

  const FlameNode& zoom = tree.nodes[zoom_node];
  if (zoom.total > 0) {
    const double scale = static_cast<double>(width) / static_cast<double>(zoom.total);
    const int64_t origin = left[zoom_node];
    // Preorder walk; each popped node lays out all its children at once so
    // sub-pixel siblings can be merged into runs. Children are pushed in
    // reverse so the leftmost subtree is walked first, which keeps every
    // depth's rects in x order.
    std::vector<uint32_t> stack{zoom_node};
    std::vector<uint32_t> visible_children;
    while (!stack.empty()) {
      const FlameNode& node = tree.nodes[stack.back()];
      stack.pop_back();
      visible_children.clear();
      float run_x = 0, run_width = 0;
      uint32_t run_first = 0, run_count = 0;
      auto flush_run = [&] {
        if (run_count > 0) {
          if (run_width >= min_width) {
            rects.push_back(
                {run_first, run_x, run_width, static_cast<uint16_t>(node.depth + 1), true, false});
          } else {
            layout.skipped_nodes += run_count;
          }
        }
        run_count = 0;
        run_width = 0;
      };
      for (uint32_t i = 0; i < node.child_count; ++i) {
        const uint32_t c = node.first_child + i;
        const FlameNode& child = tree.nodes[c];
        const float x = static_cast<float>(static_cast<double>(left[c] - origin) * scale);
        const float w = static_cast<float>(static_cast<double>(child.total) * scale);
        if (w >= min_width) {
          flush_run();
          rects.push_back({c, x, w, child.depth, false, false});
          if (child.child_count > 0) visible_children.push_back(c);
          continue;
        }
        if (child.total <= 0) continue;
        if (run_count == 0) {
          run_first = c;
          run_x = x;
        }
        ++run_count;
        run_width = x + w - run_x;
        // A run that reached a pixel is emitted now and a new one starts, so
        // a long tail of tiny siblings shows up as texture, not one block.
        if (run_width >= min_width) flush_run();
      }
      flush_run();
      for (auto it = visible_children.rbegin(); it != visible_children.rend(); ++it) {
        stack.push_back(*it);
      }
    }
  }

  // Stable counting sort by depth: order within a depth (x order) is kept.
  uint16_t max_depth = 0;
  for (const FlameRect& r : rects) max_depth = std::max(max_depth, r.depth);
  layout.row_begin.assign(static_cast<size_t>(max_depth) + 2, 0);
  for (const FlameRect& r : rects) ++layout.row_begin[r.depth + 1];
  for (size_t d = 1; d < layout.row_begin.size(); ++d) layout.row_begin[d] += layout.row_begin[d - 1];
  layout.rects.resize(rects.size());
  std::vector<uint32_t> fill(layout.row_begin.begin(), layout.row_begin.end() - 1);
  for (const FlameRect& r : rects) layout.rects[fill[r.depth]++] = r;
  return layout;
}

int HitTest(const FlameLayout& layout, float x, int depth) {
  if (depth < 0 || depth >= layout.Rows()) return -1;
  const auto begin = layout.rects.begin() + layout.row_begin[depth];
  const auto end = layout.rects.begin() + layout.row_begin[depth + 1];
  // First rect whose right edge is beyond x.
  auto it =
      std::upper_bound(begin, end, x, [](float value, const FlameRect& r) { return value < r.x + r.width; });
  if (it == end || x < it->x) return -1;
  return static_cast<int>(it - layout.rects.begin());
}

float RowTop(int depth, int rows, float row_height, bool flame) {
  return flame ? static_cast<float>(rows - 1 - depth) * row_height : static_cast<float>(depth) * row_height;
}

int RowAt(float y, int rows, float row_height, bool flame) {
  if (y < 0 || row_height <= 0) return -1;
  const int row = static_cast<int>(y / row_height);
  if (row >= rows) return -1;
  return flame ? rows - 1 - row : row;
}

FrameTypeWeights ComputeFrameTypeWeights(const FlameTree& tree) {
  FrameTypeWeights w;
  for (const FlameNode& n : tree.nodes) {
    const auto t = static_cast<size_t>(n.type);
    if (n.kind != storage::NodeKind::kFrame || t >= std::size(w.self)) continue;
    w.self[t] += n.self;
    w.present[t] = true;
  }
  return w;
}

std::vector<uint32_t> PathToNode(const FlameTree& tree, uint32_t node) {
  std::vector<uint32_t> path;
  if (node >= tree.nodes.size()) return path;
  while (true) {
    path.push_back(node);
    if (node == 0) break;
    node = tree.nodes[node].parent;
  }
  std::reverse(path.begin(), path.end());
  return path;
}

uint32_t CommonAncestor(const FlameTree& tree, const std::vector<uint32_t>& nodes) {
  if (nodes.empty()) return 0;
  std::vector<uint32_t> common = PathToNode(tree, nodes[0]);
  for (size_t i = 1; i < nodes.size() && common.size() > 1; ++i) {
    const std::vector<uint32_t> path = PathToNode(tree, nodes[i]);
    size_t same = 0;
    while (same < common.size() && same < path.size() && common[same] == path[same]) ++same;
    common.resize(std::max<size_t>(same, 1));
  }
  return common.empty() ? 0 : common.back();
}

uint32_t MoveInFlame(const storage::FlameTree& tree, uint32_t node, FlameMove move) {
  if (node >= tree.nodes.size()) return 0;
  const storage::FlameNode& n = tree.nodes[node];
  switch (move) {
    case FlameMove::kParent:
      return n.parent;
    case FlameMove::kHeaviestChild: {
      uint32_t heaviest = node;
      for (uint32_t c = n.first_child; c < n.first_child + n.child_count; ++c) {
        if (heaviest == node || tree.nodes[c].total > tree.nodes[heaviest].total) heaviest = c;
      }
      return heaviest;
    }
    case FlameMove::kPreviousSibling:
    case FlameMove::kNextSibling: {
      if (node == 0) return node;
      const storage::FlameNode& p = tree.nodes[n.parent];
      if (move == FlameMove::kPreviousSibling) return node > p.first_child ? node - 1 : node;
      return node + 1 < p.first_child + p.child_count ? node + 1 : node;
    }
  }
  return node;
}

bool IsAncestorOrSelf(const storage::FlameTree& tree, uint32_t ancestor, uint32_t node) {
  while (node != ancestor && node != 0) node = tree.nodes[node].parent;
  return node == ancestor;
}

}  // namespace kiln::ui
