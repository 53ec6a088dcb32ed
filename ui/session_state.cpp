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

AnalysisRequest RequestFor(const SessionState& session, uint64_t data_version, int buckets) {
  AnalysisRequest r;
  r.query.sample_type = session.sample_type;
  const TimeRange range = session.QueryRange();
  r.query.from_ns = range.from_ns;
  r.query.to_ns = range.to_ns;
  r.query.filters = session.filters;
  r.tree_options = session.tree;
  r.sandwich_function = session.sandwich_function;
  r.source_function = session.source_function;
  r.source_file = session.source_file;
  r.source_path_map = session.source_path_map;
  using Kind = SessionState::Baseline::Kind;
  const SessionState::Baseline& b = session.baseline;
  if (b.kind != Kind::kNone) {
    BaselineRequest base;
    base.query = r.query;
    base.normalized = b.normalized;
    if (b.kind == Kind::kPreviousPeriod) {
      // As long as the shown range, just before it (only for a bounded one).
      const int64_t length = range.to_ns - range.from_ns;
      if (range.Empty() || length <= 0) {
        base.query.from_ns = base.query.to_ns = 0;
      } else {
        base.query.from_ns = range.from_ns - length;
        base.query.to_ns = range.from_ns;
      }
    } else if (b.kind == Kind::kRange) {
      base.query.from_ns = b.range.from_ns;
      base.query.to_ns = b.range.to_ns;
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
