// FlameScope tab: the timeline window as a heat map, columns of seconds
// and rows of slices never finer than the sampling period (from the
// samples' own nanosecond times; its analysis is this view's own product), so
// bursts, periodic stalls and idle stretches show as patterns. Dragging
// from one cell to another selects exactly those moments (in time order)
// for every other view; "Use as baseline" keeps a selection so the next one
// is shown as a diff against it.
#pragma once

#include "ui/timeline_math.h"
#include "ui/view.h"

namespace kiln::ui {

class HeatmapView : public View {
 public:
  std::string_view Id() const override { return "heatmap"; }
  std::string_view Title() const override { return "FlameScope"; }
  void Draw(const ViewContext& context) override;
  bool Settled() const override { return settled_; }
  Product OwnProduct() const override;

 private:
  bool dragging_ = false;
  int drag_column_ = 0, drag_row_ = 0;
  bool settled_ = false;
};

}  // namespace kiln::ui
