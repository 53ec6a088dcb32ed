#include "ui/flame_search.h"

#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "ui/test_trees.h"

namespace kiln::ui {
namespace {

TEST_CASE("ContainsIgnoringCase: LabelMatches' substring half, for the tables' search boxes") {
  CHECK(ContainsIgnoringCase("GET /Report", "report"));
  CHECK(ContainsIgnoringCase("0af7651916cd43dd", "CD43"));
  CHECK(ContainsIgnoringCase("anything", ""));  // an empty search keeps every row
  CHECK_FALSE(ContainsIgnoringCase("abc", "abcd"));
  CHECK_FALSE(LabelMatches("anything", ""));     // but an empty flamegraph search matches nothing
}

TEST_CASE("label matching: substring ignoring case, '=' for exact") {
  CHECK(LabelMatches("std::vector<int>::push_back", "PUSH_back"));
  CHECK_FALSE(LabelMatches("std::vector", "map"));
  CHECK_FALSE(LabelMatches("anything", ""));
  CHECK(LabelMatches("malloc", "=malloc"));
  CHECK_FALSE(LabelMatches("malloc_usable", "=malloc"));
  CHECK_FALSE(LabelMatches("Malloc", "=malloc"));
}

TEST_CASE("matched weight counts each stack once") {
  // "recurse" appears nested: its outer occurrence already covers the inner.
  const auto tree = testing::TreeFromFolded(
      "main;recurse;recurse;leaf 3\n"
      "main;recurse 1\n"
      "main;other 4\n"
      "main;other;recurse 2\n");
  const auto result = SearchFlameTree(tree, "recurse");
  CHECK(result.matched_nodes == 3);
  CHECK(result.total_weight == 10);
  CHECK(result.matched_weight == 6);  // 4 under main;recurse + 2 under other
  CHECK(result.MatchedFraction() == doctest::Approx(0.6));
  CHECK(tree.Label(result.common_ancestor) == "main");
}

TEST_CASE("empty query matches nothing; only frames match") {
  const auto tree = testing::TreeFromFolded("main;a 1\n");
  CHECK_FALSE(SearchFlameTree(tree, "").active());
  CHECK(SearchFlameTree(tree, "").matched_nodes == 0);
  CHECK(SearchFlameTree(tree, "all").matched_nodes == 0);  // the root is not code
  const auto one = SearchFlameTree(tree, "=a");
  CHECK(one.matched_nodes == 1);
  CHECK(tree.Label(one.common_ancestor) == "a");
}

}  // namespace
TEST_CASE("n and N agree with a walk of the whole tree, from every node of a random tree") {
  std::mt19937 rng(3);
  std::string folded;
  for (int i = 0; i < 300; ++i) {
    std::string stack = "main";
    for (int d = 0, n = 1 + static_cast<int>(rng() % 6); d < n; ++d) stack += ";f" + std::to_string(rng() % 5);
    folded += stack + (rng() % 3 == 0 ? ";x" : "") + " 1\n";
  }
  const auto tree = testing::TreeFromFolded(folded);
  const std::vector<uint32_t> order = MatchesInOrder(tree, SearchFlameTree(tree, "=x"));
  REQUIRE(order.size() > 10);
  // The reference: every node's rank in a depth-first walk.
  std::vector<uint32_t> rank(tree.nodes.size());
  uint32_t r = 0;
  for (std::vector<uint32_t> stack = {0}; !stack.empty();) {
    const uint32_t i = stack.back();
    stack.pop_back();
    rank[i] = r++;
    for (uint32_t c = tree.nodes[i].child_count; c > 0; --c) stack.push_back(tree.nodes[i].first_child + c - 1);
  }
  for (uint32_t current = 0; current < tree.nodes.size(); ++current) {
    CAPTURE(current);
    uint32_t next = order.front(), previous = order.back();
    for (uint32_t m : order) {
      if (rank[m] > rank[current]) {
        next = m;
        break;
      }
    }
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      if (rank[*it] < rank[current]) {
        previous = *it;
        break;
      }
    }
    CHECK(NextMatch(tree, order, current, true) == next);
    CHECK(NextMatch(tree, order, current, false) == previous);
  }
}

}  // namespace kiln::ui

namespace kiln::ui {

TEST_CASE("n / N step through matches left to right, top to bottom, wrapping") {
  const auto tree = testing::TreeFromFolded(
      "main;a;x 1\n"
      "main;b;x 1\n"
      "main;x 1\n");
  const auto result = SearchFlameTree(tree, "=x");
  const std::vector<uint32_t> order = MatchesInOrder(tree, result);
  REQUIRE(order.size() == 3);
  auto path = [&](uint32_t n) {
    std::string p;
    for (; n != 0; n = tree.nodes[n].parent) p = tree.Label(n) + (p.empty() ? "" : ";" + p);
    return p;
  };
  CHECK(path(order[0]) == "main;a;x");
  CHECK(path(order[1]) == "main;b;x");
  CHECK(path(order[2]) == "main;x");
  CHECK(NextMatch(tree, order, 0, true) == order[0]);  // from nothing selected
  CHECK(NextMatch(tree, order, order[0], true) == order[1]);
  CHECK(NextMatch(tree, order, order[2], true) == order[0]);  // wraps
  CHECK(NextMatch(tree, order, order[0], false) == order[2]);
  // From a non-match (b): the next match after it in drawing order.
  uint32_t b = 0;
  for (uint32_t i = 0; i < tree.nodes.size(); ++i) {
    if (tree.Label(i) == "b") b = i;
  }
  CHECK(NextMatch(tree, order, b, true) == order[1]);
  CHECK(NextMatch(tree, order, b, false) == order[0]);
  CHECK(NextMatch(tree, {}, b, true) == 0);
}

}  // namespace kiln::ui
