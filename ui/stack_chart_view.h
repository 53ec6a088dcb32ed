// Stack Chart tab (issue 31): one thread's samples along time, x is time
// and y is depth, consecutive samples' common frames merged into one box,
// as the Firefox Profiler's stack chart reads. Its data (the thread's
// samples with their own times, through the session's transforms) is this
// view's own product; the geometry is ui/stack_chart_layout.h's.
//
// Wheel zooms around the mouse, a drag pans, Left/Right pan, +/- zoom, 0
// or a double-click on empty space shows the whole range again. Hovering
// a box shows the sample under the mouse (time, weight, stack); clicking
// one selects its function in every view (the flamegraph's search), right
// click offers the transforms.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ui/frame_colors.h"
#include "ui/frame_menu.h"
#include "ui/view.h"

namespace kiln::ui {

struct StackChartData;

class StackChartView : public View {
 public:
  std::string_view Id() const override { return "stackchart"; }
  std::string_view Title() const override { return "Stack Chart"; }
  void Draw(const ViewContext& context) override;
  bool Settled() const override { return settled_; }
  Product OwnProduct() const override;
  std::vector<Flag> Flags() const override;

 private:
  void DrawToolbar(const ViewContext& context, const StackChartData& data);
  void DrawChart(const ViewContext& context, const StackChartData& data);

  const StackChartData* seen_ = nullptr;  // the result the caches below are for
  std::vector<Rgba> colors_;              // per function
  std::string searched_;                  // the search text matches_ is for
  std::vector<uint8_t> matches_;          // per function: its label matches the search
  // The time at the chart's left edge and the zoom; `zoomed_` keeps them
  // across new data, else each result is shown whole.
  int64_t view_start_ns_ = 0;
  double ns_per_px_ = 0;
  bool zoomed_ = false;
  bool dragging_ = false;
  float drag_from_x_ = 0;
  int64_t drag_from_start_ = 0;
  FrameMenu menu_;
  bool settled_ = false;
};

}  // namespace kiln::ui
