#include "ui/snapshots.h"

namespace kiln::ui {

namespace {
bool SameFilters(const std::vector<storage::AttributeFilter>& a,
                 const std::vector<storage::AttributeFilter>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].key != b[i].key || a[i].values != b[i].values) return false;
  }
  return true;
}
}  // namespace

bool AnalysisRequest::operator==(const AnalysisRequest& o) const {
  return query.sample_type == o.query.sample_type && query.from_ns == o.query.from_ns && query.to_ns == o.query.to_ns &&
         SameFilters(query.filters, o.query.filters) && tree_options.group_by == o.tree_options.group_by &&
         tree_options.show_inline == o.tree_options.show_inline && timeline_window == o.timeline_window &&
         timeline_buckets == o.timeline_buckets && data_version == o.data_version &&
         symbols_version == o.symbols_version;
}

}  // namespace kiln::ui
