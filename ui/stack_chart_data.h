// The stack chart's data (issue 31): one thread's samples in time order,
// their stacks after the session's transforms, and the threads there are
// to choose from. Built on the worker from a slice that kept its samples
// (Query::keep_samples); pure and tested (ui_test) from small slices.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "storage/model/flame_tree.h"
#include "storage/model/profile_model.h"
#include "storage/model/spans.h"
#include "storage/model/stacks.h"
#include "ui/stack_chart_layout.h"

namespace kiln::ui {

// A track of the chart: one thread of one process instance (the
// attributes process.pid and thread.id; a sender that names no thread
// gives one track per process, one that names neither one track).
struct ChartThread {
  std::string key;    // "PID/TID", either part empty when not sent
  std::string label;  // "python3 [1234] · MainThread [1234]"
  int64_t weight = 0;
  uint64_t samples = 0;
};

struct StackChartData {
  std::vector<ChartThread> threads;  // heaviest first
  std::string thread;                // the key of the one shown ("" when none)
  std::shared_ptr<const storage::FunctionTable> functions;  // what stacks name
  std::vector<std::vector<uint32_t>> stacks;  // function ids, root first
  std::vector<ChartSample> samples;          // the thread's, in time order
  std::vector<int64_t> values;               // per sample: its weight in the sample type's unit
  // The spans the samples were taken in: span_of[i] indexes spans, 0 = in
  // none (spans[0] is empty).
  std::vector<storage::SpanIdentity> spans{storage::SpanIdentity{}};
  std::vector<uint32_t> span_of;
  StackChartLayout layout;
  // How the samples' durations were found, for the view to say.
  enum class Durations : uint8_t { kPeriod, kSpacing, kBlocked } durations = Durations::kPeriod;
  int64_t duration_ns = 0;  // kPeriod, kSpacing: what every sample stands for
  // The thread's samples a transform left out (focus, callers of): the
  // chart shows what the other views show.
  uint64_t transformed_away = 0;
  // Samples in the range without a time of their own (an old stretch the
  // store summarized, an untimed capture): weighed by the other views, not
  // drawn here.
  uint64_t untimed_events = 0;
};

// The key of the thread of attribute set `set` ("PID/TID").
std::string ChartThreadKey(const storage::ProfileDictionary& dict, uint32_t attribute_set);

// `slice` must have kept its samples. `thread_key`: the track to show,
// or "" (or a key not in the slice) for the heaviest. `period_ns`: the
// sample type's sampling period, 0 when not said (then the thread's median
// spacing between samples). Off-CPU time (a value in nanoseconds with no
// period) is drawn over the interval each sample was blocked: its value,
// times the sampling probability the normalizer divided it by.
StackChartData StackChartDataOf(std::shared_ptr<const storage::ProfileSlice> slice,
                                const storage::FlameTreeOptions& options, std::string_view thread_key,
                                int64_t period_ns);

}  // namespace kiln::ui
