// Test and benchmark support: FlameTrees built straight from folded-stack
// text ("a;b;c 3"), without a ProfileSlice, so layout code can be tested
// before and independently of storage's tree builder. Not linked into kiln.
#pragma once

#include <cstdint>
#include <string_view>

#include "storage/model/flame_tree.h"

namespace kiln::ui::testing {

// One stack per line, root first, weight after the last space. A frame's
// type comes from a suffix that is stripped: "_[k]" kernel, "_[py]" python,
// "_[go]" Go, "_[j]" JVM, "_[u]" unknown; anything else is native.
// Children are contiguous and sorted by label, as BuildFlameTree makes them.
storage::FlameTree TreeFromFolded(std::string_view folded);

// A synthetic tree of about `node_count` nodes: `fanout` children per node
// with decaying weights, depth up to `max_depth`, mixed frame types and long
// names. Deterministic. `balanced` splits weight evenly between siblings
// (many nodes wide enough to draw: the drawing worst case); otherwise
// splits are uneven, as in real profiles (a few wide nodes, a tiny tail).
storage::FlameTree SyntheticTree(uint32_t node_count, uint32_t fanout = 6, uint16_t max_depth = 64,
                                 bool balanced = false);

}  // namespace kiln::ui::testing
