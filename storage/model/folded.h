// Folded stacks ("a;b;c 12"): the text exchange format of flame graph
// tools, produced from a FlameTree by a pure function.
#pragma once

#include <string>
#include <vector>

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

}  // namespace kiln::storage
