// The timeline under the header: sample weight over time for the current
// kind and filters. Drag selects the range the views show (and stops live
// follow), a click clears the selection, the wheel zooms around the mouse,
// hovering shows the bucket's time and weight. UI thread only.
#pragma once

#include "ui/session_state.h"
#include "ui/snapshots.h"

namespace kiln::ui {

class TimelineBar {
 public:
  // `limit` bounds wheel zoom (the stored data and the preset window).
  void Draw(SessionState& session, const AnalysisSnapshot* analysis, TimeRange limit, float height);

 private:
  float drag_start_x_ = 0;
  bool dragging_ = false;
};

}  // namespace kiln::ui
