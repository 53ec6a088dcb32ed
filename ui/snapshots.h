// What the views draw: immutable results produced by the analysis worker
// (app/gui_worker.h) and swapped in by the UI thread at the start of a
// frame. A snapshot is never modified after it is published; views hold
// shared_ptr<const ...> and may keep drawing an older one while a newer
// one is computed.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ingest/forward/forward_status.h"
#include "ingest/otlp_receiver.h"
#include "storage/model/processes.h"
#include "storage/model/sampling.h"
#include "storage/model/diff.h"
#include "storage/model/flame_tree.h"
#include "storage/model/source_lines.h"
#include "storage/store.h"
#include "storage/model/top_functions.h"
#include "ui/flame_layout.h"
#include "ui/timeline_math.h"

namespace kiln::ui {

// What a diff compares the request's query with: another query, on this
// source's store or another source's.
struct BaselineRequest {
  storage::Query query;
  std::shared_ptr<const storage::Store> store;  // null: the request's own store
  uint64_t data_version = 0;              // of `store` (another source's)
  bool normalized = true;                 // colour by change in share (else in weight)
  bool operator==(const BaselineRequest&) const = default;
};

struct AnalysisSnapshot;

// A view's own part of an analysis (View::Product): what it asks for, as
// text, and how the worker builds it from the shared products (and, for a
// view that scans more than the selection, the store). The build runs on
// the worker thread with nothing of the view object: a plain function of
// the store, the snapshot (its request, slice and stacks) and the inputs.
using ViewBuild = std::shared_ptr<const void> (*)(const storage::Store& store, const AnalysisSnapshot& snapshot,
                                                  const std::string& inputs);
// What a view's product is built from besides its inputs, so the worker
// knows when to build it again.
enum class ViewBase : uint8_t {
  kStacks,  // the selection's stacks: again when they, the range or the tree options change
  kSlice,   // the selection's samples alone: kept across transforms and grouping
  kWindow,  // the timeline window's samples (a scan of the store): kept across selections
};
struct ViewProductRequest {
  std::string inputs;  // "" = nothing asked: no result
  ViewBuild build = nullptr;
  ViewBase base = ViewBase::kStacks;
  bool operator==(const ViewProductRequest&) const = default;
};

// Everything that determines an analysis result. Two equal requests give
// the same snapshot, so the UI submits only when this changes.
struct AnalysisRequest {
  storage::Query query;  // kind, selected range, filters
  storage::FlameTreeOptions tree_options;
  TimeRange timeline_window;  // what the timeline shows
  int timeline_buckets = 300;
  uint64_t data_version = 0;  // bumps when the store gained samples (live)
  // Store::SymbolsVersion(): new symbols rename frames, so query again.
  uint64_t symbols_version = 0;
  // The views' own products, by view id (AddViewProducts).
  std::map<std::string, ViewProductRequest> view_products;
  std::optional<BaselineRequest> baseline;  // a diff against it, when set

  bool operator==(const AnalysisRequest&) const = default;
};

struct AnalysisSnapshot {
  uint64_t generation = 0;  // of the request it answers
  AnalysisRequest request;
  std::shared_ptr<const storage::ProfileSlice> slice;
  // The slice's stacks after the request's transforms: what the tree and
  // the tables are built from.
  std::shared_ptr<const storage::Stacks> stacks;
  std::shared_ptr<const storage::FlameTree> tree;
  std::shared_ptr<const std::vector<int64_t>> left_offsets;  // ComputeLeftOffsets(*tree)
  std::shared_ptr<const FrameTypeWeights> type_weights;      // ComputeFrameTypeWeights(*tree)
  std::shared_ptr<const std::vector<storage::TopFunctionRow>> top_functions;
  // The views' own products, by view id: what their ViewBuild returned
  // for request.view_products' inputs (absent when nothing was asked).
  std::map<std::string, std::shared_ptr<const void>> view_results;
  // View `id`'s result as the type its build made (the view knows it).
  template <typename T>
  std::shared_ptr<const T> ViewResult(const std::string& id) const {
    const auto it = view_results.find(id);
    return it == view_results.end() ? nullptr : std::static_pointer_cast<const T>(it->second);
  }
  // The inputs view `id`'s result was built for ("" when none).
  const std::string& ViewInputs(const std::string& id) const {
    static const std::string kNone;
    const auto it = request.view_products.find(id);
    return it == request.view_products.end() ? kNone : it->second.inputs;
  }
  // With a baseline: its slice, the diff of the two (transformed alike),
  // the tree a diff flame graph lays out (the diff's own tree) with its
  // offsets and legend weights, and Top functions of both sides.
  std::shared_ptr<const storage::ProfileSlice> baseline_slice;
  std::shared_ptr<const storage::DiffTree> diff;
  std::shared_ptr<const storage::FlameTree> diff_display;
  std::shared_ptr<const std::vector<int64_t>> diff_left_offsets;
  std::shared_ptr<const FrameTypeWeights> diff_type_weights;
  std::shared_ptr<const std::vector<storage::DiffFunctionRow>> diff_functions;
  // The slice's processes (storage::ProcessesOf): the PID filter's names.
  std::shared_ptr<const std::vector<storage::ProcessSummary>> processes;
  // Whether the values are estimates from a sampled share (storage::SamplingNoteOf).
  std::shared_ptr<const storage::SamplingNote> sampling;
  std::shared_ptr<const storage::Timeline> timeline;
  std::string error;  // non-empty when the query failed; the rest may be stale or null
  double query_ms = 0;
  double build_ms = 0;
};

// Slow-changing facts about the store and the receiver, refreshed about once
// a second.
struct StatusSnapshot {
  int64_t taken_ns = 0;
  storage::StoreStats stats;
  std::optional<ingest::ReceiverStats> receiver;  // absent without a listener
  std::vector<ingest::ForwardStatus> forwarding;  // one per --forward destination
  std::vector<storage::LogEntry> log;             // newest first
  std::vector<std::string> attribute_keys;
  std::map<std::string, std::vector<std::string>> attribute_values;  // for the filter bar
  std::string data_dir;
  // What the store counts as lost, by reason, across restarts
  // (Store::DataLossTotals; the receiver's since-start counts are in
  // `receiver`).
  storage::DataLossCounts data_loss{};
  // Symbols: Store::SymbolsVersion() and the status per symbol key
  // (Store::SymbolStatuses(), re-read only when the version moves).
  uint64_t symbols_version = 0;
  std::shared_ptr<const std::map<std::string, storage::SymbolStatus>> symbol_statuses;
  bool operator==(const StatusSnapshot&) const = default;
};

// Whether the window would show `a` and `b` alike: all of them but when
// they were taken and the disk's free space while writes are accepted
// (other programs move it every second; the window shows it only when it
// refuses writes). The worker wakes the window only for a status that
// differs: an idle window drew four frames a second.
inline bool SameToTheWindow(const StatusSnapshot& a, const StatusSnapshot& b) {
  StatusSnapshot b_as_a = b;  // once a second: the copy is cheap
  b_as_a.taken_ns = a.taken_ns;
  if (a.stats.writes_refused.empty() && b.stats.writes_refused.empty()) {
    b_as_a.stats.disk_free_bytes = a.stats.disk_free_bytes;
  }
  return a == b_as_a;
}

// What the background symbolizer is doing (app/symbol_service.h), copied
// into the view context each frame.
struct SymbolActivity {
  bool busy = false;
  std::string executable;
  std::string source;
  double fraction = 0;
  size_t queued = 0;
};

}  // namespace kiln::ui
