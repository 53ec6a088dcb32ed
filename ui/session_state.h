// The user's choices that outlive one frame and are shared between the
// header, the timeline and the views: kind, time range, filters, display
// toggles, and cross-view requests. Owned by the app; touched only on the
// UI thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "storage/model/flame_tree.h"
#include "storage/model/profile_model.h"
#include "storage/store.h"
#include "ui/snapshots.h"
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
  // Static data (an opened capture, the demo): nothing arrives, so presets
  // count back from its newest sample and the header shows `offline_label`
  // instead of LIVE.
  bool offline = false;
  std::string offline_label = "capture";
  // A capture whose samples have no times of their own (most pprof files,
  // every folded file): there is no timeline to select from; the header
  // shows the profile's time and duration as facts and the range is the
  // whole capture.
  bool untimed = false;
  int64_t profile_start_ns = 0;
  int64_t profile_end_ns = 0;  // start + duration; == start when unknown
  TimeRange window;                               // what the timeline shows
  TimeRange selection;                            // what the views show; Empty() = the whole window
  std::vector<storage::AttributeFilter> filters;  // AND across keys, OR within a key

  // Grouping, inline frames and the transforms (chips) applied to this
  // source's stacks: what every tree view and export builds with.
  // Each process apart (two python3, every kiln on a host), its threads
  // under it.
  storage::FlameTreeOptions tree{.group_by = storage::GroupBy::kInstanceThread};
  // SetSampleType added the "drop-kernel" chip for off-CPU time (and takes
  // it away again on leaving it, unless the user removed it first).
  bool off_cpu_drop_kernel = false;
  bool flame = false;  // roots at the bottom instead of the top (icicle)

  // What the user typed in the flamegraph's search box and the Top
  // functions filter: part of the source's session, so switching sources
  // never carries one source's search into another.
  std::string search_text;
  std::string top_filter;

  // Cross-view requests, consumed by whoever owns the target.
  std::string requested_tab;  // the app switches to this view id next frame
  std::string flame_search;   // set with ++flame_search_serial; the flamegraph adopts it
  uint64_t flame_search_serial = 0;
  bool flame_zoom_to_search = false;  // zoom to the matches' common ancestor
  bool focus_search = false;          // Ctrl+F: the flamegraph puts the cursor in its search box
  // Each view's own arguments in this source: by view id (the Sandwich's
  // function), and by "id/name" for more (the Source view's file); kept
  // here so they are per source. Any view may open another with its
  // argument (OpenView: "Show in Sandwich"), which resets the "id/..." ones.
  std::map<std::string, std::string> view_args;
  const std::string& ViewArg(const std::string& view_id) const {
    static const std::string kNone;
    const auto it = view_args.find(view_id);
    return it == view_args.end() ? kNone : it->second;
  }
  void OpenView(const std::string& view_id, std::string arg) {
    SetViewArg(view_id, std::move(arg));
    requested_tab = view_id;
  }
  // The same without switching to the view: it shows `arg` when next
  // opened (a function selected elsewhere, which every view follows).
  void SetViewArg(const std::string& view_id, std::string arg) {
    if (ViewArg(view_id) == arg) return;  // its file, say, stays
    const std::string prefix = view_id + "/";
    for (auto it = view_args.lower_bound(prefix); it != view_args.end() && it->first.rfind(prefix, 0) == 0;) {
      it = view_args.erase(it);
    }
    view_args[view_id] = std::move(arg);
  }
  // The function selected in some view and followed by the others: the
  // exact search "=NAME" (a Stack Chart box, a Top functions row, the
  // flamegraph's "=" search); "" when the search is not exact.
  std::string SelectedFunction() const {
    return search_text.size() > 1 && search_text[0] == '=' ? search_text.substr(1) : std::string();
  }

  // What the views compare with (a diff): nothing, the period just before
  // the shown range, a range kept from an earlier selection, the filters
  // that were set when it was chosen, or another source (by name; the app
  // finds its store).
  struct Baseline {
    enum class Kind : uint8_t { kNone, kPreviousPeriod, kRange, kFilters, kSource };
    Kind kind = Kind::kNone;
    TimeRange range;
    std::vector<storage::AttributeFilter> filters;
    std::string source;
    bool normalized = true;
    bool operator==(const Baseline&) const = default;
  };
  Baseline baseline;


  // Executables view: the selected executable by identity (rows are rebuilt
  // with every query) and whether its unsymbolized addresses are listed.
  struct ExecutableId {
    std::string file_name, htlhash, gnu_build_id;
    bool operator==(const ExecutableId&) const = default;
  };
  ExecutableId selected_executable;  // all empty = none
  bool show_unsymbolized = false;

  // Chooses what the views weigh. Off-CPU stacks all end in the kernel's
  // scheduler (__schedule at 100 % self tells nothing), so off-CPU time
  // opens with kernel frames dropped, as a chip the user can remove: the
  // innermost frame left is what blocked (a read, a lock, a sleep).
  void SetSampleType(const storage::SampleType& type);
  TimeRange QueryRange() const { return selection.Empty() ? window : selection; }
  // The times a diff compares with in this source: the previous period
  // (as long as the shown range, just before it) or the chosen range;
  // empty for a baseline of filters or another source (all of its times),
  // and without a baseline. Drawn on the timeline, and what is queried.
  TimeRange BaselineRange() const;
  void AddFilterValue(const std::string& key, const std::string& value);
  void RemoveFilterValue(const std::string& key, const std::string& value);
  bool HasFilterValue(const std::string& key, const std::string& value) const;
};

// What the worker is asked for this session: its sample type, range,
// filters, tree options (transforms) and sandwich function, with the
// timeline over its window in `buckets` buckets and the store's data
// version.
AnalysisRequest RequestFor(const SessionState& session, uint64_t data_version = 0, int buckets = 300);

}  // namespace kiln::ui
