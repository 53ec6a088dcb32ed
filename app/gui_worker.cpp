#include "app/gui_worker.h"

#include <chrono>

#include "app/receiver_control.h"
#include "ingest/otlp_receiver.h"
#include "storage/model/top_functions.h"
#include "storage/release_memory.h"
#include "storage/store.h"
#include "ui/flame_layout.h"
#include "ui/header_bar.h"

namespace kiln::app {

namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

constexpr size_t kLogEntries = 5000;
constexpr size_t kValuesPerKey = 500;
constexpr size_t kMaxFilterKeys = 24;

}  // namespace

GuiWorker::GuiWorker(storage::Store& store, const ReceiverControl* receiver, std::string data_dir,
                     std::function<void()> wake_ui)
    : store_(store), receiver_(receiver), data_dir_(std::move(data_dir)), wake_ui_(std::move(wake_ui)) {
  thread_ = std::thread([this] { Run(); });
}

GuiWorker::~GuiWorker() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

uint64_t GuiWorker::Submit(const ui::AnalysisRequest& request) {
  uint64_t generation;
  {
    std::lock_guard lock(mutex_);
    generation = ++next_generation_;
    pending_generation_ = generation;
    pending_ = request;
    latest_generation_submitted_ = generation;
  }
  wake_.notify_all();
  return generation;
}

void GuiWorker::RefreshStatus() {
  {
    std::lock_guard lock(mutex_);
    status_requested_ = true;
  }
  wake_.notify_all();
}

std::shared_ptr<const ui::AnalysisSnapshot> GuiWorker::LatestAnalysis() const {
  std::lock_guard lock(mutex_);
  return analysis_;
}

std::shared_ptr<const ui::StatusSnapshot> GuiWorker::LatestStatus() const {
  std::lock_guard lock(mutex_);
  return status_;
}

bool GuiWorker::Busy() const {
  std::lock_guard lock(mutex_);
  return latest_generation_submitted_ != 0 &&
         (!analysis_ || analysis_->generation != latest_generation_submitted_);
}

void GuiWorker::Run() {
  auto next_status = Clock::now();
  auto next_trim = Clock::now();
  while (true) {
    uint64_t generation = 0;
    ui::AnalysisRequest request;
    bool do_status = false;
    {
      std::unique_lock lock(mutex_);
      wake_.wait_until(lock, next_status,
                       [this] { return stop_ || pending_generation_ != 0 || status_requested_; });
      if (stop_) return;
      // Status first when due: it is cheap and the header needs it to pick
      // the time window of the first analysis.
      if (status_requested_ || Clock::now() >= next_status) {
        do_status = true;
        status_requested_ = false;
      } else if (pending_generation_ != 0) {
        generation = pending_generation_;
        request = pending_;
        pending_generation_ = 0;
      }
    }
    if (do_status) {
      auto status = PollStatus();
      bool changed = true;
      {
        std::lock_guard lock(mutex_);
        // A status the window would show as the last one was shown wakes
        // nothing: an idle window drew a frame for each.
        changed = !status_ || !status || !ui::SameToTheWindow(*status_, *status);
        status_ = std::move(status);
      }
      next_status = Clock::now() + std::chrono::seconds(1);
      // What threads freed (the symbolizer's DWARF reading, tens of MB for
      // one binary; replaced snapshots; the receiver's requests) goes back:
      // without this the window's RSS only ever grew (643 MiB after 7
      // minutes of a busy host, with 166 MB of live heap at most). Every
      // 10 s; it takes milliseconds.
      if (Clock::now() >= next_trim) {
        storage::ReleaseFreedMemory();
        next_trim = Clock::now() + std::chrono::seconds(10);
      }
      if (changed && wake_ui_) wake_ui_();
      continue;
    }
    if (generation != 0) {
      auto snapshot = Analyze(generation, request);
      previous_ = snapshot;
      {
        std::lock_guard lock(mutex_);
        analysis_ = std::move(snapshot);
      }
      if (wake_ui_) wake_ui_();
    }
  }
}

namespace {

using Request = ui::AnalysisRequest;
using Snapshot = ui::AnalysisSnapshot;

// Whether two requests select the same samples apart from the time range:
// the same sample type and filters over the same stored data, with each
// sample kept or not (a tree grouped by span reads them).
bool SameSource(const Request& a, const Request& b) {
  return a.query.sample_type == b.query.sample_type && a.query.filters == b.query.filters &&
         a.query.keep_samples == b.query.keep_samples &&
         a.data_version == b.data_version && a.symbols_version == b.symbols_version;
}

// Whether two requests agree on the fields `Members`: what a product is
// computed from. Every product of the slice also depends on the query's
// range.
template <auto... Members>
bool SameInputs(const Request& a, const Request& b) {
  return SameSource(a, b) && a.query.from_ns == b.query.from_ns && a.query.to_ns == b.query.to_ns &&
         ((a.*Members == b.*Members) && ...);
}

// For products over the timeline window rather than the selection (the
// timeline, the heat map): a new selection leaves them as they are.
template <auto... Members>
bool SameWindowInputs(const Request& a, const Request& b) {
  return SameSource(a, b) && ((a.*Members == b.*Members) && ...);
}

// One product of an analysis: the request fields it depends on, how to
// carry it over from the previous snapshot when they are unchanged, and how
// to build it (from the request and the products listed before it). A new
// view is one more entry.
struct Product {
  const char* name;
  bool (*same_inputs)(const Request&, const Request&);
  void (*carry)(const Snapshot& from, Snapshot* to);
  void (*build)(storage::Store& store, Snapshot* out);
};

const Product kProducts[] = {
    {"timeline",
     SameWindowInputs<&Request::timeline_window, &Request::timeline_buckets>,
     [](const Snapshot& from, Snapshot* to) { to->timeline = from.timeline; },
     [](storage::Store& store, Snapshot* out) {
       // The timeline covers the window, not the selection, with the same
       // sample type and filters.
       if (out->request.timeline_window.Empty()) return;
       storage::Query q = out->request.query;
       q.from_ns = out->request.timeline_window.from_ns;
       q.to_ns = out->request.timeline_window.to_ns;
       auto timeline = store.RunTimeline(q, out->request.timeline_buckets);
       if (timeline.ok()) out->timeline = std::make_shared<const storage::Timeline>(*std::move(timeline));
     }},
    {"stacks",
     SameInputs<&Request::tree_options>,
     [](const Snapshot& from, Snapshot* to) { to->stacks = from.stacks; },
     [](storage::Store&, Snapshot* out) {
       out->stacks = std::make_shared<const storage::Stacks>(storage::StacksFor(out->slice, out->request.tree_options));
     }},
    {"flame tree",
     SameInputs<&Request::tree_options>,
     [](const Snapshot& from, Snapshot* to) {
       to->tree = from.tree;
       to->left_offsets = from.left_offsets;
       to->type_weights = from.type_weights;
     },
     [](storage::Store&, Snapshot* out) {
       auto tree = std::make_shared<storage::FlameTree>(storage::BuildFlameTree(*out->stacks, out->request.tree_options));
       out->left_offsets = std::make_shared<const std::vector<int64_t>>(ui::ComputeLeftOffsets(*tree));
       out->type_weights = std::make_shared<const ui::FrameTypeWeights>(ui::ComputeFrameTypeWeights(*tree));
       out->tree = std::move(tree);
     }},
    {"top functions",
     SameInputs<&Request::tree_options>,
     [](const Snapshot& from, Snapshot* to) { to->top_functions = from.top_functions; },
     [](storage::Store&, Snapshot* out) {
       out->top_functions =
           std::make_shared<const std::vector<storage::TopFunctionRow>>(storage::BuildTopFunctions(*out->stacks));
     }},
    {"baseline",
     SameInputs<&Request::baseline>,
     [](const Snapshot& from, Snapshot* to) { to->baseline_slice = from.baseline_slice; },
     [](storage::Store& store, Snapshot* out) {
       if (!out->request.baseline) return;
       const ui::BaselineRequest& b = *out->request.baseline;
       auto slice = (b.store ? *b.store : store).Run(b.query);
       if (slice.ok()) {
         out->baseline_slice = *std::move(slice);
       } else {
         out->error = "baseline: " + std::string(slice.status().message());
       }
     }},
    {"diff",
     SameInputs<&Request::baseline, &Request::tree_options>,
     [](const Snapshot& from, Snapshot* to) {
       to->diff = from.diff;
       to->diff_display = from.diff_display;
       to->diff_left_offsets = from.diff_left_offsets;
       to->diff_type_weights = from.diff_type_weights;
       to->diff_functions = from.diff_functions;
     },
     [](storage::Store&, Snapshot* out) {
       if (!out->baseline_slice) return;
       // The baseline's stacks once, for the tree and the table; the
       // target's are the stacks product.
       const storage::FlameTreeOptions& o = out->request.tree_options;
       const storage::Stacks base = storage::StacksFor(out->baseline_slice, o);
       auto diff = std::make_shared<storage::DiffTree>(storage::BuildDiffTree(base, *out->stacks, o));
       // The diff's tree is the one laid out: shared, not copied.
       std::shared_ptr<const storage::FlameTree> display(diff, &diff->tree);
       out->diff_left_offsets = std::make_shared<const std::vector<int64_t>>(ui::ComputeLeftOffsets(*display));
       out->diff_type_weights = std::make_shared<const ui::FrameTypeWeights>(ui::ComputeFrameTypeWeights(*display));
       out->diff_display = std::move(display);
       out->diff = std::move(diff);
       out->diff_functions = std::make_shared<const std::vector<storage::DiffFunctionRow>>(
           storage::BuildDiffTopFunctions(base, *out->stacks));
     }},
    {"processes",
     SameInputs<>,
     [](const Snapshot& from, Snapshot* to) { to->processes = from.processes; },
     [](storage::Store&, Snapshot* out) {
       out->processes = std::make_shared<const std::vector<storage::ProcessSummary>>(storage::ProcessesOf(*out->slice));
     }},
    {"sampling",
     SameInputs<>,
     [](const Snapshot& from, Snapshot* to) { to->sampling = from.sampling; },
     [](storage::Store&, Snapshot* out) {
       out->sampling = std::make_shared<const storage::SamplingNote>(storage::SamplingNoteOf(*out->slice));
     }},
};

}  // namespace

std::shared_ptr<const ui::AnalysisSnapshot> GuiWorker::Analyze(uint64_t generation,
                                                               const ui::AnalysisRequest& request) {
  auto out = std::make_shared<Snapshot>();
  out->generation = generation;
  out->request = request;
  // A previous snapshot that failed has nothing to carry over.
  const Snapshot* previous = previous_ && previous_->slice && previous_->error.empty() ? previous_.get() : nullptr;
  const auto query_start = Clock::now();
  if (previous != nullptr && SameInputs<>(previous->request, request)) {
    out->slice = previous->slice;
  } else {
    auto slice = store_.Run(request.query);
    if (!slice.ok()) {
      // Keep showing what was there, with the error.
      out->error = std::string(slice.status().message());
      if (previous_) {
        out->slice = previous_->slice;
        for (const Product& p : kProducts) p.carry(*previous_, out.get());
        out->view_results = previous_->view_results;
      }
      return out;
    }
    out->slice = *std::move(slice);
  }
  out->query_ms = MsSince(query_start);
  const auto build_start = Clock::now();
  for (const Product& p : kProducts) {
    if (previous != nullptr && p.same_inputs(previous->request, request)) {
      p.carry(*previous, out.get());
    } else {
      p.build(store_, out.get());
    }
  }
  // The views' own products, after the shared ones they build from: they
  // follow the slice (and the tree options, when built from the stacks) as
  // well as their own inputs.
  for (const auto& [id, asked] : request.view_products) {
    if (asked.inputs.empty() || asked.build == nullptr) continue;
    bool same_base = previous != nullptr;
    if (same_base) {
      switch (asked.base) {
        case ui::ViewBase::kStacks: same_base = SameInputs<&Request::tree_options>(previous->request, request); break;
        case ui::ViewBase::kSlice: same_base = SameInputs<>(previous->request, request); break;
        case ui::ViewBase::kWindow: same_base = SameWindowInputs<&Request::timeline_window>(previous->request, request); break;
      }
    }
    if (same_base) {
      const auto was = previous->request.view_products.find(id);
      const auto kept = previous->view_results.find(id);
      if (was != previous->request.view_products.end() && was->second == asked &&
          kept != previous->view_results.end()) {
        out->view_results[id] = kept->second;
        continue;
      }
    }
    if (auto result = asked.build(store_, *out, asked.inputs)) out->view_results[id] = std::move(result);
  }
  out->build_ms = MsSince(build_start);
  return out;
}

std::shared_ptr<const ui::StatusSnapshot> GuiWorker::PollStatus() {
  auto out = std::make_shared<ui::StatusSnapshot>();
  out->taken_ns = storage::UnixNowNs();
  out->data_dir = data_dir_;
  out->stats = store_.Stats();
  if (receiver_) {
    out->receiver = receiver_->stats();  // nullopt while not listening
    out->forwarding = receiver_->forward_status();
  }
  out->log = store_.ReadLog(kLogEntries);
  // Read the version before the statuses: a change in between shows up as a
  // newer version at the next poll, never as a missed one.
  out->symbols_version = store_.SymbolsVersion();
  out->data_loss = store_.DataLossTotals();
  // Attribute scans walk the whole dictionary: redo them only when the set
  // of attribute sets changed since the last poll.
  std::shared_ptr<const ui::StatusSnapshot> previous;
  {
    std::lock_guard lock(mutex_);
    previous = status_;
  }
  if (previous && previous->symbols_version == out->symbols_version && previous->symbol_statuses) {
    out->symbol_statuses = previous->symbol_statuses;
  } else {
    auto statuses = std::make_shared<std::map<std::string, storage::SymbolStatus>>();
    for (auto& [key, status] : store_.SymbolStatuses()) (*statuses)[key] = std::move(status);
    out->symbol_statuses = std::move(statuses);
  }
  if (previous && previous->stats.attribute_sets == out->stats.attribute_sets) {
    out->attribute_keys = previous->attribute_keys;
    out->attribute_values = previous->attribute_values;
    return out;
  }
  out->attribute_keys = store_.AttributeKeys();
  // Values for the keys the filter bar offers: the well-known ones first,
  // then others up to a limit (attribute values are bounded per key).
  size_t fetched = 0;
  auto fetch = [&](const std::string& key) {
    if (fetched >= kMaxFilterKeys || out->attribute_values.count(key)) return;
    out->attribute_values[key] = store_.AttributeValues(key, kValuesPerKey);
    ++fetched;
  };
  for (const auto& k : ui::WellKnownFilterKeys()) {
    for (const auto& seen : out->attribute_keys) {
      if (seen == k.key) fetch(seen);
    }
  }
  for (const auto& k : out->attribute_keys) fetch(k);
  return out;
}

}  // namespace kiln::app
