#include "storage/flame_tree.h"

#include <algorithm>
#include <numeric>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace kiln::storage {

bool ParseGroupBy(std::string_view name, GroupBy* group_by) {
  if (name == "none") *group_by = GroupBy::kNone;
  else if (name == "process") *group_by = GroupBy::kProcess;
  else if (name == "thread") *group_by = GroupBy::kThread;
  else return false;
  return true;
}

std::string ProcessLabel(const ProfileDictionary& dict, uint32_t attribute_set) {
  if (auto v = dict.AttributeValue(attribute_set, attr::kProcessExecutableName); !v.empty()) {
    return std::string(v);
  }
  if (auto v = dict.AttributeValue(attribute_set, attr::kProcessExecutablePath); !v.empty()) {
    size_t slash = v.find_last_of('/');
    return std::string(slash == std::string_view::npos ? v : v.substr(slash + 1));
  }
  if (auto v = dict.AttributeValue(attribute_set, attr::kServiceName); !v.empty()) return std::string(v);
  if (auto v = dict.AttributeValue(attribute_set, attr::kProcessPid); !v.empty()) {
    return "pid " + std::string(v);
  }
  return "unknown";
}

std::string ThreadLabel(const ProfileDictionary& dict, uint32_t attribute_set) {
  if (auto v = dict.AttributeValue(attribute_set, attr::kThreadName); !v.empty()) return std::string(v);
  if (auto v = dict.AttributeValue(attribute_set, attr::kThreadId); !v.empty()) {
    return "tid " + std::string(v);
  }
  return "unknown thread";
}

namespace {

// Builds the tree in insertion order with a hash map for child lookup,
// then renumbers it breadth first so children end up contiguous.
class TreeBuilder {
 public:
  explicit TreeBuilder(FlameTree* tree) : tree_(*tree) {
    nodes_.push_back({});
    nodes_[0].kind = NodeKind::kRoot;
    nodes_[0].label = Label("all");
  }

  uint32_t Label(std::string_view text) {
    if (auto it = label_ids_.find(std::string(text)); it != label_ids_.end()) return it->second;
    auto id = static_cast<uint32_t>(tree_.labels.size());
    tree_.labels.emplace_back(text);
    label_ids_.emplace(std::string(text), id);
    return id;
  }

  uint32_t Child(uint32_t parent, uint32_t label, NodeKind kind, FrameType type, uint32_t frame) {
    uint64_t key = (uint64_t{parent} << 32) | label;
    // Same label with another frame type is another node (a Go and a C
    // function may share a name); type goes into a second-level check.
    auto [it, added] = children_.try_emplace(Key{key, static_cast<uint8_t>(type)},
                                             static_cast<uint32_t>(nodes_.size()));
    if (added) {
      FlameNode n;
      n.parent = parent;
      n.label = label;
      n.kind = kind;
      n.type = type;
      n.frame = frame;
      n.depth = static_cast<uint16_t>(std::min<int>(nodes_[parent].depth + 1, UINT16_MAX));
      nodes_.push_back(n);
    }
    return it->second;
  }

  std::vector<FlameNode>& nodes() { return nodes_; }

  // Renumbers breadth first with children sorted by label text, then type.
  void Finish() {
    const size_t n = nodes_.size();
    std::vector<uint32_t> label_rank(tree_.labels.size());
    {
      std::vector<uint32_t> order(tree_.labels.size());
      std::iota(order.begin(), order.end(), 0);
      std::sort(order.begin(), order.end(),
                [&](uint32_t a, uint32_t b) { return tree_.labels[a] < tree_.labels[b]; });
      for (uint32_t r = 0; r < order.size(); ++r) label_rank[order[r]] = r;
    }
    // Children of each node as a CSR array.
    std::vector<uint32_t> start(n + 1, 0);
    for (size_t i = 1; i < n; ++i) start[nodes_[i].parent + 1]++;
    for (size_t i = 0; i < n; ++i) start[i + 1] += start[i];
    std::vector<uint32_t> children(n > 0 ? n - 1 : 0);
    std::vector<uint32_t> fill(start.begin(), start.end() - 1);
    for (size_t i = 1; i < n; ++i) children[fill[nodes_[i].parent]++] = static_cast<uint32_t>(i);

    std::vector<FlameNode>& out = tree_.nodes;
    out.clear();
    out.reserve(n);
    std::vector<uint32_t> old_of_new;
    old_of_new.reserve(n);
    out.push_back(nodes_[0]);
    old_of_new.push_back(0);
    for (size_t i = 0; i < out.size(); ++i) {
      uint32_t old = old_of_new[i];
      auto begin = children.begin() + start[old], end = children.begin() + start[old + 1];
      std::sort(begin, end, [&](uint32_t a, uint32_t b) {
        if (nodes_[a].label != nodes_[b].label) return label_rank[nodes_[a].label] < label_rank[nodes_[b].label];
        return nodes_[a].type < nodes_[b].type;
      });
      out[i].first_child = static_cast<uint32_t>(out.size());
      out[i].child_count = static_cast<uint32_t>(end - begin);
      for (auto c = begin; c != end; ++c) {
        FlameNode child = nodes_[*c];
        child.parent = static_cast<uint32_t>(i);
        out.push_back(child);
        old_of_new.push_back(*c);
        tree_.max_depth = std::max(tree_.max_depth, child.depth);
      }
    }
  }

 private:
  struct Key {
    uint64_t parent_label;
    uint8_t type;
    bool operator==(const Key&) const = default;
    template <typename H>
    friend H AbslHashValue(H h, const Key& k) {
      return H::combine(std::move(h), k.parent_label, k.type);
    }
  };
  FlameTree& tree_;
  std::vector<FlameNode> nodes_;
  absl::flat_hash_map<Key, uint32_t> children_;
  absl::flat_hash_map<std::string, uint32_t> label_ids_;
};

}  // namespace

FlameTree BuildFlameTree(std::shared_ptr<const ProfileSlice> slice, const FlameTreeOptions& options) {
  FlameTree tree;
  tree.slice = slice;
  TreeBuilder builder(&tree);
  if (!slice) {
    builder.Finish();
    return tree;
  }
  const ProfileDictionary& dict = slice->dict;
  constexpr uint32_t kUnset = UINT32_MAX;
  std::vector<uint32_t> frame_label(dict.frames.size(), kUnset);
  std::vector<uint32_t> process_label(dict.AttributeSetCount(), kUnset);
  std::vector<uint32_t> thread_label(dict.AttributeSetCount(), kUnset);
  std::vector<uint32_t> path;
  for (const StackWeight& w : slice->weights) {
    path.clear();
    uint32_t node = 0;
    if (options.group_by != GroupBy::kNone) {
      uint32_t& pl = process_label[w.attribute_set];
      if (pl == kUnset) pl = builder.Label(ProcessLabel(dict, w.attribute_set));
      node = builder.Child(node, pl, NodeKind::kProcess, FrameType::kUnknown, 0);
      path.push_back(node);
      if (options.group_by == GroupBy::kThread) {
        uint32_t& tl = thread_label[w.attribute_set];
        if (tl == kUnset) tl = builder.Label(ThreadLabel(dict, w.attribute_set));
        node = builder.Child(node, tl, NodeKind::kThread, FrameType::kUnknown, 0);
        path.push_back(node);
      }
    }
    for (uint32_t f : dict.Stack(w.stack)) {
      const Frame& frame = dict.frames[f];
      if (!options.show_inline && frame.inlined) continue;
      uint32_t& fl = frame_label[f];
      if (fl == kUnset) fl = builder.Label(FrameLabel(dict, f));
      node = builder.Child(node, fl, NodeKind::kFrame, frame.type, f);
      path.push_back(node);
    }
    std::vector<FlameNode>& nodes = builder.nodes();
    nodes[0].total += w.weight;
    for (uint32_t n : path) nodes[n].total += w.weight;
    nodes[node].self += w.weight;
  }
  builder.Finish();
  return tree;
}

std::string PrintFlameTree(const FlameTree& tree) {
  std::string out;
  if (tree.nodes.empty()) return out;
  // Depth-first in tree order, iteratively (trees can be deep).
  std::vector<uint32_t> stack = {0};
  while (!stack.empty()) {
    uint32_t i = stack.back();
    stack.pop_back();
    const FlameNode& n = tree.nodes[i];
    out.append(static_cast<size_t>(n.depth) * 2, ' ');
    absl::StrAppend(&out, tree.Label(i), " ", n.total);
    if (n.self != 0) absl::StrAppend(&out, " self=", n.self);
    out.push_back('\n');
    for (uint32_t c = n.child_count; c > 0; --c) stack.push_back(n.first_child + c - 1);
  }
  return out;
}

}  // namespace kiln::storage
