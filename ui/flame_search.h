// Search in a flame graph: which nodes match a query and how much of the
// weight they cover. Pure; run once per (tree, query) change, O(nodes).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "storage/model/flame_tree.h"

namespace kiln::ui {

// Query syntax: case-insensitive substring of the label; a leading '='
// asks for the whole label, exactly (case-sensitive), which is what
// "show in flamegraph" from Top functions uses. Empty matches nothing.
bool LabelMatches(std::string_view label, std::string_view query);
// `part` occurs in `text`, ASCII case ignored (an empty part always does):
// the substring half of LabelMatches, for the tables' search boxes.
bool ContainsIgnoringCase(std::string_view text, std::string_view part);

struct FlameSearchResult {
  std::string query;
  std::vector<uint8_t> matched;  // per node: 1 when its label matches
  uint32_t matched_nodes = 0;
  // Weight of the stacks that pass through a match, each stack counted
  // once (a match under another match adds nothing).
  int64_t matched_weight = 0;
  int64_t total_weight = 0;      // the root's total
  uint32_t common_ancestor = 0;  // deepest node above every match (0 if none)

  bool active() const { return !query.empty(); }
  double MatchedFraction() const {
    return total_weight > 0 ? static_cast<double>(matched_weight) / total_weight : 0.0;
  }
};

// Only frame nodes match (root/process/thread labels are grouping, not code).
FlameSearchResult SearchFlameTree(const storage::FlameTree& tree, std::string_view query);

// The matches of `result` in depth-first order (left to right, top to
// bottom as the graph draws them): what n / N step through.
std::vector<uint32_t> MatchesInOrder(const storage::FlameTree& tree, const FlameSearchResult& result);
// The match after (or before, `forward` false) `current` in `order`,
// wrapping around; `current` need not be a match (then the first match
// after it in depth-first order). 0 when there are none.
uint32_t NextMatch(const storage::FlameTree& tree, const std::vector<uint32_t>& order, uint32_t current, bool forward);

}  // namespace kiln::ui
