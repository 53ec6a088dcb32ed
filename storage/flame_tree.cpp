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

// The tree is built without per-step hashing: every distinct (stack,
// attribute set) becomes a key sequence [process, thread, frame...] where a
// key is (label rank << 4 | frame type). Sorting the sequences puts equal
// prefixes next to each other and siblings in label order, so one pass
// creates the nodes (preorder) and a breadth-first renumbering makes
// children contiguous without further sorting.
constexpr int kTypeBits = 4;
static_assert(kFrameTypeCount <= (1 << kTypeBits), "frame type must fit in the key's low bits");

class LabelTable {
 public:
  explicit LabelTable(std::vector<std::string>* labels) : labels_(*labels) {}
  uint32_t Intern(std::string text) {
    auto [it, added] = ids_.try_emplace(std::move(text), static_cast<uint32_t>(labels_.size()));
    if (added) labels_.push_back(it->first);
    return it->second;
  }

 private:
  std::vector<std::string>& labels_;
  absl::flat_hash_map<std::string, uint32_t> ids_;
};

}  // namespace

FlameTree BuildFlameTree(std::shared_ptr<const ProfileSlice> slice, const FlameTreeOptions& options) {
  FlameTree tree;
  tree.slice = slice;
  LabelTable labels(&tree.labels);
  FlameNode root;
  root.kind = NodeKind::kRoot;
  root.label = labels.Intern("all");
  if (!slice) {
    tree.nodes.push_back(root);
    return tree;
  }
  const ProfileDictionary& dict = slice->dict;
  const std::vector<StackWeight>& weights = slice->weights;

  // 1. Label ids per frame and per attribute set, computed once each.
  constexpr uint32_t kUnset = UINT32_MAX;
  std::vector<uint32_t> frame_label(dict.frames.size(), kUnset);
  std::vector<uint32_t> process_label(dict.AttributeSetCount(), kUnset);
  std::vector<uint32_t> thread_label(dict.AttributeSetCount(), kUnset);
  const int group_levels = options.group_by == GroupBy::kNone ? 0 : options.group_by == GroupBy::kProcess ? 1 : 2;
  std::vector<uint32_t> seq_offsets;
  seq_offsets.reserve(weights.size() + 1);
  seq_offsets.push_back(0);
  std::vector<uint32_t> seq;  // label ids first, turned into keys below
  std::vector<uint32_t> seq_frame;  // representative frame per sequence element
  for (const StackWeight& w : weights) {
    if (group_levels >= 1) {
      uint32_t& pl = process_label[w.attribute_set];
      if (pl == kUnset) pl = labels.Intern(ProcessLabel(dict, w.attribute_set));
      seq.push_back(pl << kTypeBits);
      seq_frame.push_back(0);
    }
    if (group_levels >= 2) {
      uint32_t& tl = thread_label[w.attribute_set];
      if (tl == kUnset) tl = labels.Intern(ThreadLabel(dict, w.attribute_set));
      seq.push_back(tl << kTypeBits);
      seq_frame.push_back(0);
    }
    for (uint32_t f : dict.Stack(w.stack)) {
      const Frame& frame = dict.frames[f];
      if (!options.show_inline && frame.inlined) continue;
      uint32_t& fl = frame_label[f];
      if (fl == kUnset) fl = labels.Intern(FrameLabel(dict, f));
      seq.push_back((fl << kTypeBits) | static_cast<uint32_t>(frame.type));
      seq_frame.push_back(f);
    }
    seq_offsets.push_back(static_cast<uint32_t>(seq.size()));
  }

  // 2. Replace label ids by their rank in text order, so sorting keys sorts
  // siblings alphabetically (as flame graph tools do).
  std::vector<uint32_t> rank(tree.labels.size());
  {
    std::vector<uint32_t> order(tree.labels.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(),
              [&](uint32_t a, uint32_t b) { return tree.labels[a] < tree.labels[b]; });
    for (uint32_t r = 0; r < order.size(); ++r) rank[order[r]] = r;
  }
  for (uint32_t& k : seq) k = (rank[k >> kTypeBits] << kTypeBits) | (k & ((1u << kTypeBits) - 1));
  std::vector<uint32_t> label_of_rank(rank.size());
  for (uint32_t id = 0; id < rank.size(); ++id) label_of_rank[rank[id]] = id;

  std::vector<uint32_t> order(weights.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return std::lexicographical_compare(seq.begin() + seq_offsets[a], seq.begin() + seq_offsets[a + 1],
                                        seq.begin() + seq_offsets[b], seq.begin() + seq_offsets[b + 1]);
  });

  // 3. One pass in sorted order creates nodes in preorder.
  std::vector<FlameNode> pre;
  pre.reserve(seq.size() + 1);
  pre.push_back(root);
  std::vector<uint32_t> path;  // node per depth below the root
  uint32_t prev = UINT32_MAX;
  for (uint32_t e : order) {
    const uint32_t* s = seq.data() + seq_offsets[e];
    const size_t n = seq_offsets[e + 1] - seq_offsets[e];
    size_t common = 0;
    if (prev != UINT32_MAX) {
      const uint32_t* p = seq.data() + seq_offsets[prev];
      const size_t pn = seq_offsets[prev + 1] - seq_offsets[prev];
      const size_t limit = std::min({n, pn, path.size()});
      common = static_cast<size_t>(std::mismatch(s, s + limit, p).first - s);
    }
    path.resize(common);
    for (size_t i = common; i < n; ++i) {
      FlameNode node;
      node.parent = path.empty() ? 0 : path.back();
      node.label = label_of_rank[s[i] >> kTypeBits];
      node.type = static_cast<FrameType>(s[i] & ((1u << kTypeBits) - 1));
      node.kind = static_cast<int>(i) < group_levels ? (i == 0 ? NodeKind::kProcess : NodeKind::kThread)
                                                     : NodeKind::kFrame;
      node.frame = seq_frame[seq_offsets[e] + i];
      node.depth = static_cast<uint16_t>(std::min<size_t>(i + 1, UINT16_MAX));
      pre.push_back(node);
      path.push_back(static_cast<uint32_t>(pre.size() - 1));
    }
    pre[path.empty() ? 0 : path.back()].self += weights[e].weight;
    prev = e;
  }
  // Totals bottom-up: in preorder every child comes after its parent.
  for (size_t i = pre.size(); i-- > 0;) {
    pre[i].total += pre[i].self;
    if (i > 0) pre[pre[i].parent].total += pre[i].total;
  }

  // 4. Breadth-first renumbering: children become contiguous, and they are
  // already in label order because preorder visited them that way.
  const size_t count = pre.size();
  std::vector<uint32_t> start(count + 1, 0);
  for (size_t i = 1; i < count; ++i) start[pre[i].parent + 1]++;
  for (size_t i = 0; i < count; ++i) start[i + 1] += start[i];
  std::vector<uint32_t> children(count > 0 ? count - 1 : 0);
  {
    std::vector<uint32_t> fill(start.begin(), start.end() - 1);
    for (size_t i = 1; i < count; ++i) children[fill[pre[i].parent]++] = static_cast<uint32_t>(i);
  }
  // Walk the small integer arrays first to get the new order, then copy the
  // nodes in one sequential read: copying in breadth-first order directly
  // would read 40-byte nodes at random and dominate the build.
  std::vector<uint32_t> bfs;  // old ids in breadth-first order
  bfs.reserve(count);
  std::vector<uint32_t> first_child(count);
  bfs.push_back(0);
  for (size_t k = 0; k < bfs.size(); ++k) {
    uint32_t old = bfs[k];
    first_child[k] = static_cast<uint32_t>(bfs.size());
    bfs.insert(bfs.end(), children.begin() + start[old], children.begin() + start[old + 1]);
  }
  std::vector<uint32_t> new_of_old(count);
  for (uint32_t k = 0; k < count; ++k) new_of_old[bfs[k]] = k;
  std::vector<FlameNode>& out = tree.nodes;
  out.resize(count);
  for (uint32_t old = 0; old < count; ++old) {
    uint32_t k = new_of_old[old];
    FlameNode& node = out[k];
    node = pre[old];
    node.parent = new_of_old[pre[old].parent];
    node.first_child = first_child[k];
    node.child_count = start[old + 1] - start[old];
    tree.max_depth = std::max(tree.max_depth, node.depth);
  }
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
