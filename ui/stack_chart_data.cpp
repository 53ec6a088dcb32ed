#include "ui/stack_chart_data.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "storage/model/sampling.h"
#include "storage/model/transforms.h"

namespace kiln::ui {
namespace {

using storage::ProfileDictionary;

}  // namespace

std::string ChartThreadKey(const ProfileDictionary& dict, uint32_t attribute_set) {
  return std::string(dict.AttributeValue(attribute_set, storage::attr::kProcessPid)) + "/" +
         std::string(dict.AttributeValue(attribute_set, storage::attr::kThreadId));
}

StackChartData StackChartDataOf(std::shared_ptr<const storage::ProfileSlice> slice,
                                const storage::FlameTreeOptions& options, std::string_view thread_key,
                                int64_t period_ns) {
  StackChartData out;
  if (!slice) return out;
  const storage::ProfileSlice& s = *slice;
  const ProfileDictionary& dict = s.dict;
  uint64_t timed_events = 0;

  // 1. The tracks: a key per attribute set, once each.
  absl::flat_hash_map<uint32_t, uint32_t> thread_of_set;  // attribute set -> index in out.threads
  absl::flat_hash_map<std::string, uint32_t> thread_index;
  std::vector<uint32_t> thread_of_entry(s.weights.size());
  for (size_t e = 0; e < s.weights.size(); ++e) {
    const uint32_t set = s.weights[e].attribute_set;
    auto [it, added] = thread_of_set.try_emplace(set, 0);
    if (added) {
      std::string key = ChartThreadKey(dict, set);
      auto [t, new_thread] = thread_index.try_emplace(key, static_cast<uint32_t>(out.threads.size()));
      if (new_thread) out.threads.push_back({std::move(key), storage::ThreadInstanceLabel(dict, set, options.own), 0, 0});
      it->second = t->second;
    }
    thread_of_entry[e] = it->second;
  }
  for (const storage::SliceSample& sample : s.samples) {
    ChartThread& t = out.threads[thread_of_entry[sample.entry]];
    t.weight += sample.value;
    ++t.samples;
    ++timed_events;
  }
  out.untimed_events = s.total_events > timed_events ? s.total_events - timed_events : 0;
  // Heaviest first; a thread's place must not depend on hash order.
  std::vector<uint32_t> order(out.threads.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const ChartThread &x = out.threads[a], &y = out.threads[b];
    return x.weight != y.weight ? x.weight > y.weight : x.key < y.key;
  });
  uint32_t shown = UINT32_MAX;
  for (uint32_t i : order) {
    if (out.threads[i].key == thread_key && out.threads[i].samples > 0) shown = i;
  }
  if (shown == UINT32_MAX) {
    for (uint32_t i : order) {
      if (out.threads[i].samples > 0) {
        shown = i;
        break;
      }
    }
  }
  if (shown != UINT32_MAX) out.thread = out.threads[shown].key;
  std::vector<ChartThread> sorted;
  sorted.reserve(order.size());
  for (uint32_t i : order) {
    if (out.threads[i].samples > 0) sorted.push_back(std::move(out.threads[i]));
  }
  // 2. The shown thread's entries, through the session's transforms. Each
  // stack is tagged with its entry in place of its attribute set (no
  // transform reads them), so what survives says where it came from.
  storage::Stacks stacks = storage::StacksOf(slice, options.show_inline);
  for (uint32_t e = 0; e < stacks.attribute_sets.size(); ++e) stacks.attribute_sets[e] = e;
  const storage::Stacks transformed = storage::ApplyTransforms(std::move(stacks), options.transforms);
  constexpr uint32_t kGone = UINT32_MAX;
  std::vector<uint32_t> stack_of_entry(s.weights.size(), kGone);
  out.functions = transformed.functions;
  for (uint32_t i = 0; i < transformed.size(); ++i) {
    const uint32_t e = transformed.attribute_sets[i];
    if (e >= s.weights.size() || thread_of_entry[e] != shown || stack_of_entry[e] != kGone) continue;
    stack_of_entry[e] = static_cast<uint32_t>(out.stacks.size());
    const auto [begin, end] = transformed.Stack(i);
    out.stacks.emplace_back(begin, end);
  }
  out.threads = std::move(sorted);

  // 3. The samples, by time, with what each stands for.
  const bool blocked = s.sample_type.type.type == "off_cpu" ||
                       (s.sample_type.type.unit == "nanoseconds" && period_ns <= 0);
  std::vector<std::pair<const storage::SliceSample*, uint32_t>> picked;
  for (const storage::SliceSample& sample : s.samples) {
    if (thread_of_entry[sample.entry] != shown) continue;
    const uint32_t stack = stack_of_entry[sample.entry];
    if (stack == kGone) {
      ++out.transformed_away;
      continue;
    }
    picked.emplace_back(&sample, stack);
  }
  std::stable_sort(picked.begin(), picked.end(),
                   [](const auto& a, const auto& b) { return a.first->time_ns < b.first->time_ns; });
  int64_t each = period_ns;
  out.durations = StackChartData::Durations::kPeriod;
  if (blocked) {
    out.durations = StackChartData::Durations::kBlocked;
  } else if (each <= 0) {
    // No period said: the median spacing of this thread's samples (a
    // sampler's ticks; the gaps where the thread slept are the long tail).
    std::vector<int64_t> gaps;
    for (size_t i = 1; i < picked.size(); ++i) {
      const int64_t g = picked[i].first->time_ns - picked[i - 1].first->time_ns;
      if (g > 0) gaps.push_back(g);
    }
    if (!gaps.empty()) {
      std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
      each = gaps[gaps.size() / 2];
    }
    if (each <= 0) each = 10'000'000;  // one sample alone: 10 ms, so it shows
    out.durations = StackChartData::Durations::kSpacing;
  }
  out.duration_ns = blocked ? 0 : each;
  out.samples.reserve(picked.size());
  out.values.reserve(picked.size());
  out.span_of.reserve(picked.size());
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>, uint32_t> span_index;  // (link, set) -> spans
  for (const auto& [sample, stack] : picked) {
    const uint32_t set = s.weights[sample->entry].attribute_set;
    auto [it, added] = span_index.try_emplace(std::pair{sample->link, set}, 0);
    if (added) {
      storage::SpanIdentity id = storage::SpanOf(dict, sample->link, set);
      if (!id.empty()) {
        it->second = static_cast<uint32_t>(out.spans.size());
        out.spans.push_back(std::move(id));
      }
    }
    out.span_of.push_back(it->second);
    int64_t duration = each;
    if (blocked) {
      const double p = storage::ScaledProbability(dict, s.weights[sample->entry].attribute_set);
      duration = std::max<int64_t>(static_cast<int64_t>(std::llround(static_cast<double>(sample->value) * p)), 1);
    }
    out.samples.push_back({sample->time_ns, duration, stack});
    out.values.push_back(sample->value);
  }
  out.layout = LayoutStackChart(out.samples, out.stacks);
  return out;
}

}  // namespace kiln::ui
