// Folded stacks ("a;b;c 12"): the text exchange format of flame graph
// tools, produced from a FlameTree by a pure function.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "storage/model/diff.h"
#include "storage/model/flame_tree.h"

namespace kiln::storage {

struct FoldedOptions {
  // Suffix kernel frames with "_[k]" and JIT frames with "_[j]", as
  // stackcollapse-perf.pl --all prints them.
  bool annotate = false;
};

// One line per distinct root-to-node path that has self weight: the
// labels root first (the synthetic "all" root left out) joined by ';', a
// space, the weight. Lines sorted bytewise, as stackcollapse sorts them.
std::vector<std::string> FoldedLines(const FlameTree& tree, const FoldedOptions& options);

// A diff as FlameGraph's difffolded.pl writes it: "stack base target" per
// path with self weight on either side, sorted the same way.
std::vector<std::string> DiffFoldedLines(const DiffTree& diff, const FoldedOptions& options);

// Calls visit(node, path) for every node under the root, depth first in
// tree order, with its root-first path of labels joined by ';' (annotated
// as `options` says).
void ForEachPath(const FlameTree& tree, const FoldedOptions& options,
                 const std::function<void(uint32_t node, const std::string& path)>& visit);

}  // namespace kiln::storage
