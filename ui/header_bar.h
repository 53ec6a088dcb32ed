// The window's header: name, view tabs, sample kind, time presets with live
// follow, and the attribute filter bar (values offered from the data seen).
// UI thread only.
#pragma once

#include <string>
#include <vector>

#include "ui/session_state.h"
#include "ui/snapshots.h"
#include "ui/view.h"

namespace kiln::ui {

class HeaderBar {
 public:
  // Draws the header; switches *active_view when a tab is clicked or the
  // session asks for another view.
  // `analysis` (may be null) names the PID filter's values.
  void Draw(const std::vector<View*>& views, size_t* active_view, SessionState& session,
            const StatusSnapshot* status, const AnalysisSnapshot* analysis, bool computing);

 private:
  void DrawFilterBar(SessionState& session, const StatusSnapshot* status, const AnalysisSnapshot* analysis);
  // The sample types the source holds ("On-CPU (samples)", "Allocated
  // bytes", ...), the current one first when the source has none of it yet.
  void DrawSampleTypePicker(SessionState& session, const StatusSnapshot* status, const AnalysisSnapshot* analysis);
  void DrawFilterPopup(SessionState& session, const StatusSnapshot* status, const AnalysisSnapshot* analysis);

  std::string popup_key_;
  char value_filter_[128] = {};
};

// The attribute keys offered first in the filter bar, in this order, with
// their display names ("Process", "PID", ...).
struct FilterKey {
  const char* key;
  const char* display;
};
const std::vector<FilterKey>& WellKnownFilterKeys();
std::string FilterKeyDisplayName(const std::string& key);

}  // namespace kiln::ui
