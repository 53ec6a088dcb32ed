#include "storage/model/folded.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace kiln::storage {

void ForEachPath(const FlameTree& tree, const FoldedOptions& options,
                 const std::function<void(uint32_t node, const std::string& path)>& visit) {
  if (tree.nodes.empty()) return;
  auto label = [&](uint32_t i) {
    const FlameNode& n = tree.nodes[i];
    std::string text = tree.Label(i);
    if (options.annotate && n.kind == NodeKind::kFrame) {
      if (n.type == FrameType::kKernel) text += "_[k]";
      if (n.type == FrameType::kJit) text += "_[j]";
    }
    return text;
  };
  // Iterative depth-first walk keeping the path text; `prefix_len[d]` is
  // where depth d's label starts, so going back up is a truncate.
  std::string path;
  std::vector<size_t> prefix_len(static_cast<size_t>(tree.max_depth) + 2, 0);
  std::vector<uint32_t> stack;
  const FlameNode& root = tree.nodes[0];
  for (uint32_t c = root.child_count; c > 0; --c) stack.push_back(root.first_child + c - 1);
  while (!stack.empty()) {
    uint32_t i = stack.back();
    stack.pop_back();
    const FlameNode& n = tree.nodes[i];
    path.resize(prefix_len[n.depth]);
    if (n.depth > 1) path.push_back(';');
    path += label(i);
    prefix_len[n.depth + 1] = path.size();
    visit(i, path);
    for (uint32_t c = n.child_count; c > 0; --c) stack.push_back(n.first_child + c - 1);
  }
}

std::vector<std::string> FoldedLines(const FlameTree& tree, const FoldedOptions& options) {
  std::vector<std::string> lines;
  ForEachPath(tree, options, [&](uint32_t i, const std::string& path) {
    if (tree.nodes[i].self > 0) lines.push_back(absl::StrCat(path, " ", tree.nodes[i].self));
  });
  std::sort(lines.begin(), lines.end());
  return lines;
}

std::vector<std::string> DiffFoldedLines(const DiffTree& diff, const FoldedOptions& options) {
  std::vector<std::string> lines;
  ForEachPath(diff.tree, options, [&](uint32_t i, const std::string& path) {
    const int64_t base = diff.base[i].self, target = diff.target[i].self;
    if (base > 0 || target > 0) lines.push_back(absl::StrCat(path, " ", base, " ", target));
  });
  std::sort(lines.begin(), lines.end());
  return lines;
}

}  // namespace kiln::storage
