#include "ui/call_tree.h"

#include <imgui.h>

#include <algorithm>

#include "ui/flame_layout.h"
#include "ui/format.h"
#include "ui/frame_colors.h"
#include "ui/theme.h"
#include "ui/widgets.h"

namespace kiln::ui {

using storage::FlameNode;
using storage::FlameTree;

std::string CallTreeTable::PathKey(uint32_t node) const {
  std::string key;
  for (uint32_t n : PathToNode(*tree_, node)) {
    key += tree_->Label(n);
    key.push_back('\x1f');  // a separator no label contains
  }
  return key;
}

void CallTreeTable::Adopt(const std::shared_ptr<const FlameTree>& tree) {
  if (tree == tree_) return;
  tree_ = tree;
  rows_dirty_ = true;
  selected_ = kNone;
  expanded_.assign(tree_ ? tree_->nodes.size() : 0, 0);
  if (!tree_ || tree_->nodes.empty()) return;
  if (expanded_paths_.empty()) {
    // First sight: open the heaviest path while it holds a tenth of all.
    const int64_t total = tree_->nodes[0].total;
    uint32_t node = 0;
    for (int depth = 0; depth < 64; ++depth) {
      expanded_paths_.insert(PathKey(node));
      const FlameNode& n = tree_->nodes[node];
      uint32_t heaviest = 0;
      for (uint32_t c = n.first_child; c < n.first_child + n.child_count; ++c) {
        if (heaviest == 0 || tree_->nodes[c].total > tree_->nodes[heaviest].total) heaviest = c;
      }
      if (heaviest == 0 || tree_->nodes[heaviest].total * 10 < total) break;
      node = heaviest;
    }
  }
  // Mark the remembered paths, walking only into expanded nodes.
  std::vector<std::pair<uint32_t, std::string>> stack = {{0, tree_->Label(0) + '\x1f'}};
  while (!stack.empty()) {
    auto [node, key] = std::move(stack.back());
    stack.pop_back();
    if (!expanded_paths_.count(key)) continue;
    expanded_[node] = 1;
    const FlameNode& n = tree_->nodes[node];
    for (uint32_t c = n.first_child; c < n.first_child + n.child_count; ++c) {
      stack.emplace_back(c, key + tree_->Label(c) + '\x1f');
    }
  }
}

void CallTreeTable::Toggle(uint32_t node) {
  if (!tree_ || node >= expanded_.size()) return;
  expanded_[node] = !expanded_[node];
  if (expanded_[node]) {
    expanded_paths_.insert(PathKey(node));
  } else {
    expanded_paths_.erase(PathKey(node));
  }
  rows_dirty_ = true;
}

bool CallTreeTable::Reveal(const std::string& function) {
  if (!tree_) return false;
  uint32_t best = 0;
  for (uint32_t i = 1; i < tree_->nodes.size(); ++i) {
    const FlameNode& n = tree_->nodes[i];
    if (n.kind == storage::NodeKind::kFrame && tree_->Label(i) == function &&
        (best == 0 || n.total > tree_->nodes[best].total)) {
      best = i;
    }
  }
  if (best == 0) return false;
  for (uint32_t n = tree_->nodes[best].parent;; n = tree_->nodes[n].parent) {
    if (!expanded_[n]) Toggle(n);
    if (n == 0) break;
  }
  selected_ = best;
  scroll_to_selected_ = true;
  return true;
}

void CallTreeTable::RebuildRows() const {
  rows_.clear();
  rows_dirty_ = false;
  if (!tree_ || tree_->nodes.empty()) return;
  // Depth first, children heaviest first (ties by label, the tree's order).
  std::vector<uint32_t> stack = {0};
  std::vector<uint32_t> children;
  while (!stack.empty()) {
    const uint32_t node = stack.back();
    stack.pop_back();
    rows_.push_back(node);
    if (!expanded_[node]) continue;
    const FlameNode& n = tree_->nodes[node];
    children.resize(n.child_count);
    for (uint32_t c = 0; c < n.child_count; ++c) children[c] = n.first_child + c;
    std::stable_sort(children.begin(), children.end(),
                     [&](uint32_t a, uint32_t b) { return tree_->nodes[a].total > tree_->nodes[b].total; });
    for (auto it = children.rbegin(); it != children.rend(); ++it) stack.push_back(*it);
  }
}

void CallTreeTable::Draw(const char* id, const std::shared_ptr<const FlameTree>& tree, const storage::SampleType& type,
                         SessionState* session, const std::vector<FunctionAction>* actions, float height) {
  const bool new_tree = tree != tree_;
  Adopt(tree);
  if (follow_ && session != nullptr && tree_) {
    if (session->SelectedFunction() != followed_) {
      followed_ = session->SelectedFunction();
      if (!followed_.empty()) Reveal(followed_);
    } else if (new_tree && !followed_.empty() && Reveal(followed_)) {
      scroll_to_selected_ = false;  // live data: the selection stays, the scroll is the user's
    }
  }
  if (rows_dirty_) RebuildRows();
  if (!tree_ || tree_->nodes.empty()) return;
  int scroll_row = -1;
  if (scroll_to_selected_) {
    scroll_to_selected_ = false;
    const auto at = std::find(rows_.begin(), rows_.end(), selected_);
    if (at != rows_.end()) scroll_row = static_cast<int>(at - rows_.begin());
  }
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_Resizable |
                                ImGuiTableFlags_ScrollY | ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable(id, 4, flags, ImVec2(0, height))) return;
  const float em = ImGui::GetFontSize();
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("Total", 0, em * 11);
  ImGui::TableSetupColumn("Self", 0, em * 11);
  ImGui::TableSetupColumn("Function", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableSetupColumn("Type", 0, em * 5);
  ImGui::TableHeadersRow();
  const double total = static_cast<double>(std::max<int64_t>(tree_->nodes[0].total, 1));
  uint32_t toggle = UINT32_MAX;
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(rows_.size()));
  if (scroll_row >= 0) clipper.ForceDisplayRangeByIndices(scroll_row, scroll_row + 1);
  while (clipper.Step()) {
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      const uint32_t node = rows_[i];
      const FlameNode& n = tree_->nodes[node];
      ImGui::TableNextRow();
      if (i == scroll_row) ImGui::SetScrollHereY(0.3f);
      ImGui::PushID(static_cast<int>(node));
      ImGui::TableSetColumnIndex(0);
      InlineBar(n.total / total, CurrentPalette().total_bar,
                FormatValue(type, n.total) + "  " + FormatPercent(n.total / total));
      ImGui::TableSetColumnIndex(1);
      InlineBar(n.self / total, BlendTowards(FrameTypeColor(n.type), CurrentPalette().background, 0.55f),
                FormatValue(type, n.self) + "  " + FormatPercent(n.self / total));
      ImGui::TableSetColumnIndex(2);
      const float indent = em * 0.9f * n.depth;
      if (indent > 0) ImGui::Indent(indent);
      ImGuiTreeNodeFlags tf = ImGuiTreeNodeFlags_SpanFullWidth | ImGuiTreeNodeFlags_NoTreePushOnOpen |
                              ImGuiTreeNodeFlags_OpenOnArrow | ImGuiTreeNodeFlags_OpenOnDoubleClick;
      if (n.child_count == 0) tf |= ImGuiTreeNodeFlags_Leaf;
      if (node == selected_) tf |= ImGuiTreeNodeFlags_Selected;
      ImGui::SetNextItemOpen(expanded_[node] != 0);
      const std::string& label = tree_->Label(node);
      const bool open = ImGui::TreeNodeEx("##row", tf, "%s", label.c_str());
      if (open != (expanded_[node] != 0)) toggle = node;
      if (ImGui::IsItemClicked(ImGuiMouseButton_Left) || ImGui::IsItemFocused()) selected_ = node;
      if (ImGui::IsItemClicked(ImGuiMouseButton_Right) && node != 0) {
        menu_.Open(FrameMenuTargetOf(*tree_, node));
      }
      if (ImGui::IsItemHovered() && ImGui::CalcTextSize(label.c_str()).x + indent > ImGui::GetColumnWidth()) {
        ImGui::SetTooltip("%s", label.c_str());
      }
      if (indent > 0) ImGui::Unindent(indent);
      ImGui::TableSetColumnIndex(3);
      if (n.kind == storage::NodeKind::kFrame) {
        ColorSwatch(FrameTypeColor(n.type));
        ImGui::SameLine();
        const std::string_view t = FrameTypeDisplayName(n.type);
        ImGui::TextUnformatted(t.data(), t.data() + t.size());
      }
      ImGui::PopID();
    }
  }
  ImGui::EndTable();
  if (toggle != UINT32_MAX) Toggle(toggle);
  menu_.Draw(session, actions);
}

}  // namespace kiln::ui
