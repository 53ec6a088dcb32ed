#include "ui/flamegraph_view.h"

#include <imgui.h>
#include <imgui_internal.h>  // ImTextCharFromUtf8

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "ui/format.h"
#include "ui/widgets.h"
#include "ui/theme.h"

namespace kiln::ui {

using storage::FlameNode;
using storage::FlameTree;
using storage::FrameType;
using storage::NodeKind;

namespace {

constexpr float kDimAmount = 0.72f;     // non-matching nodes while searching
constexpr float kMinLabelWidth = 18.f;  // px; narrower nodes get no text

std::string_view KindName(NodeKind kind) {
  switch (kind) {
    case NodeKind::kRoot:
      return "All samples";
    case NodeKind::kProcess:
      return "Process";
    case NodeKind::kThread:
      return "Thread";
    case NodeKind::kGroup:
      return "Group";
    case NodeKind::kFrame:
      return "Frame";
  }
  return "";
}

}  // namespace

// ---------------------------------------------------------------------------
// Snapshot adoption and zoom
// ---------------------------------------------------------------------------

void FlamegraphView::AdoptTree(std::shared_ptr<const FlameTree> tree,
                               std::shared_ptr<const std::vector<int64_t>> left,
                               std::shared_ptr<const FrameTypeWeights> types) {
  if (tree == tree_) return;
  tree_ = std::move(tree);
  ++tree_serial_;
  left_ = std::move(left);
  layout_dirty_ = true;
  search_dirty_ = true;
  // Find the previously zoomed node again by its label path (as far as it
  // still exists).
  zoom_node_ = 0;
  for (size_t n = zoom_path_labels_.size(); n > 1 && zoom_node_ == 0; --n) {
    zoom_node_ = FindByLabels({zoom_path_labels_.begin(), zoom_path_labels_.begin() + static_cast<long>(n)});
  }
  selected_ = FindByLabels(selected_path_labels_);
  types_ = std::move(types);
  if (!types_ && tree_) types_ = std::make_shared<const FrameTypeWeights>(ComputeFrameTypeWeights(*tree_));
}

uint32_t FlamegraphView::FindByLabels(const std::vector<std::string>& labels) const {
  if (!tree_ || tree_->nodes.empty() || labels.empty()) return 0;
  uint32_t node = 0;
  for (size_t i = 1; i < labels.size(); ++i) {
    const FlameNode& n = tree_->nodes[node];
    uint32_t found = 0;
    for (uint32_t c = 0; c < n.child_count; ++c) {
      if (tree_->Label(n.first_child + c) == labels[i]) {
        found = n.first_child + c;
        break;
      }
    }
    if (found == 0) return 0;
    node = found;
  }
  return node;
}

void FlamegraphView::Select(uint32_t node) {
  if (!tree_ || node >= tree_->nodes.size()) return;
  selected_ = node;
  selected_path_labels_.clear();
  for (uint32_t n : PathToNode(*tree_, node)) selected_path_labels_.push_back(tree_->Label(n));
  // Keep it on screen: zoom out to show it when it is outside the zoomed
  // subtree, in to its parent when it is too narrow to draw.
  bool shown = IsAncestorOrSelf(*tree_, zoom_node_, node) || IsAncestorOrSelf(*tree_, node, zoom_node_);
  if (shown && !layout_dirty_) {
    shown = false;
    for (const FlameRect& r : layout_.rects) {
      if (r.node == node && !r.merged && r.width >= 2.f) shown = true;
    }
  }
  if (!shown) ZoomTo(node == 0 ? 0 : tree_->nodes[node].parent);
  scroll_to_selected_ = true;
}

void FlamegraphView::ZoomTo(uint32_t node) {
  if (!tree_ || node >= tree_->nodes.size()) return;
  zoom_node_ = node;
  zoom_path_labels_.clear();
  for (uint32_t n : PathToNode(*tree_, node)) zoom_path_labels_.push_back(tree_->Label(n));
  layout_dirty_ = true;
  scroll_to_zoom_ = true;
}

void FlamegraphView::ZoomOut() {
  if (tree_ && zoom_node_ != 0) ZoomTo(tree_->nodes[zoom_node_].parent);
}

void FlamegraphView::RefreshSearch() {
  // Adopt a finished background search if it still matches tree and query.
  if (search_future_.valid() &&
      search_future_.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
    FlameSearchResult result = search_future_.get();
    if (search_tree_ == tree_ && result.query == search_buffer_) {
      search_ = std::move(result);
      searched_serial_ = tree_serial_;
      if (zoom_to_search_ && search_.matched_nodes > 0) ZoomTo(search_.common_ancestor);
      zoom_to_search_ = false;
    } else {
      search_dirty_ = true;  // the tree or the query moved on meanwhile
    }
    search_tree_.reset();
  }
  if (!search_dirty_ || search_future_.valid() || !tree_) return;  // no tree yet: stay pending
  search_dirty_ = false;
  if (search_buffer_[0] == 0) {
    search_ = {};
    searched_serial_ = tree_serial_;
    zoom_to_search_ = false;
    return;
  }
  if (tree_->nodes.size() > kAsyncSearchNodes) {
    search_tree_ = tree_;
    search_future_ = std::async(std::launch::async, [tree = tree_, query = std::string(search_buffer_)] {
      return SearchFlameTree(*tree, query);
    });
    return;
  }
  search_ = SearchFlameTree(*tree_, search_buffer_);
  searched_serial_ = tree_serial_;
  if (zoom_to_search_ && search_.matched_nodes > 0) ZoomTo(search_.common_ancestor);
  zoom_to_search_ = false;
}

// ---------------------------------------------------------------------------
// Drawing
// ---------------------------------------------------------------------------

void FlamegraphView::Draw(const ViewContext& context) {
  settled_ = false;
  const AnalysisSnapshot* a = context.analysis;
  if (a && a->request.baseline && a->diff_display && a->diff) {
    if (a->diff != diff_) layout_dirty_ = true;
    diff_ = a->diff;
    diff_normalized_ = a->request.baseline->normalized;
    AdoptTree(a->diff_display, a->diff_left_offsets, a->diff_type_weights);
  } else if (a) {
    if (diff_) layout_dirty_ = true;
    diff_.reset();
    AdoptTree(a->tree, a->left_offsets, a->type_weights);
  }
  DrawTree(context, tree_, left_, types_);
  settled_ = tree_ != nullptr && !context.computing && !search_dirty_ && !search_future_.valid();
}

void FlamegraphView::DrawTree(const ViewContext& context, std::shared_ptr<const FlameTree> tree,
                              std::shared_ptr<const std::vector<int64_t>> left,
                              std::shared_ptr<const FrameTypeWeights> types) {
  AdoptTree(std::move(tree), std::move(left), std::move(types));
  if (context.session && context.session->flame_search_serial != seen_search_serial_) {
    seen_search_serial_ = context.session->flame_search_serial;
    context.session->search_text = context.session->flame_search;
    zoom_to_search_ = context.session->flame_zoom_to_search;
    if (zoom_to_search_) ZoomTo(0);
  }
  // The box shows the source's own search (another source may be shown now).
  if (context.session && context.session->search_text != search_buffer_) {
    std::snprintf(search_buffer_, sizeof search_buffer_, "%s", context.session->search_text.c_str());
    search_dirty_ = true;
  }
  RefreshSearch();
  DrawToolbar(context);
  if (!tree_ || tree_->nodes.empty() || tree_->nodes[0].total == 0) {
    DrawCompareAndTransforms(context.session, context.other_sources);
    ImGui::Spacing();
    if (tree_) {
      ImGui::TextDisabled("No samples in the selected range for this kind and filters.");
    } else {
      DrawLoadingOrError(context);
    }
    return;
  }
  DrawCompareAndTransforms(context.session, context.other_sources);
  if (diff_) {
    ImGui::TextDisabled(
        "Diff: width = mean of both sides' shares; red grew, blue shrank (%s), strong only where significant "
        "(two-proportion z-test, p < 0.001)",
        diff_normalized_ ? "share of each side's total" : "weight");
  } else {
    DrawLegend();
  }
  DrawBreadcrumbs();
  DrawSelection();
  DrawGraph(context);
}

void FlamegraphView::DrawToolbar(const ViewContext& context) {
  ImGui::SetNextItemWidth(280.f * ImGui::GetFontSize() / 15.f);
  if (context.session && std::exchange(context.session->focus_search, false)) focus_search_ = true;
  if (std::exchange(focus_search_, false)) ImGui::SetKeyboardFocusHere();
  if (ImGui::InputTextWithHint("##search", "Search functions (=name for exact)", search_buffer_,
                               sizeof search_buffer_)) {
    search_dirty_ = true;
    if (context.session) context.session->search_text = search_buffer_;
    RefreshSearch();
  }
  ImGui::SameLine();
  if (search_.active()) {
    ImGui::Text("matched %s of the weight (%u nodes)", FormatPercent(search_.MatchedFraction()).c_str(),
                search_.matched_nodes);
    ImGui::SameLine();
    if (ImGui::SmallButton("Clear")) {
      search_buffer_[0] = 0;
      search_dirty_ = true;
      if (context.session) context.session->search_text.clear();
      RefreshSearch();
    }
    ImGui::SameLine();
  }
  SessionState* session = context.session;
  if (session) {
    ImGui::Checkbox("Show inline frames", &session->tree.show_inline);
    ImGui::SameLine();
    ImGui::Checkbox("Flame", &session->flame);
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("Roots at the bottom (flame graph) instead of the top (icicle)");
    ImGui::SameLine();
    DrawInvertToggle(session);
    ImGui::SameLine();
    using storage::GroupBy;
    // A process is one pid; processes of one name merge only when asked.
    static constexpr std::pair<GroupBy, const char*> kGroups[] = {
        {GroupBy::kNone, "No grouping"},
        {GroupBy::kInstance, "By process"},
        {GroupBy::kInstanceThread, "By process and thread"},
        {GroupBy::kProcess, "By program name"},
        {GroupBy::kThread, "By program name and thread"},
        {GroupBy::kSpan, "By span"},
    };
    const char* shown = "By attribute";
    for (const auto& [g, name] : kGroups) {
      if (g == session->tree.group_by) shown = name;
    }
    ImGui::SetNextItemWidth(210.f * ImGui::GetFontSize() / 15.f);
    if (ImGui::BeginCombo("##group", shown)) {
      for (const auto& [g, name] : kGroups) {
        if (ImGui::Selectable(name, g == session->tree.group_by)) session->tree.group_by = g;
      }
      ImGui::EndCombo();
    }
    if (ImGui::IsItemHovered()) {
      ImGui::SetTooltip(
          "A process is one pid (\"python3 [1234]\"); by program name, every python3 is one block; by span, the "
          "trace span each sample was taken in (its OTLP link or span_id label)");
    }
    ImGui::SameLine();
  }
  ImGui::BeginDisabled(zoom_node_ == 0);
  if (ImGui::Button("Reset zoom")) ZoomTo(0);
  ImGui::EndDisabled();
}

void FlamegraphView::DrawLegend() {
  const int64_t total = std::max<int64_t>(tree_->nodes[0].total, 1);
  std::vector<int> types;
  for (int t = 0; t < storage::kFrameTypeCount; ++t) {
    if (types_->present[t]) types.push_back(t);
  }
  // Heaviest (by self weight) first: the legend reads as a summary.
  std::stable_sort(types.begin(), types.end(),
                   [&](int a, int b) { return types_->self[a] > types_->self[b]; });
  bool first = true;
  for (int t : types) {
    if (!first) ImGui::SameLine(0, ImGui::GetFontSize());
    first = false;
    const auto type = static_cast<FrameType>(t);
    ImGui::BeginGroup();
    ColorSwatch(FrameTypeColor(type));
    ImGui::SameLine(0, 4.f);
    const std::string_view name = FrameTypeDisplayName(type);
    ImGui::TextUnformatted(name.data(), name.data() + name.size());
    ImGui::EndGroup();
    if (ImGui::IsItemHovered()) {
      ImGui::SetTooltip("%s of the weight is spent in %.*s frames themselves (self weight)",
                        FormatPercent(static_cast<double>(types_->self[t]) / total).c_str(),
                        static_cast<int>(name.size()), name.data());
    }
  }
}

void FlamegraphView::DrawBreadcrumbs() {
  if (zoom_node_ == 0) return;
  const std::vector<uint32_t> path = PathToNode(*tree_, zoom_node_);
  ImGui::TextDisabled("Zoom:");
  // Deep zooms (recursion) would run off the window: keep the first two and
  // the last kTail crumbs, and show the middle as "...".
  constexpr size_t kHead = 2, kTail = 5;
  for (size_t i = 0; i < path.size(); ++i) {
    if (path.size() > kHead + kTail + 1 && i >= kHead && i + kTail < path.size()) {
      if (i == kHead) {
        ImGui::SameLine();
        ImGui::TextDisabled("> ... (%zu more)", path.size() - kHead - kTail);
      }
      continue;
    }
    ImGui::SameLine();
    if (i > 0) {
      ImGui::TextDisabled(">");
      ImGui::SameLine();
    }
    const std::string label = ShortenLabel(tree_->Label(path[i]), 40);
    ImGui::PushID(static_cast<int>(i));
    if (ImGui::SmallButton(label.c_str())) ZoomTo(path[i]);
    ImGui::PopID();
  }
  ImGui::SameLine();
  ImGui::TextDisabled("(Esc or double-click: zoom out)");
}

void FlamegraphView::DrawGraph(const ViewContext& context) {
  const bool flame = context.session && context.session->flame;
  // The canvas reads the arrows itself (node to node), so Dear ImGui's
  // keyboard navigation stays out of it.
  ImGui::BeginChild("##flame_canvas", ImVec2(0, 0), false, ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoNavInputs);
  const float width = ImGui::GetContentRegionAvail().x;
  const float avail_h = ImGui::GetContentRegionAvail().y;
  const float row_h = ImGui::GetFontSize() + 5.f;
  const int rows = tree_->max_depth + 1;
  const float graph_h = rows * row_h;
  // In flame mode a short graph sits on the bottom edge, as flames do.
  const float top_pad = flame ? std::max(0.f, avail_h - graph_h) : 0.f;

  if (layout_dirty_ || layout_.width != width) {
    layout_ = LayoutFlame(*tree_, *left_, zoom_node_, width, 1.0f);
    rect_colors_.resize(layout_.rects.size());
    rect_marks_.assign(layout_.rects.size(), "");
    for (size_t i = 0; i < layout_.rects.size(); ++i) {
      const FlameRect& r = layout_.rects[i];
      const FlameNode& n = tree_->nodes[r.node];
      Rgba c = NodeColor(n.kind, n.type, tree_->Label(r.node));
      if (diff_) {
        const storage::NodeChange change = storage::CompareNode(*diff_, r.node, diff_normalized_);
        c = DiffColor(storage::DiffStrength(change));
        const storage::DiffMark mark = storage::SubtreeMarkOf(*diff_, r.node);
        if (mark == storage::DiffMark::kNew) rect_marks_[i] = "new: ";
        if (mark == storage::DiffMark::kGone) rect_marks_[i] = "gone: ";
      }
      if (r.merged) c = BlendTowards(c, CurrentPalette().background, 0.45f);
      if (r.ancestor) c = BlendTowards(c, CurrentPalette().background, 0.35f);
      rect_colors_[i] = c;
    }
    layout_dirty_ = false;
  }

  // Keep the zoomed node in view after a zoom or an orientation change; in
  // flame mode that is near the bottom, where the roots are.
  if (flame != last_flame_) scroll_to_zoom_ = true;
  last_flame_ = flame;
  if (scroll_to_zoom_) {
    const float zoom_top = top_pad + RowTop(tree_->nodes[zoom_node_].depth, rows, row_h, flame);
    ImGui::SetScrollY(flame ? std::max(0.f, zoom_top + 4.f * row_h - avail_h)
                            : std::max(0.f, zoom_top - 3.f * row_h));
    scroll_to_zoom_ = false;
  }
  if (scroll_to_selected_ && selected_ < tree_->nodes.size()) {
    const float top = top_pad + RowTop(tree_->nodes[selected_].depth, rows, row_h, flame);
    const float scroll = ImGui::GetScrollY();
    if (top < scroll + row_h) ImGui::SetScrollY(std::max(0.f, top - 2.f * row_h));
    if (top + 2.f * row_h > scroll + avail_h) ImGui::SetScrollY(top + 3.f * row_h - avail_h);
    scroll_to_selected_ = false;
  }
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton("##graph", ImVec2(std::max(width, 1.f), std::max(graph_h + top_pad, 1.f)));
  const bool hovered = ImGui::IsItemHovered();
  const bool clicked = ImGui::IsItemClicked(ImGuiMouseButton_Left);
  const bool right_clicked = ImGui::IsItemClicked(ImGuiMouseButton_Right);
  // Anywhere on the canvas, the empty space beside and below the graph too.
  const bool double_clicked = ImGui::IsWindowHovered() && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left);

  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 clip_min = dl->GetClipRectMin();
  const ImVec2 clip_max = dl->GetClipRectMax();
  const FontAdvance advance;
  ImFont* font = advance.font;
  const float font_size = advance.size;
  const float ellipsis_w = advance.Ellipsis();
  const float text_dy = (row_h - font_size) * 0.5f - 0.5f;

  // Highlights index nodes: only use a result computed for this tree.
  const bool searching = search_.active() && searched_serial_ == tree_serial_;
  auto draw_row = [&](int d, float y0) {
    const float y1 = y0 + row_h - 1.f;
    for (uint32_t i = layout_.row_begin[d]; i < layout_.row_begin[d + 1]; ++i) {
      const FlameRect& r = layout_.rects[i];
      Rgba fill = rect_colors_[i];
      const bool match = searching && !r.merged && search_.matched[r.node];
      if (searching && !match) fill = BlendTowards(fill, CurrentPalette().background, kDimAmount);
      const float x0 = origin.x + r.x;
      const float x1 = x0 + std::max(r.width - (r.width > 3.f ? 1.f : 0.f), 1.f);
      dl->AddRectFilled(ImVec2(x0, y0), ImVec2(x1, y1), fill);
      // New and gone subtrees are hatched, whatever their width.
      if (*rect_marks_[i] != '\0') DrawHatch(dl, x0, y0, x1, y1, WithAlpha(TextColorOn(fill), 70), 6.f);
      if (match) dl->AddRect(ImVec2(x0, y0), ImVec2(x1, y1), CurrentPalette().contrast, 0, 0, 1.5f);
      if (r.merged || r.width < kMinLabelWidth) continue;
      const float room = r.width - 8.f;
      std::string marked;
      if (*rect_marks_[i] != '\0') marked = DiffBoxLabel(rect_marks_[i], tree_->Label(r.node), room, advance);
      const std::string& label = marked.empty() ? tree_->Label(r.node) : marked;
      const size_t n = EllipsisPrefix(label, room, ellipsis_w, advance);
      const ImVec2 tp(x0 + 4.f, y0 + text_dy);
      const Rgba text = TextColorOn(fill);
      if (n == label.size()) {
        dl->AddText(font, font_size, tp, text, label.data(), label.data() + n);
      } else {
        // Cut in the middle: the function stays (a Go or Java name cut at
        // the end lost it, and neighbours read alike).
        const bool process = tree_->nodes[r.node].kind == NodeKind::kProcess;
        const std::string shown =
            FitLabel(label, process ? InstanceKeepFrom(label) : FunctionKeepFrom(label), room, ellipsis_w, advance);
        if (shown.empty()) continue;
        dl->AddText(font, font_size, tp, text, shown.data(), shown.data() + shown.size());
      }
    }
  };
  for (int d = 0; d < layout_.Rows(); ++d) {
    const float y0 = origin.y + top_pad + RowTop(d, rows, row_h, flame);
    if (y0 + row_h - 1.f < clip_min.y || y0 > clip_max.y) continue;
    draw_row(d, y0);
  }
  // The root and group rows (all, process, thread) stay in view when a deep
  // tree is scrolled: pinned to the edge where they would leave.
  int pinned = 0;
  while (pinned < layout_.Rows() && layout_.row_begin[pinned] < layout_.row_begin[pinned + 1] &&
         tree_->nodes[layout_.rects[layout_.row_begin[pinned]].node].kind != NodeKind::kFrame) {
    ++pinned;
  }
  for (int d = 0; d < pinned; ++d) {
    const float natural = origin.y + top_pad + RowTop(d, rows, row_h, flame);
    const float edge = flame ? clip_max.y - (d + 1) * row_h : clip_min.y + d * row_h;
    if (flame ? natural <= edge : natural >= edge) continue;
    dl->AddRectFilled(ImVec2(clip_min.x, edge), ImVec2(clip_max.x, edge + row_h), CurrentPalette().background);
    draw_row(d, edge);
  }

  // The keyboard's node: a thick outline.
  if (selected_ != 0 && !layout_dirty_) {
    for (const FlameRect& r : layout_.rects) {
      if (r.node != selected_ || r.merged) continue;
      const float y0 = origin.y + top_pad + RowTop(r.depth, rows, row_h, flame);
      dl->AddRect(ImVec2(origin.x + r.x, y0), ImVec2(origin.x + r.x + std::max(r.width, 2.f), y0 + row_h - 1.f),
                  CurrentPalette().contrast, 0, 0, 2.5f);
    }
  }

  // Interaction: hover tooltip, click to zoom, double-click / Esc to zoom out.
  if (double_clicked) {
    // The double-click's first click may have zoomed in: undo that, then
    // go out one level from where the user was.
    if (ImGui::GetTime() - click_zoom_time_ <= ImGui::GetIO().MouseDoubleClickTime) {
      ZoomTo(zoom_before_click_);
    }
    click_zoom_time_ = -1;
    ZoomOut();
  } else if (hovered) {
    const ImVec2 m = ImGui::GetMousePos();
    const int row = RowAt(m.y - origin.y - top_pad, rows, row_h, flame);
    const int hit = HitTest(layout_, m.x - origin.x, row);
    if (hit >= 0) {
      const FlameRect& r = layout_.rects[hit];
      DrawTooltip(context, r.node, r.merged);
      if (clicked && !r.merged) {
        if (r.node != zoom_node_) {
          zoom_before_click_ = zoom_node_;
          click_zoom_time_ = ImGui::GetTime();
          ZoomTo(r.node);
        }
        Select(r.node);
      }
      if (right_clicked && !r.merged && r.node != 0) menu_.Open(FrameMenuTargetOf(*tree_, r.node));
    }
  }
  menu_.Draw(context.session, context.function_actions);
  // Keys anywhere in the window (but not while typing in a text box, nor
  // while a menu is open: its arrows and Enter are the menu's, they moved
  // the selection behind it and Enter zoomed instead of choosing).
  if (ImGui::IsWindowFocused(ImGuiFocusedFlags_RootWindow | ImGuiFocusedFlags_ChildWindows) &&
      !ImGui::GetIO().WantTextInput &&
      !ImGui::IsPopupOpen("", ImGuiPopupFlags_AnyPopupId | ImGuiPopupFlags_AnyPopupLevel)) {
    HandleKeys(context, flame);
  }
  ImGui::EndChild();
}

void FlamegraphView::HandleKeys(const ViewContext& context, bool flame) {
  auto pressed = [](ImGuiKey key) { return ImGui::IsKeyPressed(ImGui::GetKeyIndex(key), true); };
  const uint32_t from = selected_ != 0 ? selected_ : zoom_node_;
  // Up and down follow the picture: in flame mode the roots are below.
  if (pressed(ImGuiKey_UpArrow)) Select(MoveInFlame(*tree_, from, flame ? FlameMove::kHeaviestChild : FlameMove::kParent));
  if (pressed(ImGuiKey_DownArrow)) Select(MoveInFlame(*tree_, from, flame ? FlameMove::kParent : FlameMove::kHeaviestChild));
  if (pressed(ImGuiKey_LeftArrow)) Select(MoveInFlame(*tree_, from, FlameMove::kPreviousSibling));
  if (pressed(ImGuiKey_RightArrow)) Select(MoveInFlame(*tree_, from, FlameMove::kNextSibling));
  if ((pressed(ImGuiKey_Enter) || pressed(ImGuiKey_KeyPadEnter)) && selected_ != 0) ZoomTo(selected_);
  if (pressed(ImGuiKey_Escape) || pressed(ImGuiKey_Backspace)) ZoomOut();
  // Printable keys arrive as characters (the same on every keyboard layout).
  const ImGuiIO& io = ImGui::GetIO();
  for (int i = 0; i < io.InputQueueCharacters.Size; ++i) {
    const ImWchar c = io.InputQueueCharacters[i];
    if (c == '/') focus_search_ = true;
    if (c == '?' && context.requests) context.requests->show_shortcuts = true;
    if ((c == 'n' || c == 'N') && search_.active() && searched_serial_ == tree_serial_) {
      if (match_order_serial_ != searched_serial_) {
        match_order_ = MatchesInOrder(*tree_, search_);
        match_order_serial_ = searched_serial_;
      }
      if (uint32_t m = NextMatch(*tree_, match_order_, selected_, c == 'n'); m != 0) Select(m);
    }
  }
}

void FlamegraphView::DrawSelection() {
  if (selected_ == 0 || selected_ >= tree_->nodes.size()) {
    ImGui::TextDisabled("Arrows move between frames, Enter zooms, / searches, n / N next / previous match, ? all keys");
    return;
  }
  ImGui::TextDisabled("Selected:");
  ImGui::SameLine();
  const std::string label = ShortenLabel(tree_->Label(selected_), 80);
  ImGui::TextUnformatted(label.c_str());
  ImGui::SameLine();
  ImGui::TextDisabled("%s", SharesText(selected_).c_str());
}

std::string FlamegraphView::SharesText(uint32_t node) const {
  // Of the whole, of the parent and of the zoomed root: the three questions
  // a frame's width answers.
  const FlameNode& n = tree_->nodes[node];
  auto pct = [&](int64_t of) {
    return FormatPercent(of > 0 ? static_cast<double>(n.total) / static_cast<double>(of) : 0);
  };
  std::string text = pct(tree_->nodes[0].total) + " of total";
  if (node != 0) text += ", " + pct(tree_->nodes[n.parent].total) + " of parent";
  if (zoom_node_ != 0 && zoom_node_ != node && IsAncestorOrSelf(*tree_, zoom_node_, node)) {
    text += ", " + pct(tree_->nodes[zoom_node_].total) + " of zoomed";
  }
  return text;
}

void FlamegraphView::DrawDiffTooltip(const ViewContext& context, uint32_t node) {
  const storage::SampleType kind = context.analysis ? context.analysis->request.query.sample_type : storage::SampleType{};
  const storage::NodeChange c = storage::CompareNode(*diff_, node, diff_normalized_);
  ImGui::BeginTooltip();
  ImGui::PushTextWrapPos(ImGui::GetFontSize() * 40.f);
  ImGui::TextUnformatted(tree_->Label(node).c_str());
  ImGui::PopTextWrapPos();
  ImGui::Separator();
  ImGui::Text("Baseline: %s (%s)", FormatValue(kind, c.base).c_str(), FormatPercent(c.base_share).c_str());
  ImGui::Text("Target:   %s (%s)", FormatValue(kind, c.target).c_str(), FormatPercent(c.target_share).c_str());
  const double points = 100.0 * c.change;
  ImGui::Text("Change:   %+.2f %s", points, diff_normalized_ ? "points of share" : "% of the larger total");
  if (c.added) ImGui::TextColored(ImVec4(0.9f, 0.35f, 0.3f, 1), "New: not in the baseline");
  if (c.removed) ImGui::TextColored(ImVec4(0.35f, 0.55f, 0.95f, 1), "Gone: only in the baseline");
  ImGui::Text("z = %.2f: %s", c.z,
              c.significant ? "significant (p < 0.001)" : "within sampling noise at p < 0.001");
  ImGui::EndTooltip();
}

void FlamegraphView::DrawTooltip(const ViewContext& context, uint32_t node, bool merged) {
  if (diff_ && !merged) {
    DrawDiffTooltip(context, node);
    return;
  }
  const FlameNode& n = tree_->nodes[node];
  const int64_t total = std::max<int64_t>(tree_->nodes[0].total, 1);
  const storage::SampleType kind = context.analysis ? context.analysis->request.query.sample_type : storage::SampleType{};
  ImGui::BeginTooltip();
  ImGui::PushTextWrapPos(ImGui::GetFontSize() * 40.f);
  if (merged) {
    ImGui::TextDisabled("Several functions, each narrower than a pixel.");
    ImGui::TextDisabled("Zoom into the parent to see them.");
    ImGui::PopTextWrapPos();
    ImGui::EndTooltip();
    return;
  }
  ImGui::TextUnformatted(tree_->Label(node).c_str());
  ImGui::PopTextWrapPos();
  ImGui::Separator();
  if (n.kind == NodeKind::kFrame) {
    ColorSwatch(FrameTypeColor(n.type));
    ImGui::SameLine();
    const std::string_view type = FrameTypeDisplayName(n.type);
    ImGui::Text("%.*s frame", static_cast<int>(type.size()), type.data());
    const storage::ProfileSlice* slice = tree_->slice.get();
    if (slice && n.frame < slice->dict.frames.size()) {
      const storage::Frame& f = slice->dict.frames[n.frame];
      const auto& strings = slice->dict.strings;
      if (f.file != 0 && f.file < strings.size()) {
        if (f.line > 0) {
          ImGui::Text("File: %s:%lld", strings[f.file].c_str(), static_cast<long long>(f.line));
        } else {
          ImGui::Text("File: %s", strings[f.file].c_str());
        }
      }
      if (f.executable != 0 && f.executable < slice->dict.executables.size()) {
        const uint32_t name = slice->dict.executables[f.executable].file_name;
        if (name < strings.size()) ImGui::Text("Executable: %s", strings[name].c_str());
      }
      if (f.address != 0 && n.type == FrameType::kNative) {
        ImGui::Text("Address: 0x%llx", static_cast<unsigned long long>(f.address));
      }
      if (f.inlined) ImGui::TextDisabled("Inlined");
    }
  } else {
    const std::string_view k = KindName(n.kind);
    ImGui::TextUnformatted(k.data(), k.data() + k.size());
  }
  ImGui::Text("Total: %s (%s)", FormatValue(kind, n.total).c_str(), SharesText(node).c_str());
  ImGui::Text("Self:  %s (%s)", FormatValue(kind, n.self).c_str(),
              FormatPercent(static_cast<double>(n.self) / total).c_str());
  ImGui::TextDisabled("Click to zoom in; double-click or Esc to zoom out; right-click for more");
  ImGui::EndTooltip();
}

}  // namespace kiln::ui
