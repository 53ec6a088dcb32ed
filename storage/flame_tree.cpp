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
// prefixes next to each other and siblings in label order, so the nodes of
// each depth can be emitted in one pass over the sorted entries, already in
// their final breadth-first place.
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

  // 3. Breadth-first, depth by depth. In sorted order, the distinct
  // prefixes of length d+1 are exactly the nodes at depth d+1, grouped by
  // parent and in label order; so nodes are appended in their final
  // breadth-first position and each parent's children come out contiguous.
  // lcp[k] is the common prefix length of sorted entries k-1 and k; for two
  // entries further apart it is the minimum over the lcps between them.
  const size_t entries = order.size();
  // lcp[k]: common prefix length of sorted entries k-1 and k.
  std::vector<uint32_t> lcp(entries, 0);
  std::vector<uint32_t> len(entries);
  size_t max_len = 0;
  for (size_t k = 0; k < entries; ++k) {
    const uint32_t e = order[k];
    len[k] = seq_offsets[e + 1] - seq_offsets[e];
    max_len = std::max<size_t>(max_len, len[k]);
    if (k == 0 || len[k] == 0) continue;
    const uint32_t p = order[k - 1];
    const size_t limit = std::min<size_t>(len[k], seq_offsets[p + 1] - seq_offsets[p]);
    const uint32_t* s0 = seq.data() + seq_offsets[e];
    lcp[k] = static_cast<uint32_t>(std::mismatch(s0, s0 + limit, seq.data() + seq_offsets[p]).first - s0);
  }
  // Column-major copies: column d holds element d of every entry longer
  // than d, in sorted order, which is exactly the order the depth-d pass
  // below visits them; each pass then reads memory front to back.
  std::vector<uint32_t> column_start(max_len + 1, 0);
  for (size_t k = 0; k < entries; ++k) {
    for (uint32_t d = 0; d < len[k]; ++d) column_start[d + 1]++;
  }
  for (size_t d = 0; d < max_len; ++d) column_start[d + 1] += column_start[d];
  std::vector<uint32_t> column_keys(seq.size()), column_frames(seq.size());
  {
    std::vector<uint32_t> fill(column_start.begin(), column_start.end() - 1);
    for (size_t k = 0; k < entries; ++k) {
      const uint32_t base = seq_offsets[order[k]];
      for (uint32_t d = 0; d < len[k]; ++d) {
        column_keys[fill[d]] = seq[base + d];
        column_frames[fill[d]++] = seq_frame[base + d];
      }
    }
  }

  std::vector<FlameNode>& out = tree.nodes;
  out.reserve(seq.size() / 2 + 1);
  out.push_back(root);
  // The entries still long enough for the current depth, each with its
  // node at the previous depth and its lcp to the previous active entry.
  struct Active {
    uint32_t k;
    uint32_t node;
    uint32_t lcp;
  };
  std::vector<Active> active;
  active.reserve(entries);
  for (size_t k = 0; k < entries; ++k) {
    if (len[k] == 0) {
      out[0].self += weights[order[k]].weight;
    } else {
      active.push_back({static_cast<uint32_t>(k), 0, lcp[k]});
    }
  }
  for (size_t d = 0; !active.empty(); ++d) {
    const uint32_t* keys_d = column_keys.data() + column_start[d];
    const uint32_t* frames_d = column_frames.data() + column_start[d];
    const NodeKind kind = static_cast<int>(d) < group_levels ? (d == 0 ? NodeKind::kProcess : NodeKind::kThread)
                                                             : NodeKind::kFrame;
    const auto depth = static_cast<uint16_t>(std::min<size_t>(d + 1, UINT16_MAX));
    size_t kept = 0;
    uint32_t carried_lcp = UINT32_MAX;  // min lcp over entries dropped since the last kept one
    uint32_t current = 0;
    for (size_t i = 0; i < active.size(); ++i) {
      const Active a = active[i];
      if (i == 0 || a.lcp <= d) {
        const uint32_t key = keys_d[i];
        FlameNode node;
        node.parent = a.node;
        node.label = label_of_rank[key >> kTypeBits];
        node.type = static_cast<FrameType>(key & ((1u << kTypeBits) - 1));
        node.kind = kind;
        node.frame = frames_d[i];
        node.depth = depth;
        current = static_cast<uint32_t>(out.size());
        FlameNode& parent = out[node.parent];
        if (parent.child_count++ == 0) parent.first_child = current;
        out.push_back(node);
      }
      if (len[a.k] == d + 1) {
        // Ends here: its weight is this node's self; its lcp carries over
        // to the next active entry.
        out[current].self += weights[order[a.k]].weight;
        carried_lcp = std::min(carried_lcp, a.lcp);
      } else {
        // Next pass compares with the previous entry that is still active.
        active[kept++] = {a.k, current, std::min(carried_lcp, a.lcp)};
        carried_lcp = UINT32_MAX;
      }
    }
    active.resize(kept);
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
