#include "ui/session_state.h"

#include <algorithm>
#include <limits>

namespace kiln::ui {

void SessionState::AddFilterValue(const std::string& key, const std::string& value) {
  for (auto& f : filters) {
    if (f.key == key) {
      if (std::find(f.values.begin(), f.values.end(), value) == f.values.end()) {
        f.values.push_back(value);
      }
      return;
    }
  }
  filters.push_back({key, {value}});
}

void SessionState::RemoveFilterValue(const std::string& key, const std::string& value) {
  for (auto it = filters.begin(); it != filters.end(); ++it) {
    if (it->key != key) continue;
    std::erase(it->values, value);
    if (it->values.empty()) filters.erase(it);
    return;
  }
}

bool SessionState::HasFilterValue(const std::string& key, const std::string& value) const {
  for (const auto& f : filters) {
    if (f.key == key) return std::find(f.values.begin(), f.values.end(), value) != f.values.end();
  }
  return false;
}

void SessionState::SetSampleType(const storage::SampleType& type) {
  using storage::Transform;
  auto& transforms = tree.transforms;
  const auto is_drop_kernel = [](const Transform& t) { return t.kind == Transform::Kind::kDropKernel; };
  const bool has_drop_kernel = std::any_of(transforms.begin(), transforms.end(), is_drop_kernel);
  if (!has_drop_kernel) off_cpu_drop_kernel = false;  // the user removed the chip
  sample_type = type;
  if (type == storage::OffCpuTime()) {
    if (!has_drop_kernel) {
      transforms.push_back({Transform::Kind::kDropKernel, "", {}});
      off_cpu_drop_kernel = true;
    }
  } else if (off_cpu_drop_kernel) {
    transforms.erase(std::find_if(transforms.rbegin(), transforms.rend(), is_drop_kernel).base() - 1);
    off_cpu_drop_kernel = false;
  }
}

TimeRange SessionState::BaselineRange() const {
  using Kind = Baseline::Kind;
  if (baseline.kind == Kind::kRange) return baseline.range;
  if (baseline.kind != Kind::kPreviousPeriod) return {};
  // Only a bounded range has a period before it.
  const TimeRange range = QueryRange();
  const int64_t length = range.to_ns - range.from_ns;
  if (range.Empty() || length <= 0) return {};
  return {range.from_ns - length, range.from_ns};
}

AnalysisRequest RequestFor(const SessionState& session, uint64_t data_version, int buckets) {
  AnalysisRequest r;
  r.query.sample_type = session.sample_type;
  const TimeRange range = session.QueryRange();
  r.query.from_ns = range.from_ns;
  r.query.to_ns = range.to_ns;
  r.query.filters = session.filters;
  r.tree_options = session.tree;
  r.query.keep_samples = storage::NeedsSamples(session.tree);  // spans are each sample's own
  using Kind = SessionState::Baseline::Kind;
  const SessionState::Baseline& b = session.baseline;
  if (b.kind != Kind::kNone) {
    BaselineRequest base;
    base.query = r.query;
    base.normalized = b.normalized;
    if (b.kind == Kind::kPreviousPeriod || b.kind == Kind::kRange) {
      const TimeRange times = session.BaselineRange();
      base.query.from_ns = times.from_ns;
      base.query.to_ns = times.to_ns;
    } else if (b.kind == Kind::kFilters) {
      base.query.filters = b.filters;
    } else if (b.kind == Kind::kSource) {
      // Another source has its own times: all of it (the app sets the store).
      base.query.from_ns = std::numeric_limits<int64_t>::min();
      base.query.to_ns = std::numeric_limits<int64_t>::max();
    }
    r.baseline = base;
  }
  r.timeline_window = session.window;
  r.timeline_buckets = buckets;
  r.data_version = data_version;
  return r;
}

}  // namespace kiln::ui
