#include "storage/model/flame_tree.h"

#include <algorithm>
#include <numeric>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "storage/model/spans.h"

namespace kiln::storage {

bool ParseGroupBy(std::string_view name, FlameTreeOptions* options) {
  options->group_attribute.clear();
  if (name == "none") options->group_by = GroupBy::kNone;
  else if (name == "process") options->group_by = GroupBy::kProcess;
  else if (name == "thread") options->group_by = GroupBy::kThread;
  else if (name == "instance") options->group_by = GroupBy::kInstance;
  else if (name == "instance-thread") options->group_by = GroupBy::kInstanceThread;
  else if (name == "span") options->group_by = GroupBy::kSpan;
  else if (name.empty()) return false;
  else {
    options->group_by = GroupBy::kAttribute;
    options->group_attribute = std::string(name);
  }
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

std::string ProcessInstanceLabel(const ProfileDictionary& dict, uint32_t attribute_set, const OwnProcess& own) {
  std::string label = ProcessLabel(dict, attribute_set);
  const std::string_view pid = dict.AttributeValue(attribute_set, attr::kProcessPid);
  // "pid 42" already says it.
  if (pid.empty() || label.rfind("pid ", 0) == 0) return label;
  label += " [" + std::string(pid) + "]";
  if (!own.pid.empty() && pid == own.pid) {
    const std::string_view host = dict.AttributeValue(attribute_set, attr::kHostName);
    const bool here = host.empty() ? IsLoopbackAddress(dict.AttributeValue(attribute_set, attr::kKilnSender))
                                   : host == own.host;
    if (here) label += " (this Kiln)";
  }
  return label;
}

std::string_view InstancePid(std::string_view label) {
  const size_t open = label.rfind(" [");
  if (open == std::string_view::npos) return {};
  const size_t close = label.find(']', open);
  if (close == std::string_view::npos || close == open + 2) return {};
  const std::string_view pid = label.substr(open + 2, close - open - 2);
  if (pid.find_first_not_of("0123456789") != std::string_view::npos) return {};
  const std::string_view rest = label.substr(close + 1);
  if (!rest.empty() && rest != " (this Kiln)") return {};
  return pid;
}

std::string ThreadLabel(const ProfileDictionary& dict, uint32_t attribute_set) {
  if (auto v = dict.AttributeValue(attribute_set, attr::kThreadName); !v.empty()) return std::string(v);
  if (auto v = dict.AttributeValue(attribute_set, attr::kThreadId); !v.empty()) {
    return "tid " + std::string(v);
  }
  return std::string(kUnknownThread);
}

std::string ThreadInstanceLabel(const ProfileDictionary& dict, uint32_t attribute_set, const OwnProcess& own) {
  std::string label = ProcessInstanceLabel(dict, attribute_set, own);
  const std::string_view tid = dict.AttributeValue(attribute_set, attr::kThreadId);
  const std::string_view name = dict.AttributeValue(attribute_set, attr::kThreadName);
  if (tid.empty() && name.empty()) return label;
  label += " \xc2\xb7 ";  // a middle dot
  if (!name.empty()) {
    label += name;
    if (!tid.empty()) label += " [" + std::string(tid) + "]";
  } else {
    label += "tid " + std::string(tid);
  }
  return label;
}

std::string AttributeGroupLabel(const ProfileDictionary& dict, uint32_t attribute_set, std::string_view key) {
  if (auto v = dict.AttributeValue(attribute_set, key); !v.empty()) return std::string(v);
  return "no " + std::string(key);
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

FlameTree BuildFlameTree(const Stacks& stacks, const FlameTreeOptions& options) {
  return BuildUnionTree({&stacks}, options, nullptr);
}

Stacks StacksFor(std::shared_ptr<const ProfileSlice> slice, const FlameTreeOptions& options) {
  if (options.group_by == GroupBy::kSpan) slice = SliceWithSpanAttributes(std::move(slice));
  return ApplyTransforms(StacksOf(std::move(slice), options.show_inline), options.transforms);
}

FlameTree BuildFlameTree(std::shared_ptr<const ProfileSlice> slice, const FlameTreeOptions& options) {
  return BuildFlameTree(StacksFor(std::move(slice), options), options);
}

Sandwich BuildSandwich(const Stacks& stacks, const std::string& function) {
  using Kind = Transform::Kind;
  const FlameTreeOptions options{.group_by = GroupBy::kNone};
  const Stacks collapsed = ApplyTransform(stacks, {Kind::kCollapseRecursion, function, {}});
  return {BuildFlameTree(ApplyTransform(collapsed, {Kind::kCallersOf, function, {}}), options),
          BuildFlameTree(ApplyTransform(collapsed, {Kind::kFocusFunction, function, {}}), options)};
}

FlameTree BuildUnionTree(const std::vector<const Stacks*>& inputs, const FlameTreeOptions& options,
                         std::vector<NodeWeights>* first_weights) {
  FlameTree tree;
  LabelTable labels(&tree.labels);
  FlameNode root;
  root.kind = NodeKind::kRoot;
  root.label = labels.Intern("all");
  const size_t primary = inputs.empty() ? 0 : inputs.size() - 1;
  if (!inputs.empty()) tree.slice = inputs[primary]->slice;
  if (first_weights != nullptr) first_weights->clear();

  // 1. The group levels (process, thread or an attribute) and their labels
  // per attribute set, and a label per function, each computed once.
  struct Level {
    NodeKind kind;
    uint32_t unknown;  // the label of a sample that names nothing here
    std::string (*label)(const ProfileDictionary&, uint32_t, const FlameTreeOptions&);
  };
  std::vector<Level> levels;
  auto process = [](const ProfileDictionary& d, uint32_t set, const FlameTreeOptions&) {
    return ProcessLabel(d, set);
  };
  auto instance = [](const ProfileDictionary& d, uint32_t set, const FlameTreeOptions& o) {
    return ProcessInstanceLabel(d, set, o.own);
  };
  auto thread = [](const ProfileDictionary& d, uint32_t set, const FlameTreeOptions&) { return ThreadLabel(d, set); };
  auto attribute = [](const ProfileDictionary& d, uint32_t set, const FlameTreeOptions& o) {
    return AttributeGroupLabel(d, set, o.group_attribute);
  };
  const GroupBy g = options.group_by;
  if (g == GroupBy::kProcess || g == GroupBy::kThread) {
    levels.push_back({NodeKind::kProcess, labels.Intern(std::string(kUnknownProcess)), process});
  }
  if (g == GroupBy::kInstance || g == GroupBy::kInstanceThread) {
    levels.push_back({NodeKind::kProcess, labels.Intern(std::string(kUnknownProcess)), instance});
  }
  if (g == GroupBy::kThread || g == GroupBy::kInstanceThread) {
    levels.push_back({NodeKind::kThread, labels.Intern(std::string(kUnknownThread)), thread});
  }
  if (g == GroupBy::kSpan) {
    levels.push_back({NodeKind::kGroup, labels.Intern(std::string(kNoSpan)),
                      [](const ProfileDictionary& d, uint32_t set, const FlameTreeOptions&) {
                        return SpanGroupLabel(d, set);
                      }});
  }
  if (g == GroupBy::kAttribute) {
    levels.push_back({NodeKind::kGroup, labels.Intern("no " + options.group_attribute), attribute});
  }
  constexpr uint32_t kUnset = UINT32_MAX;
  // level_label[input][level][attribute set]
  std::vector<std::vector<std::vector<uint32_t>>> level_label(inputs.size());
  std::vector<std::vector<uint32_t>> function_label(inputs.size());
  // A group level is drawn only when it tells something: when no sample
  // names its process (or thread...), every stack would sit under one
  // "unknown" node.
  std::vector<uint8_t> level_used(levels.size(), 0);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Stacks& in = *inputs[i];
    const ProfileDictionary* dict = in.slice ? &in.slice->dict : nullptr;
    level_label[i].assign(levels.size(), std::vector<uint32_t>(dict ? dict->AttributeSetCount() : 0, kUnset));
    function_label[i].assign(in.functions ? in.functions->size() : 0, kUnset);
    for (size_t e = 0; e < in.size() && dict != nullptr; ++e) {
      for (size_t l = 0; l < levels.size(); ++l) {
        uint32_t& label = level_label[i][l][in.attribute_sets[e]];
        if (label == kUnset) label = labels.Intern(levels[l].label(*dict, in.attribute_sets[e], options));
        level_used[l] = level_used[l] || label != levels[l].unknown;
      }
    }
  }
  std::vector<NodeKind> level_kind;
  for (size_t l = 0; l < levels.size(); ++l) {
    if (level_used[l]) level_kind.push_back(levels[l].kind);
  }
  const int group_levels = static_cast<int>(level_kind.size());

  // Key sequences: one per stack of every input.
  size_t entries = 0;
  for (const Stacks* in : inputs) entries += in->size();
  size_t elements = 0;
  for (const Stacks* in : inputs) elements += in->elements.size() + in->size() * level_kind.size();
  std::vector<uint32_t> seq_offsets(entries + 1, 0);
  std::vector<uint32_t> seq(elements);        // label ids first, turned into keys below
  std::vector<uint32_t> seq_frame(elements);  // representative frame per sequence element
  std::vector<uint8_t> entry_input(entries);
  std::vector<int64_t> entry_weight(entries);
  std::vector<uint64_t> entry_events(entries);
  size_t at = 0;
  size_t entry = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Stacks& in = *inputs[i];
    // A function's key and frame, looked up once: the loop below reads
    // them for every element, and a StackFunction is a cache line.
    std::vector<uint32_t>& key_of = function_label[i];
    std::vector<uint32_t> frame_of(key_of.size(), 0);
    for (uint32_t element : in.elements) {
      uint32_t& key = key_of[element];
      if (key != kUnset) continue;
      const StackFunction& f = (*in.functions)[element];
      key = (labels.Intern(f.name) << kTypeBits) | static_cast<uint32_t>(f.type);
      frame_of[element] = i == primary ? f.frame : 0;
    }
    for (size_t e = 0; e < in.size(); ++e, ++entry) {
      for (size_t l = 0; l < levels.size(); ++l) {
        if (!level_used[l]) continue;
        seq[at] = level_label[i][l][in.attribute_sets[e]] << kTypeBits;
        seq_frame[at++] = 0;
      }
      auto [begin, end] = in.Stack(e);
      for (const uint32_t* p = begin; p != end; ++p) {
        seq[at] = key_of[*p];
        seq_frame[at++] = frame_of[*p];
      }
      seq_offsets[entry + 1] = static_cast<uint32_t>(at);
      entry_input[entry] = static_cast<uint8_t>(i == primary ? 1 : 0);
      entry_weight[entry] = in.weights[e];
      entry_events[entry] = in.events[e];
    }
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

  std::vector<uint32_t> order(entries);
  std::iota(order.begin(), order.end(), 0);
  auto less = [&](uint32_t a, uint32_t b) {
    return std::lexicographical_compare(seq.begin() + seq_offsets[a], seq.begin() + seq_offsets[a + 1],
                                        seq.begin() + seq_offsets[b], seq.begin() + seq_offsets[b + 1]);
  };
  // Large inputs sort as two halves side by side, then merge: the sort is
  // a fifth of the build, and the window's worker has the other core idle.
  constexpr size_t kParallelSortEntries = 1 << 15;
  if (entries >= kParallelSortEntries && std::thread::hardware_concurrency() > 1) {
    const auto middle = order.begin() + static_cast<std::ptrdiff_t>(entries / 2);
    std::thread first_half([&] { std::sort(order.begin(), middle, less); });
    std::sort(middle, order.end(), less);
    first_half.join();
    std::inplace_merge(order.begin(), middle, order.end(), less);
  } else {
    std::sort(order.begin(), order.end(), less);
  }

  // 3. Nodes straight into breadth-first position. In sorted order, entry
  // k creates the nodes at depths lcp[k] .. len[k]-1 (lcp[k]: common prefix
  // with entry k-1), and the nodes of one depth appear in the same order
  // breadth-first and in this walk. So counting nodes per depth first gives
  // every node its final index as it is created, each parent's children
  // land next to each other, and each entry's keys are read front to back.
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
  // Large trees are emitted by two threads, each a half of the sorted
  // entries: the second half's nodes of each depth come after the first
  // half's, so it starts from the per-depth counts of the first.
  constexpr size_t kParallelEmitEntries = 1 << 15;
  const size_t split =
      entries >= kParallelEmitEntries && std::thread::hardware_concurrency() > 1 ? entries / 2 : entries;
  // depth_start[d]: index of the first node at depth d + 1 (the root is 0);
  // first_half[d]: how many of them the first half makes.
  std::vector<uint32_t> depth_start(max_len + 2, 0);
  std::vector<uint32_t> first_half;
  for (size_t k = 0; k < entries; ++k) {
    if (k == split) first_half.assign(depth_start.begin() + 1, depth_start.end());
    const uint32_t e = order[k];
    const uint32_t n = seq_offsets[e + 1] - seq_offsets[e];
    for (uint32_t d = lcp[k]; d < n; ++d) depth_start[d + 1]++;
  }
  depth_start[0] = 1;
  for (size_t d = 0; d <= max_len; ++d) depth_start[d + 1] += depth_start[d];
  std::vector<FlameNode>& out = tree.nodes;
  out.assign(depth_start[max_len], FlameNode{});
  out[0] = root;
  const bool several = inputs.size() > 1;
  std::vector<NodeWeights> first;
  if (several && first_weights != nullptr) first.assign(out.size(), NodeWeights{});
  out[0].first_child = depth_start[0];
  // A change the second half makes to a node of the first half (or the
  // root): applied after both finish, in order, as one pass would have.
  struct Deferred {
    uint32_t node;
    bool primary;    // weights: the primary input's (else the first input's)
    uint32_t frame;  // non-zero: name the node's frame if it has none
    int64_t weight;
    uint64_t events;
  };
  // Emits entries [k_begin, k_end): `next` holds each depth's next free
  // index, `path` the current entry's nodes. With `own_from` (the second
  // half), nodes below own_from[depth] are not this thread's to change.
  auto emit = [&](size_t k_begin, size_t k_end, std::vector<uint32_t> next, std::vector<uint32_t> path,
                  const std::vector<uint32_t>* own_from, std::vector<Deferred>* deferred) {
    auto owned = [&](uint32_t d, uint32_t index) {  // index is a node at position d (depth d + 1)
      return own_from == nullptr || (index != 0 && index >= (*own_from)[d]);
    };
    for (size_t k = k_begin; k < k_end; ++k) {
      // Entries are visited in sorted order, i.e. at random places of the
      // per-entry arrays: ask for the lines a few entries ahead.
      if (k + 16 < k_end) {
        __builtin_prefetch(&seq_offsets[order[k + 16]]);
        __builtin_prefetch(&entry_weight[order[k + 16]]);
        __builtin_prefetch(&entry_events[order[k + 16]]);
        __builtin_prefetch(&entry_input[order[k + 16]]);
      }
      if (k + 8 < k_end) {
        const uint32_t b8 = seq_offsets[order[k + 8]];
        __builtin_prefetch(&seq[b8]);
        __builtin_prefetch(&seq_frame[b8]);
        __builtin_prefetch(&seq[b8] + 16);
        __builtin_prefetch(&seq_frame[b8] + 16);
      }
      const uint32_t e = order[k];
      const uint32_t begin = seq_offsets[e];
      const uint32_t n = seq_offsets[e + 1] - begin;
      // With several inputs a node may have been made by one without
      // frames: the primary input's later walk through it names its frame.
      if (several && entry_input[e] == 1) {
        for (uint32_t d = 0; d < lcp[k]; ++d) {
          const uint32_t node = path[d + 1];
          if (!owned(d, node)) {
            deferred->push_back({node, true, seq_frame[begin + d], 0, 0});
          } else if (out[node].frame == 0) {
            out[node].frame = seq_frame[begin + d];
          }
        }
      }
      for (uint32_t d = lcp[k]; d < n; ++d) {
        const uint32_t key = seq[begin + d];
        const uint32_t index = next[d]++;
        FlameNode node;
        node.parent = d == 0 ? 0 : path[d];
        node.label = label_of_rank[key >> kTypeBits];
        node.type = static_cast<FrameType>(key & ((1u << kTypeBits) - 1));
        node.kind = static_cast<int>(d) < group_levels ? level_kind[d] : NodeKind::kFrame;
        node.frame = seq_frame[begin + d];
        node.depth = static_cast<uint16_t>(std::min<uint32_t>(d + 1, UINT16_MAX));
        // Its children, if it gets any, are the next nodes made one level
        // down: the walk makes them right after it (or, at the end of the
        // first half, the second half does). Counted in step 4.
        node.first_child = next[d + 1];
        // Written whole, never read back: no load waits on the cold line.
        out[index] = node;
        path[d + 1] = index;
      }
      const uint32_t leaf = n == 0 ? 0 : path[n];
      const bool primary = entry_input[e] == 1 || !several;
      if (!primary && first.empty()) continue;
      if (!owned(n == 0 ? 0 : n - 1, leaf)) {
        deferred->push_back({leaf, primary, 0, entry_weight[e], entry_events[e]});
      } else if (primary) {
        out[leaf].self += entry_weight[e];
        out[leaf].events += entry_events[e];  // self events until step 4
      } else {
        first[leaf].self += entry_weight[e];
        first[leaf].events += entry_events[e];
      }
    }
  };
  const std::vector<uint32_t> starts(depth_start.begin(), depth_start.end() - 1);
  std::vector<uint32_t> root_path(max_len + 1, 0);
  if (split == entries) {
    emit(0, entries, starts, root_path, nullptr, nullptr);
  } else {
    // The second half starts after the first half's nodes of every depth,
    // inside the path its first entry shares with the first half's last:
    // at each shared depth the last node the first half makes.
    std::vector<uint32_t> second_starts(starts.size());
    for (size_t d = 0; d < starts.size(); ++d) second_starts[d] = starts[d] + first_half[d];
    std::vector<uint32_t> second_path(max_len + 1, 0);
    for (uint32_t d = 0; d < lcp[split]; ++d) second_path[d + 1] = second_starts[d] - 1;
    std::vector<Deferred> deferred;
    std::thread second([&] { emit(split, entries, second_starts, second_path, &second_starts, &deferred); });
    emit(0, split, starts, root_path, nullptr, nullptr);
    second.join();
    for (const Deferred& c : deferred) {
      if (c.frame != 0) {
        if (out[c.node].frame == 0) out[c.node].frame = c.frame;
      } else if (c.primary) {
        out[c.node].self += c.weight;
        out[c.node].events += c.events;
      } else {
        first[c.node].self += c.weight;
        first[c.node].events += c.events;
      }
    }
  }
  // 4. Totals and child counts bottom-up: in breadth-first order every
  // child comes after its parent, so a node's are final when it is reached.
  for (size_t i = out.size(); i-- > 0;) {
    FlameNode& n = out[i];
    n.total += n.self;
    if (n.child_count == 0) n.first_child = 0;
    if (i > 0) {
      FlameNode& parent = out[n.parent];
      parent.total += n.total;
      parent.events += n.events;
      parent.child_count++;
    }
  }
  for (size_t i = first.size(); i-- > 0;) {
    first[i].total += first[i].self;
    if (i > 0) {
      first[out[i].parent].total += first[i].total;
      first[out[i].parent].events += first[i].events;
    }
  }
  if (first_weights != nullptr) *first_weights = std::move(first);
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
