// The user's choices that outlive one frame and are shared between the
// header, the timeline and the views: kind, time range, filters, display
// toggles, and cross-view requests. Owned by the app; touched only on the
// UI thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "storage/flame_tree.h"
#include "storage/profile_model.h"
#include "storage/store.h"
#include "ui/timeline_math.h"

namespace kiln::ui {

struct SessionState {
  // What the views weigh: on-CPU samples for live data, the capture's own
  // default (pprof's rule) for a capture.
  storage::SampleType sample_type;
  TimePreset preset = TimePreset::kLast15m;
  // Live follow: the window slides with the clock and new data is queried as
  // it arrives. Selecting a range or zooming the timeline stops it; choosing
  // a preset starts it again.
  bool live = true;
  // An opened capture: nothing arrives, so presets count back from its newest
  // sample and the header shows "capture" instead of LIVE.
  bool offline = false;
  TimeRange window;                               // what the timeline shows
  TimeRange selection;                            // what the views show; Empty() = the whole window
  std::vector<storage::AttributeFilter> filters;  // AND across keys, OR within a key

  storage::GroupBy group_by = storage::GroupBy::kThread;
  bool show_inline = true;
  bool flame = false;  // roots at the bottom instead of the top (icicle)

  // Cross-view requests, consumed by whoever owns the target.
  std::string requested_tab;  // the app switches to this view id next frame
  std::string flame_search;   // set with ++flame_search_serial; the flamegraph adopts it
  uint64_t flame_search_serial = 0;
  bool flame_zoom_to_search = false;  // zoom to the matches' common ancestor

  // Executables view: the selected executable by identity (rows are rebuilt
  // with every query) and whether its unsymbolized addresses are listed.
  struct ExecutableId {
    std::string file_name, htlhash, gnu_build_id;
    bool operator==(const ExecutableId&) const = default;
  };
  ExecutableId selected_executable;  // all empty = none
  bool show_unsymbolized = false;

  TimeRange QueryRange() const { return selection.Empty() ? window : selection; }
  void AddFilterValue(const std::string& key, const std::string& value);
  void RemoveFilterValue(const std::string& key, const std::string& value);
  bool HasFilterValue(const std::string& key, const std::string& value) const;
};

}  // namespace kiln::ui
