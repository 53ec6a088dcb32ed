// Top functions tab: one row per function with self and total weight,
// sortable, filterable, clipped to the visible rows. Clicking a row shows
// that function in the flamegraph (highlighted and zoomed to the common
// ancestor of its occurrences); right-click offers the transforms. A
// function selected in another view (a Stack Chart box) is the highlighted
// row, scrolled into view.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ui/frame_menu.h"
#include "ui/view.h"

namespace kiln::ui {

class TopFunctionsView : public View {
 public:
  std::string_view Id() const override { return "top"; }
  std::string_view Title() const override { return "Top functions"; }
  void Draw(const ViewContext& context) override;
  bool Settled() const override { return settled_; }

 private:
  void Rebuild(const void* sort_specs);
  // With a baseline: both sides and the change, sortable by it.
  void DrawDiff(const ViewContext& context);

  std::shared_ptr<const std::vector<storage::TopFunctionRow>> rows_;
  std::vector<uint32_t> order_;  // filtered, sorted indices into *rows_
  char filter_[256] = {};
  std::string scrolled_to_;  // the selected function last scrolled to
  bool order_dirty_ = true;
  bool settled_ = false;
  FrameMenu menu_;
  std::shared_ptr<const std::vector<storage::DiffFunctionRow>> diff_rows_;
  std::vector<uint32_t> diff_order_;
};

}  // namespace kiln::ui
