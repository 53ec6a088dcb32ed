// Flame graph geometry: where each node of a FlameTree goes for a given zoom
// and width, and which node is under the mouse. Pure functions with no
// ImGui dependency, so they are tested without a window.
//
// Coordinates: x in pixels from the left edge of the graph, rows by node
// depth (root = row 0). Whether row 0 is drawn at the top (icicle) or the
// bottom (flame) is RowTop()'s business only.
#pragma once

#include <cstdint>
#include <vector>

#include "storage/model/flame_tree.h"

namespace kiln::ui {

// Left edge of every node in weight units from the root's left edge
// (a node's children start at its own left edge, in tree order). Computed
// once per tree, O(nodes), on the worker thread.
std::vector<int64_t> ComputeLeftOffsets(const storage::FlameTree& tree);

struct FlameRect {
  uint32_t node = 0;      // first node of the run when `merged`
  float x = 0;            // pixels from the graph's left edge
  float width = 0;        // pixels
  uint16_t depth = 0;     // row
  bool merged = false;    // a run of siblings each narrower than min_width
  bool ancestor = false;  // above the zoomed node: drawn full width
};

// The visible rectangles for one zoom and width. Rects of one depth are
// contiguous and ordered by x, so HitTest can binary-search a row.
struct FlameLayout {
  std::vector<FlameRect> rects;
  std::vector<uint32_t> row_begin;  // rects of depth d: [row_begin[d], row_begin[d + 1])
  uint32_t zoom_node = 0;
  float width = 0;
  uint32_t skipped_nodes = 0;  // narrower than min_width and not merged into a run

  int Rows() const { return row_begin.empty() ? 0 : static_cast<int>(row_begin.size()) - 1; }
};

// Lays out the subtree of `zoom_node` across `width` pixels, with its
// ancestors drawn full width above it. A node narrower than `min_width`
// is not drawn and its subtree is not visited; consecutive such siblings
// are merged into one `merged` rect once their run reaches `min_width`.
// Cost is proportional to the visible nodes plus their children, not to
// the tree size, so million-node trees stay cheap.
FlameLayout LayoutFlame(const storage::FlameTree& tree, const std::vector<int64_t>& left, uint32_t zoom_node,
                        float width, float min_width = 1.0f);

// Index into layout.rects of the rect at pixel `x` in row `depth`, or -1.
int HitTest(const FlameLayout& layout, float x, int depth);

// Pixel offset of a row's top edge: icicle puts row 0 at the top; flame
// puts row 0 at the bottom of a `rows`-row graph.
float RowTop(int depth, int rows, float row_height, bool flame);
// The row at pixel offset `y` from the graph's top, or -1 outside.
int RowAt(float y, int rows, float row_height, bool flame);

// Per frame type: self weight and whether any node has that type (the
// legend). O(nodes): computed on the worker with the tree.
struct FrameTypeWeights {
  int64_t self[storage::kFrameTypeCount] = {};
  bool present[storage::kFrameTypeCount] = {};
};
FrameTypeWeights ComputeFrameTypeWeights(const storage::FlameTree& tree);

// Root-to-node path (root first, `node` last): the zoom breadcrumbs.
std::vector<uint32_t> PathToNode(const storage::FlameTree& tree, uint32_t node);

// Keyboard moves between nodes: up to the parent, down to the heaviest
// child (the first of equals; the first child in name order was often a
// sliver), left/right to the previous/next sibling. Returns `node` itself
// where there is nowhere to go (the root's parent, a leaf's child, the
// last sibling's next).
enum class FlameMove : uint8_t { kParent, kHeaviestChild, kPreviousSibling, kNextSibling };
uint32_t MoveInFlame(const storage::FlameTree& tree, uint32_t node, FlameMove move);
// Whether `ancestor` is `node` or above it.
bool IsAncestorOrSelf(const storage::FlameTree& tree, uint32_t ancestor, uint32_t node);

// The deepest node that is an ancestor-or-self of every node in `nodes`
// (0, the root, when empty).
uint32_t CommonAncestor(const storage::FlameTree& tree, const std::vector<uint32_t>& nodes);

}  // namespace kiln::ui
