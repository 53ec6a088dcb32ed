// Flamegraph tab: icicle (or flame) graph of the current analysis' tree,
// coloured by frame type, with zoom + breadcrumbs, search and a legend.
// Layout and search results are cached and recomputed only when the tree,
// zoom, width or query changes (see flame_layout.h, flame_search.h).
#pragma once

#include <future>
#include <memory>
#include <string>
#include <vector>

#include "ui/flame_layout.h"
#include "ui/flame_search.h"
#include "ui/frame_menu.h"
#include "ui/frame_colors.h"
#include "ui/view.h"

namespace kiln::ui {

class FlamegraphView : public View {
 public:
  std::string_view Id() const override { return "flamegraph"; }
  std::string_view Title() const override { return "Flamegraph"; }
  void Draw(const ViewContext& context) override;
  bool Settled() const override { return settled_; }

  // Trees with more nodes than this are searched off the UI thread.
  static constexpr size_t kAsyncSearchNodes = 100'000;

  // Draws `tree` directly (used by the benchmark, which has no snapshot).
  // `types` may be null (computed here then, O(nodes) on this thread).
  void DrawTree(const ViewContext& context, std::shared_ptr<const storage::FlameTree> tree,
                std::shared_ptr<const std::vector<int64_t>> left,
                std::shared_ptr<const FrameTypeWeights> types = nullptr);

 private:
  void AdoptTree(std::shared_ptr<const storage::FlameTree> tree,
                 std::shared_ptr<const std::vector<int64_t>> left,
                 std::shared_ptr<const FrameTypeWeights> types);
  void DrawToolbar(const ViewContext& context);
  void DrawBreadcrumbs();
  void DrawLegend();
  void DrawGraph(const ViewContext& context);
  void DrawTooltip(const ViewContext& context, uint32_t node, bool merged);
  // Keyboard: arrows, Enter, Backspace, '/', n / N, '?' (see HandleKeys).
  void HandleKeys(const ViewContext& context, bool flame);
  void Select(uint32_t node);
  uint32_t FindByLabels(const std::vector<std::string>& labels) const;
  std::string SharesText(uint32_t node) const;
  void DrawSelection();
  void ZoomTo(uint32_t node);
  void ZoomOut();
  void RefreshSearch();

  std::shared_ptr<const storage::FlameTree> tree_;
  std::shared_ptr<const std::vector<int64_t>> left_;
  uint32_t zoom_node_ = 0;
  // The zoomed node's labels from the root, so the zoom survives a new tree
  // (live follow rebuilds the tree every few seconds).
  std::vector<std::string> zoom_path_labels_;
  bool scroll_to_zoom_ = true;  // scroll the graph so the zoomed node shows
  bool last_flame_ = false;
  uint32_t zoom_before_click_ = 0;  // lets a double-click undo its first click
  double click_zoom_time_ = -1;

  FlameLayout layout_;
  std::vector<Rgba> rect_colors_;  // parallel to layout_.rects
  // In a diff, the prefix of a frame where a subtree only one side has
  // starts ("new: ", "gone: "; empty otherwise), parallel to
  // layout_.rects: colour alone cannot say new rather than grown.
  std::vector<const char*> rect_marks_;
  bool layout_dirty_ = true;

  char search_buffer_[256] = {};
  uint64_t seen_search_serial_ = 0;
  bool zoom_to_search_ = false;
  FlameSearchResult search_;
  bool search_dirty_ = false;
  // Big trees are searched on a helper thread (a million labels take longer
  // than a frame); the previous result stays on screen meanwhile.
  std::future<FlameSearchResult> search_future_;
  std::shared_ptr<const storage::FlameTree> search_tree_;  // what search_future_ searches
  // Which tree search_ indexes: a counter, not a pointer, because a new
  // tree can be allocated where a freed one was.
  uint64_t tree_serial_ = 0;
  uint64_t searched_serial_ = 0;

  std::shared_ptr<const FrameTypeWeights> types_;  // for the legend
  FrameMenu menu_;

  // Diff mode: the analysis' diff, whose display tree is tree_ (node
  // indices shared), and whether it compares shares.
  std::shared_ptr<const storage::DiffTree> diff_;
  bool diff_normalized_ = true;
  void DrawDiffTooltip(const ViewContext& context, uint32_t node);

  // The keyboard's node (0 = none), kept across new trees by its labels.
  uint32_t selected_ = 0;
  std::vector<std::string> selected_path_labels_;
  bool scroll_to_selected_ = false;
  bool focus_search_ = false;  // put the cursor in the search box next frame
  std::vector<uint32_t> match_order_;  // MatchesInOrder of search_, for n / N
  uint64_t match_order_serial_ = UINT64_MAX;
  bool settled_ = false;
};

}  // namespace kiln::ui
