#include "ui/session_state.h"

#include <algorithm>

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
  r.timeline_window = session.window;
  r.timeline_buckets = buckets;
  r.data_version = data_version;
  return r;
}

}  // namespace kiln::ui
