#include "ui/flame_search.h"

#include <algorithm>
#include <cctype>
#include <iterator>

#include "ui/flame_layout.h"

namespace kiln::ui {

using storage::FlameTree;
using storage::NodeKind;

namespace {

char Lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

}  // namespace

bool LabelMatches(std::string_view label, std::string_view query) {
  if (query.empty()) return false;
  if (query.front() == '=') return label == query.substr(1);
  return ContainsIgnoringCase(label, query);
}

bool ContainsIgnoringCase(std::string_view label, std::string_view query) {
  if (query.empty()) return true;
  if (query.size() > label.size()) return false;
  // Scan for the query's first character in either case with memchr-like
  // speed, then compare the rest: searching a million labels per keystroke
  // must stay well under a frame or two.
  const char first_lower = Lower(query.front());
  const char first_upper = static_cast<char>(std::toupper(static_cast<unsigned char>(query.front())));
  const size_t last = label.size() - query.size();
  for (size_t i = 0; i <= last; ++i) {
    const char c = label[i];
    if (c != first_lower && c != first_upper) continue;
    size_t j = 1;
    while (j < query.size() && Lower(label[i + j]) == Lower(query[j])) ++j;
    if (j == query.size()) return true;
  }
  return false;
}

FlameSearchResult SearchFlameTree(const FlameTree& tree, std::string_view query) {
  FlameSearchResult result;
  result.query = std::string(query);
  result.matched.assign(tree.nodes.size(), 0);
  if (tree.nodes.empty()) return result;
  result.total_weight = tree.nodes[0].total;
  if (query.empty() || query == "=") return result;

  // Labels are deduplicated: match each once, not once per node.
  std::vector<uint8_t> label_match(tree.labels.size(), 0);
  for (size_t i = 0; i < tree.labels.size(); ++i) label_match[i] = LabelMatches(tree.labels[i], query);

  std::vector<uint32_t> matches;
  // Walk with an "inside a match" flag so nested matches are not counted twice.
  std::vector<std::pair<uint32_t, bool>> stack{{0u, false}};
  while (!stack.empty()) {
    const auto [n, inside] = stack.back();
    stack.pop_back();
    const storage::FlameNode& node = tree.nodes[n];
    const bool match = node.kind == NodeKind::kFrame && label_match[node.label];
    if (match) {
      result.matched[n] = 1;
      ++result.matched_nodes;
      matches.push_back(n);
      if (!inside) result.matched_weight += node.total;
    }
    for (uint32_t i = 0; i < node.child_count; ++i) {
      stack.push_back({node.first_child + i, inside || match});
    }
  }
  result.common_ancestor = CommonAncestor(tree, matches);
  return result;
}

std::vector<uint32_t> MatchesInOrder(const storage::FlameTree& tree, const FlameSearchResult& result) {
  std::vector<uint32_t> order;
  if (result.matched_nodes == 0 || result.matched.size() != tree.nodes.size()) return order;
  std::vector<uint32_t> stack = {0};
  while (!stack.empty()) {
    const uint32_t i = stack.back();
    stack.pop_back();
    if (result.matched[i]) order.push_back(i);
    const storage::FlameNode& n = tree.nodes[i];
    for (uint32_t c = n.child_count; c > 0; --c) stack.push_back(n.first_child + c - 1);
  }
  return order;
}

namespace {

// Whether `a` comes before `b` in the depth-first order MatchesInOrder
// walks (children in index order), in O(depth): an ancestor comes first;
// otherwise the two paths' first different siblings decide.
bool PrecedesInPreorder(const storage::FlameTree& tree, uint32_t a, uint32_t b) {
  if (a == b) return false;
  const auto& nodes = tree.nodes;
  uint32_t pa = a, pb = b;
  while (nodes[pa].depth > nodes[pb].depth) pa = nodes[pa].parent;
  while (nodes[pb].depth > nodes[pa].depth) pb = nodes[pb].parent;
  if (pa == pb) return nodes[a].depth < nodes[b].depth;  // one is the other's ancestor
  while (nodes[pa].parent != nodes[pb].parent) {
    pa = nodes[pa].parent;
    pb = nodes[pb].parent;
  }
  return pa < pb;  // siblings: contiguous, in drawing order
}

}  // namespace

uint32_t NextMatch(const storage::FlameTree& tree, const std::vector<uint32_t>& order, uint32_t current, bool forward) {
  if (order.empty()) return 0;
  // `order` is in depth-first order: binary search with the order's own
  // comparison (a key press costs O(depth log matches), not a tree walk).
  if (current >= tree.nodes.size()) current = 0;
  auto precedes = [&](uint32_t x, uint32_t y) { return PrecedesInPreorder(tree, x, y); };
  if (forward) {
    auto it = std::upper_bound(order.begin(), order.end(), current, precedes);
    return it != order.end() ? *it : order.front();
  }
  auto it = std::lower_bound(order.begin(), order.end(), current, precedes);
  return it != order.begin() ? *std::prev(it) : order.back();
}

}  // namespace kiln::ui
