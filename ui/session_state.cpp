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

}  // namespace kiln::ui
