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
  return std::string(kUnknownProcess);
}

std::string ThreadLabel(const ProfileDictionary& dict, uint32_t attribute_set) {
  if (auto v = dict.AttributeValue(attribute_set, attr::kThreadName); !v.empty()) return std::string(v);
  if (auto v = dict.AttributeValue(attribute_set, attr::kThreadId); !v.empty()) {
    return "tid " + std::string(v);
  }
  return std::string(kUnknownThread);
}

namespace {

// The tree is built without per-step hashing: every distinct (stack,
// attribute set) becomes a key sequence [process, thread, frame...] where a
// key is (label rank << 4 | frame type). Sorting the sequences puts equal
// prefixes next to each other and siblings in label order, so one walk
// over the sorted entries emits every node straight into its final
// breadth-first place.
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
  // A group level is drawn only when it tells something: when no sample
  // of the slice names its process (or thread), every stack would sit
  // under one "unknown" node.
  bool use_process = false, use_thread = false;
  const uint32_t unknown_process = labels.Intern(std::string(kUnknownProcess));
  const uint32_t unknown_thread = labels.Intern(std::string(kUnknownThread));
  for (const StackWeight& w : weights) {
    if (options.group_by != GroupBy::kNone) {
      uint32_t& pl = process_label[w.attribute_set];
      if (pl == kUnset) pl = labels.Intern(ProcessLabel(dict, w.attribute_set));
      use_process = use_process || pl != unknown_process;
    }
    if (options.group_by == GroupBy::kThread) {
      uint32_t& tl = thread_label[w.attribute_set];
      if (tl == kUnset) tl = labels.Intern(ThreadLabel(dict, w.attribute_set));
      use_thread = use_thread || tl != unknown_thread;
    }
  }
  NodeKind level_kind[2] = {NodeKind::kFrame, NodeKind::kFrame};
  int group_levels = 0;
  if (use_process) level_kind[group_levels++] = NodeKind::kProcess;
  if (use_thread) level_kind[group_levels++] = NodeKind::kThread;
  std::vector<uint32_t> seq_offsets;
  seq_offsets.reserve(weights.size() + 1);
  seq_offsets.push_back(0);
  std::vector<uint32_t> seq;  // label ids first, turned into keys below
  std::vector<uint32_t> seq_frame;  // representative frame per sequence element
  for (const StackWeight& w : weights) {
    if (use_process) {
      seq.push_back(process_label[w.attribute_set] << kTypeBits);
      seq_frame.push_back(0);
    }
    if (use_thread) {
      seq.push_back(thread_label[w.attribute_set] << kTypeBits);
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

  // 3. Nodes straight into breadth-first position. In sorted order, entry
  // k creates the nodes at depths lcp[k] .. len[k]-1 (lcp[k]: common prefix
  // with entry k-1), and the nodes of one depth appear in the same order
  // breadth-first and in this walk. So counting nodes per depth first gives
  // every node its final index as it is created, each parent's children
  // land next to each other, and each entry's keys are read front to back.
  const size_t entries = order.size();
  std::vector<uint32_t> lcp(entries, 0);
  size_t max_len = 0;
  for (size_t k = 0; k < entries; ++k) {
    const uint32_t e = order[k];
    const size_t n = seq_offsets[e + 1] - seq_offsets[e];
    max_len = std::max(max_len, n);
    if (k == 0 || n == 0) continue;
    const uint32_t p = order[k - 1];
    const size_t limit = std::min<size_t>(n, seq_offsets[p + 1] - seq_offsets[p]);
    const uint32_t* s0 = seq.data() + seq_offsets[e];
    lcp[k] = static_cast<uint32_t>(std::mismatch(s0, s0 + limit, seq.data() + seq_offsets[p]).first - s0);
  }
  // depth_start[d]: index of the first node at depth d + 1 (the root is 0).
  std::vector<uint32_t> depth_start(max_len + 2, 0);
  for (size_t k = 0; k < entries; ++k) {
    const uint32_t e = order[k];
    const uint32_t n = seq_offsets[e + 1] - seq_offsets[e];
    for (uint32_t d = lcp[k]; d < n; ++d) depth_start[d + 1]++;
  }
  depth_start[0] = 1;
  for (size_t d = 0; d <= max_len; ++d) depth_start[d + 1] += depth_start[d];
  std::vector<FlameNode>& out = tree.nodes;
  out.assign(depth_start[max_len], FlameNode{});
  out[0] = root;
  std::vector<uint32_t> next(depth_start.begin(), depth_start.end() - 1);  // next free index per depth
  std::vector<uint32_t> path(max_len + 1, 0);  // path[d]: node at depth d of the current entry
  for (size_t k = 0; k < entries; ++k) {
    const uint32_t e = order[k];
    const uint32_t begin = seq_offsets[e];
    const uint32_t n = seq_offsets[e + 1] - begin;
    for (uint32_t d = lcp[k]; d < n; ++d) {
      const uint32_t key = seq[begin + d];
      const uint32_t parent = d == 0 ? 0 : path[d];
      const uint32_t index = next[d]++;
      FlameNode& node = out[index];
      node.parent = parent;
      node.label = label_of_rank[key >> kTypeBits];
      node.type = static_cast<FrameType>(key & ((1u << kTypeBits) - 1));
      node.kind = static_cast<int>(d) < group_levels ? level_kind[d] : NodeKind::kFrame;
      node.frame = seq_frame[begin + d];
      node.depth = static_cast<uint16_t>(std::min<uint32_t>(d + 1, UINT16_MAX));
      FlameNode& p = out[parent];
      if (p.child_count++ == 0) p.first_child = index;
      path[d + 1] = index;
    }
    out[n == 0 ? 0 : path[n]].self += weights[e].weight;
  }
  // 4. Totals bottom-up: in breadth-first order every child comes after its
  // parent.
  for (size_t i = out.size(); i-- > 0;) {
    out[i].total += out[i].self;
    if (i > 0) out[out[i].parent].total += out[i].total;
  }
  tree.max_depth = static_cast<uint16_t>(std::min<size_t>(max_len, UINT16_MAX));
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
