// FlameTree: the call tree of a ProfileSlice, built by a pure function and
// shared immutable between the aggregation worker and the views.
//
// Layout: nodes in one vector, node 0 is the root ("all"). The children of
// a node are contiguous (first_child .. first_child + child_count) and
// sorted by label, so drawing and hit testing walk it without maps.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "storage/model/profile_model.h"
#include "storage/model/stacks.h"
#include "storage/model/transforms.h"

namespace kiln::storage {

enum class GroupBy : uint8_t {
  kNone,       // frames directly under the root
  kProcess,    // root -> process (executable name) -> frames
  kThread,     // root -> process -> thread name -> frames
  kAttribute,  // root -> value of FlameTreeOptions::group_attribute -> frames
  // Each process on its own ("python3 [1234]"), not every process of a
  // name merged: two python3 scripts, or every kiln on a host.
  kInstance,        // root -> process instance -> frames
  kInstanceThread,  // root -> process instance -> thread name -> frames
  // root -> the sample's span (SpanGroupLabel) -> frames. A span is a
  // sample's link, which only kept samples carry: queries for such a tree
  // keep them (NeedsSamples).
  kSpan,
  // A level no sample has information for (every one "unknown") is left
  // out of the tree.
};

// This program's own process, so that a viewer profiled by an agent on its
// own host can tell itself apart ("kiln [4321] (this Kiln)"): its pid and
// host name. Empty: nothing is marked (exports, other tools).
struct OwnProcess {
  std::string pid;
  std::string host;
  bool operator==(const OwnProcess&) const = default;
};

enum class NodeKind : uint8_t { kRoot, kProcess, kThread, kFrame, kGroup /* an attribute value */ };

struct FlameTreeOptions {
  GroupBy group_by = GroupBy::kProcess;
  std::string group_attribute;  // the key for GroupBy::kAttribute
  bool show_inline = true;      // false: drop frames marked inlined
  std::vector<Transform> transforms;  // applied in order before the tree is built
  OwnProcess own;                     // marked in process instance labels
  bool operator==(const FlameTreeOptions&) const = default;
};
// "none", "process", "thread", "instance", "instance-thread", or any other
// text as an attribute key ("service.version", "container.id"). False for
// an empty name.
bool ParseGroupBy(std::string_view name, FlameTreeOptions* options);
// What ParseGroupBy takes, for errors and help: "none, process, ...".
inline constexpr std::string_view kGroupByChoices =
    "none, process, thread, instance (process and pid), instance-thread, span or an attribute key";
// True when a tree with `options` is built from the slice's samples
// (Query::keep_samples), not from its weights alone: grouping by span.
inline bool NeedsSamples(const FlameTreeOptions& options) { return options.group_by == GroupBy::kSpan; }

struct FlameNode {
  uint32_t parent = 0;       // root's parent is 0 (itself)
  uint32_t first_child = 0;
  uint32_t child_count = 0;
  uint32_t label = 0;        // index into FlameTree::labels
  uint32_t frame = 0;        // representative frame (slice dict index), 0 for non-frame nodes
  uint16_t depth = 0;        // root = 0
  NodeKind kind = NodeKind::kFrame;
  FrameType type = FrameType::kUnknown;
  int64_t total = 0;  // weight of this node and everything under it
  int64_t self = 0;   // weight of stacks ending here
  uint64_t events = 0;  // samples of this node and everything under it
};
static_assert(sizeof(FlameNode) <= 48, "FlameNode is per node of million-node trees");

struct FlameTree {
  std::vector<FlameNode> nodes;    // nodes[0] is the root
  std::vector<std::string> labels; // deduplicated node labels
  std::shared_ptr<const ProfileSlice> slice;  // what it was built from
  uint16_t max_depth = 0;

  const std::string& Label(uint32_t node) const { return labels[nodes[node].label]; }
};

// The slice's stacks as `options` shows them: inline frames kept or not,
// then the transforms in order. What every tree, table and export of a
// slice is built from.
Stacks StacksFor(std::shared_ptr<const ProfileSlice> slice, const FlameTreeOptions& options);

// Builds the tree from stacks: each stack is walked once. Functions with
// the same label and type under the same parent merge. `options`'
// show_inline and transforms are not applied here (StacksFor did that).
FlameTree BuildFlameTree(const Stacks& stacks, const FlameTreeOptions& options);
// The same from a slice's weights, with every option applied.
FlameTree BuildFlameTree(std::shared_ptr<const ProfileSlice> slice, const FlameTreeOptions& options);

// A function's sandwich: its callers (merged across call sites, inverted:
// the function at the root, its callers under it) and its callees (merged,
// the function at the root). Its own recursion is collapsed first, so the
// callers are who calls it from outside and each sample counts once on
// each side. Not grouped (one root per side).
struct Sandwich {
  FlameTree callers;
  FlameTree callees;
};
Sandwich BuildSandwich(const Stacks& stacks, const std::string& function);

// One tree over several inputs (a diff's two sides): the union of their
// paths. Node weights are the last input's; `first_weights` (when not null)
// gets the first input's per node. Node frames refer to the last input's
// slice, or are 0 where only the first input has the node.
struct NodeWeights {
  int64_t total = 0;
  int64_t self = 0;
  uint64_t events = 0;
};
FlameTree BuildUnionTree(const std::vector<const Stacks*>& inputs, const FlameTreeOptions& options,
                         std::vector<NodeWeights>* first_weights);

// The process and thread labels used for grouping: process.executable.name,
// else the basename of process.executable.path, else service.name, else
// "pid <process.pid>", else "unknown"; thread.name, else "tid <thread.id>",
// else "unknown thread".
// The labels of a sample that names no process or thread. A tree level
// where every sample has them is left out (it would say nothing).
inline constexpr std::string_view kUnknownProcess = "unknown";
inline constexpr std::string_view kUnknownThread = "unknown thread";
std::string ProcessLabel(const ProfileDictionary& dict, uint32_t attribute_set);
std::string ThreadLabel(const ProfileDictionary& dict, uint32_t attribute_set);
// One process: ProcessLabel and its pid, "python3 [1234]" (a sample with
// no pid: ProcessLabel alone), " (this Kiln)" after it when it is `own`'s
// pid on `own`'s host (host.name; a sample without one counts as this host
// when a loopback sender sent it).
std::string ProcessInstanceLabel(const ProfileDictionary& dict, uint32_t attribute_set, const OwnProcess& own);
// One thread of one process: ProcessInstanceLabel, a middle dot and the
// thread's name with its tid, "python3 [2200] · MainThread [2200]" ("tid
// N" without a name; the process alone when the sample names no thread).
std::string ThreadInstanceLabel(const ProfileDictionary& dict, uint32_t attribute_set, const OwnProcess& own);
// The pid of a process instance label, "" when it names none.
std::string_view InstancePid(std::string_view label);
// The node label of GroupBy::kAttribute: the value, or "no KEY".
std::string AttributeGroupLabel(const ProfileDictionary& dict, uint32_t attribute_set, std::string_view key);

// Renders the tree as indented text, one node per line: two spaces per
// depth, the label, a space, total weight (and " self=N" when non-zero).
// Children in tree order. Used by tests and for debugging.
std::string PrintFlameTree(const FlameTree& tree);

}  // namespace kiln::storage
