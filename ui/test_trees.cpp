#include "ui/test_trees.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace kiln::ui::testing {

using storage::FlameNode;
using storage::FlameTree;
using storage::FrameType;
using storage::NodeKind;

namespace {

struct TrieNode {
  std::string label;
  FrameType type = FrameType::kNative;
  int64_t total = 0;
  int64_t self = 0;
  std::map<std::string, std::unique_ptr<TrieNode>> children;
};

std::pair<std::string, FrameType> SplitType(std::string_view frame) {
  static const std::pair<std::string_view, FrameType> kSuffixes[] = {{"_[k]", FrameType::kKernel},
                                                                     {"_[py]", FrameType::kPython},
                                                                     {"_[go]", FrameType::kGo},
                                                                     {"_[j]", FrameType::kJvm},
                                                                     {"_[u]", FrameType::kUnknown}};
  for (const auto& [suffix, type] : kSuffixes) {
    if (frame.size() > suffix.size() && frame.substr(frame.size() - suffix.size()) == suffix) {
      return {std::string(frame.substr(0, frame.size() - suffix.size())), type};
    }
  }
  return {std::string(frame), FrameType::kNative};
}

class TreeWriter {
 public:
  FlameTree Write(const TrieNode& root) {
    tree_.nodes.push_back({});
    tree_.nodes[0].kind = NodeKind::kRoot;
    tree_.nodes[0].label = Intern("all");
    tree_.nodes[0].total = root.total;
    tree_.nodes[0].self = root.self;
    // Breadth first: a node's children are appended together, contiguous.
    std::vector<std::pair<const TrieNode*, uint32_t>> queue{{&root, 0}};
    for (size_t q = 0; q < queue.size(); ++q) {
      const auto [trie, index] = queue[q];
      tree_.nodes[index].first_child = static_cast<uint32_t>(tree_.nodes.size());
      tree_.nodes[index].child_count = static_cast<uint32_t>(trie->children.size());
      for (const auto& [label, child] : trie->children) {
        FlameNode n;
        n.parent = index;
        n.label = Intern(label);
        n.depth = static_cast<uint16_t>(tree_.nodes[index].depth + 1);
        n.kind = NodeKind::kFrame;
        n.type = child->type;
        n.total = child->total;
        n.self = child->self;
        n.frame = n.label;  // stand-in; no slice behind these trees
        tree_.max_depth = std::max(tree_.max_depth, n.depth);
        queue.push_back({child.get(), static_cast<uint32_t>(tree_.nodes.size())});
        tree_.nodes.push_back(n);
      }
    }
    return std::move(tree_);
  }

 private:
  uint32_t Intern(const std::string& s) {
    auto [it, inserted] = ids_.try_emplace(s, static_cast<uint32_t>(tree_.labels.size()));
    if (inserted) tree_.labels.push_back(s);
    return it->second;
  }
  FlameTree tree_;
  std::unordered_map<std::string, uint32_t> ids_;
};

}  // namespace

FlameTree TreeFromFolded(std::string_view folded) {
  TrieNode root;
  while (!folded.empty()) {
    const size_t eol = folded.find('\n');
    std::string_view line = folded.substr(0, eol);
    folded = eol == std::string_view::npos ? std::string_view{} : folded.substr(eol + 1);
    const size_t space = line.rfind(' ');
    if (line.empty() || space == std::string_view::npos) continue;
    const int64_t weight = std::stoll(std::string(line.substr(space + 1)));
    std::string_view stack = line.substr(0, space);
    TrieNode* node = &root;
    root.total += weight;
    while (!stack.empty()) {
      const size_t semi = stack.find(';');
      auto [label, type] = SplitType(stack.substr(0, semi));
      stack = semi == std::string_view::npos ? std::string_view{} : stack.substr(semi + 1);
      auto& child = node->children[label];
      if (!child) {
        child = std::make_unique<TrieNode>();
        child->label = label;
        child->type = type;
      }
      node = child.get();
      node->total += weight;
    }
    node->self += weight;
  }
  return TreeWriter().Write(root);
}

FlameTree SyntheticTree(uint32_t node_count, uint32_t fanout, uint16_t max_depth, bool balanced) {
  static const FrameType kTypes[] = {FrameType::kNative, FrameType::kKernel, FrameType::kGo,
                                     FrameType::kPython, FrameType::kJvm};
  FlameTree tree;
  tree.labels.push_back("all");
  tree.nodes.push_back({});
  tree.nodes[0].kind = NodeKind::kRoot;
  tree.nodes[0].total = int64_t{1} << 40;
  // Breadth first so children stay contiguous; weights split unevenly
  // (harmonic-ish) so a few children are wide and a long tail is tiny, as
  // in real profiles.
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  auto next = [&rng] {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
  };
  for (size_t q = 0; q < tree.nodes.size() && tree.nodes.size() < node_count; ++q) {
    const FlameNode parent = tree.nodes[q];
    if (parent.depth >= max_depth || parent.total < 16) continue;
    // Mostly call chains (one child), sometimes a fan-out: real profiles
    // are deep and narrow, with a long tail of small siblings.
    const uint32_t want = balanced          ? fanout
                          : next() % 10 < 6 ? 1
                                            : 2 + static_cast<uint32_t>(next() % (fanout - 1));
    const uint32_t children = std::min<uint32_t>(want, node_count - static_cast<uint32_t>(tree.nodes.size()));
    tree.nodes[q].first_child = static_cast<uint32_t>(tree.nodes.size());
    tree.nodes[q].child_count = children;
    int64_t remaining = parent.total - parent.total / 16;  // 1/16 is self
    tree.nodes[q].self = parent.total - remaining;
    for (uint32_t i = 0; i < children; ++i) {
      // Each child takes a random 30..90% of what is left; the last takes the rest.
      const int64_t share =
          balanced ? remaining / (children - i) : remaining / 100 * static_cast<int64_t>(30 + next() % 61);
      const int64_t w = i + 1 == children ? remaining : share;
      remaining -= std::min(w, remaining);
      FlameNode n;
      n.parent = static_cast<uint32_t>(q);
      n.depth = static_cast<uint16_t>(parent.depth + 1);
      n.kind = NodeKind::kFrame;
      n.type = kTypes[next() % std::size(kTypes)];
      n.total = std::max<int64_t>(w, 0);
      n.label = static_cast<uint32_t>(tree.labels.size());
      n.frame = n.label;
      tree.labels.push_back("kiln::synthetic::Namespace" + std::to_string(n.depth) + "::Function_" +
                            std::to_string(tree.nodes.size()) + "<std::vector<int>>(int, char const*)");
      tree.max_depth = std::max(tree.max_depth, n.depth);
      tree.nodes.push_back(n);
    }
  }
  for (FlameNode& n : tree.nodes) {
    if (n.child_count == 0) n.self = n.total;
  }
  return tree;
}

}  // namespace kiln::ui::testing
