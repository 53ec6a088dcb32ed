#include "ui/top_functions_view.h"

#include <cstdio>
#include <imgui.h>

#include <algorithm>

#include "ui/flame_search.h"
#include "ui/format.h"
#include "ui/frame_colors.h"
#include "ui/widgets.h"
#include "ui/theme.h"

namespace kiln::ui {

using storage::TopFunctionRow;

namespace {

enum Column : int { kSelf, kTotal, kFunction, kFile, kExecutable, kType, kColumnCount };

bool RowMatches(const TopFunctionRow& row, const char* filter) {
  if (!filter[0]) return true;
  return LabelMatches(row.function, filter) || LabelMatches(row.file, filter) ||
         LabelMatches(row.executable, filter);
}

}  // namespace

void TopFunctionsView::Rebuild(const void* specs_ptr) {
  const auto* specs = static_cast<const ImGuiTableSortSpecs*>(specs_ptr);
  order_.clear();
  if (!rows_) return;
  for (uint32_t i = 0; i < rows_->size(); ++i) {
    if (RowMatches((*rows_)[i], filter_)) order_.push_back(i);
  }
  if (!specs || specs->SpecsCount == 0) return;  // rows come sorted by self already
  const ImGuiTableColumnSortSpecs spec = specs->Specs[0];
  const auto& rows = *rows_;
  auto less = [&](uint32_t a, uint32_t b) {
    const TopFunctionRow& x = rows[a];
    const TopFunctionRow& y = rows[b];
    switch (spec.ColumnIndex) {
      case kSelf:
        if (x.self != y.self) return x.self < y.self;
        break;
      case kTotal:
        if (x.total != y.total) return x.total < y.total;
        break;
      case kFunction:
        if (x.function != y.function) return x.function < y.function;
        break;
      case kFile:
        if (x.file != y.file) return x.file < y.file;
        break;
      case kExecutable:
        if (x.executable != y.executable) return x.executable < y.executable;
        break;
      case kType:
        if (x.type != y.type) return FrameTypeDisplayName(x.type) < FrameTypeDisplayName(y.type);
        break;
      default:
        break;
    }
    return a > b;  // ties: keep the builder's order (heaviest first) stable across directions
  };
  if (spec.SortDirection == ImGuiSortDirection_Ascending) {
    std::stable_sort(order_.begin(), order_.end(), less);
  } else {
    std::stable_sort(order_.begin(), order_.end(), [&](uint32_t a, uint32_t b) { return less(b, a); });
  }
}

void TopFunctionsView::DrawDiff(const ViewContext& context) {
  const AnalysisSnapshot& a = *context.analysis;
  const bool rows_changed = a.diff_functions != diff_rows_;
  diff_rows_ = a.diff_functions;
  const storage::SampleType& kind = a.request.query.sample_type;
  enum DiffColumn : int { kDFunction, kDBaseSelf, kDTargetSelf, kDSelfChange, kDBaseTotal, kDTargetTotal, kDTotalChange,
                          kDColumns };
  const ImGuiTableFlags flags = ImGuiTableFlags_Sortable | ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                                ImGuiTableFlags_Resizable | ImGuiTableFlags_ScrollY | ImGuiTableFlags_SizingFixedFit;
  ImGui::TextDisabled("Compared with the baseline: shares of each side's total; change in points of share");
  if (!ImGui::BeginTable("##top_diff", kDColumns, flags)) return;
  const float em = ImGui::GetFontSize();
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("Function", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableSetupColumn("Base self", ImGuiTableColumnFlags_PreferSortDescending, em * 9);
  ImGui::TableSetupColumn("Target self", ImGuiTableColumnFlags_PreferSortDescending, em * 9);
  ImGui::TableSetupColumn("Change self", ImGuiTableColumnFlags_PreferSortDescending, em * 7);
  ImGui::TableSetupColumn("Base total", ImGuiTableColumnFlags_PreferSortDescending, em * 9);
  ImGui::TableSetupColumn("Target total", ImGuiTableColumnFlags_PreferSortDescending, em * 9);
  ImGui::TableSetupColumn("Change total",
                          ImGuiTableColumnFlags_DefaultSort | ImGuiTableColumnFlags_PreferSortDescending, em * 7);
  ImGui::TableHeadersRow();
  const auto& rows = *diff_rows_;
  ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs();
  if (rows_changed || order_dirty_ || (specs && specs->SpecsDirty)) {
    diff_order_.clear();
    for (uint32_t i = 0; i < rows.size(); ++i) {
      if (!filter_[0] || LabelMatches(rows[i].function, filter_) || LabelMatches(rows[i].executable, filter_)) {
        diff_order_.push_back(i);
      }
    }
    if (specs && specs->SpecsCount > 0) {
      const ImGuiTableColumnSortSpecs spec = specs->Specs[0];
      auto key = [&](uint32_t i) -> double {
        const storage::DiffFunctionRow& r = rows[i];
        switch (spec.ColumnIndex) {
          case kDBaseSelf: return r.base_self_share;
          case kDTargetSelf: return r.target_self_share;
          case kDSelfChange: return r.target_self_share - r.base_self_share;
          case kDBaseTotal: return r.base_total_share;
          case kDTargetTotal: return r.target_total_share;
          default: return r.target_total_share - r.base_total_share;
        }
      };
      if (spec.ColumnIndex == kDFunction) {
        std::stable_sort(diff_order_.begin(), diff_order_.end(),
                         [&](uint32_t x, uint32_t y) { return rows[x].function < rows[y].function; });
      } else {
        std::stable_sort(diff_order_.begin(), diff_order_.end(), [&](uint32_t x, uint32_t y) { return key(x) < key(y); });
      }
      if (spec.SortDirection == ImGuiSortDirection_Descending) std::reverse(diff_order_.begin(), diff_order_.end());
      specs->SpecsDirty = false;
    }
    order_dirty_ = false;
  }
  auto value = [&](int64_t v, double share) { return FormatValue(kind, v) + "  " + FormatPercent(share); };
  auto change = [&](double points) {
    char text[32];
    std::snprintf(text, sizeof text, "%+.2f", 100.0 * points);
    const Rgba c = DiffColor(std::clamp(points * 20.0, -1.0, 1.0));
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(c));
    ImGui::TextUnformatted(text);
    ImGui::PopStyleColor();
  };
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(diff_order_.size()));
  while (clipper.Step()) {
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      const storage::DiffFunctionRow& r = rows[diff_order_[i]];
      ImGui::TableNextRow();
      ImGui::PushID(i);
      ImGui::TableSetColumnIndex(kDFunction);
      ImGui::Selectable(r.function.c_str(), false, ImGuiSelectableFlags_SpanAllColumns);
      if (ImGui::IsItemClicked(ImGuiMouseButton_Right)) {
        menu_.Open({storage::NodeKind::kFrame, r.function, r.executable, {}, r.type == storage::FrameType::kKernel});
      }
      ImGui::TableSetColumnIndex(kDBaseSelf);
      ImGui::TextUnformatted(value(r.base_self, r.base_self_share).c_str());
      ImGui::TableSetColumnIndex(kDTargetSelf);
      ImGui::TextUnformatted(value(r.target_self, r.target_self_share).c_str());
      ImGui::TableSetColumnIndex(kDSelfChange);
      change(r.target_self_share - r.base_self_share);
      ImGui::TableSetColumnIndex(kDBaseTotal);
      ImGui::TextUnformatted(value(r.base_total, r.base_total_share).c_str());
      ImGui::TableSetColumnIndex(kDTargetTotal);
      ImGui::TextUnformatted(value(r.target_total, r.target_total_share).c_str());
      ImGui::TableSetColumnIndex(kDTotalChange);
      change(r.target_total_share - r.base_total_share);
      ImGui::PopID();
    }
  }
  ImGui::EndTable();
  menu_.Draw(context.session, context.function_actions);
}

void TopFunctionsView::Draw(const ViewContext& context) {
  settled_ = false;
  if (context.analysis && context.analysis->top_functions != rows_) {
    rows_ = context.analysis->top_functions;
    order_dirty_ = true;
  }
  // The filter belongs to the shown source's session.
  if (context.session && context.session->top_filter != filter_) {
    std::snprintf(filter_, sizeof filter_, "%s", context.session->top_filter.c_str());
    order_dirty_ = true;
  }
  ImGui::SetNextItemWidth(320.f * ImGui::GetFontSize() / 15.f);
  if (ImGui::InputTextWithHint("##filter", "Filter by function, file or executable", filter_,
                               sizeof filter_)) {
    order_dirty_ = true;
    if (context.session) context.session->top_filter = filter_;
  }
  if (!rows_ || !context.analysis) {
    DrawLoadingOrError(context);
    return;
  }
  ImGui::SameLine();
  const bool diff = context.analysis->request.baseline && context.analysis->diff_functions;
  if (diff) {
    ImGui::TextDisabled("%zu functions on either side - right-click for more",
                        context.analysis->diff_functions->size());
  } else {
    ImGui::TextDisabled("%zu of %zu functions - click a row to show it in the flamegraph, right-click for more",
                        order_.size(), rows_->size());
  }
  DrawCompareAndTransforms(context.session, context.other_sources);
  if (diff) {
    ImGui::NewLine();
    DrawDiff(context);
    settled_ = !context.computing;
    return;
  }

  const storage::SampleType& kind = context.analysis->request.query.sample_type;
  const int64_t total =
      std::max<int64_t>(context.analysis->slice ? context.analysis->slice->total_weight : 1, 1);
  const ImGuiTableFlags flags = ImGuiTableFlags_Sortable | ImGuiTableFlags_RowBg |
                                ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_Resizable |
                                ImGuiTableFlags_ScrollY | ImGuiTableFlags_Reorderable |
                                ImGuiTableFlags_Hideable | ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable("##top", kColumnCount, flags)) return;
  const float em = ImGui::GetFontSize();
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn(
      "Self", ImGuiTableColumnFlags_DefaultSort | ImGuiTableColumnFlags_PreferSortDescending, em * 11);
  ImGui::TableSetupColumn("Total", ImGuiTableColumnFlags_PreferSortDescending, em * 11);
  ImGui::TableSetupColumn("Function", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableSetupColumn("File", 0, em * 12);
  ImGui::TableSetupColumn("Executable", 0, em * 9);
  ImGui::TableSetupColumn("Type", 0, em * 5);
  ImGui::TableHeadersRow();

  if (ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs()) {
    if (specs->SpecsDirty || order_dirty_) {
      Rebuild(specs);
      specs->SpecsDirty = false;
      order_dirty_ = false;
    }
  } else if (order_dirty_) {
    Rebuild(nullptr);
    order_dirty_ = false;
  }

  // The function selected elsewhere (a Stack Chart box, the flamegraph's
  // exact search "=NAME") is the highlighted row, scrolled to once.
  const std::string selected = context.session ? context.session->SelectedFunction() : std::string();
  int scroll_to = -1;
  if (selected != scrolled_to_) {
    scrolled_to_ = selected;
    for (size_t i = 0; i < order_.size() && !selected.empty(); ++i) {
      if ((*rows_)[order_[i]].function == selected) {
        scroll_to = static_cast<int>(i);
        break;
      }
    }
  }
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(order_.size()));
  if (scroll_to >= 0) clipper.ForceDisplayRangeByIndices(scroll_to, scroll_to + 1);
  while (clipper.Step()) {
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      const TopFunctionRow& row = (*rows_)[order_[i]];
      ImGui::TableNextRow();
      ImGui::PushID(i);
      ImGui::TableSetColumnIndex(kSelf);
      const double self_fraction = static_cast<double>(row.self) / total;
      InlineBar(self_fraction, BlendTowards(FrameTypeColor(row.type), CurrentPalette().background, 0.55f),
                FormatValue(kind, row.self) + "  " + FormatPercent(self_fraction));
      ImGui::TableSetColumnIndex(kTotal);
      const double total_fraction = static_cast<double>(row.total) / total;
      InlineBar(total_fraction, CurrentPalette().total_bar,
                FormatValue(kind, row.total) + "  " + FormatPercent(total_fraction));
      ImGui::TableSetColumnIndex(kFunction);
      const std::string function =
          FitToWidth(row.function, FunctionKeepFrom(row.function), ImGui::GetContentRegionAvail().x);
      if (i == scroll_to) ImGui::SetScrollHereY(0.3f);
      if (ImGui::Selectable(function.c_str(), !selected.empty() && row.function == selected,
                            ImGuiSelectableFlags_SpanAllColumns | ImGuiSelectableFlags_AllowItemOverlap)) {
        context.session->flame_search = "=" + row.function;
        ++context.session->flame_search_serial;
        context.session->flame_zoom_to_search = true;
        context.session->requested_tab = "flamegraph";
      }
      if (ImGui::IsItemClicked(ImGuiMouseButton_Right)) {
        menu_.Open({storage::NodeKind::kFrame, row.function, row.executable, {}, row.type == storage::FrameType::kKernel});
      }
      if (ImGui::IsItemHovered() && function.size() != row.function.size()) {
        ImGui::SetTooltip("%s", row.function.c_str());
      }
      ImGui::TableSetColumnIndex(kFile);
      FittedCellText(row.file, PathKeepFrom(row.file));
      ImGui::TableSetColumnIndex(kExecutable);
      const size_t slash = row.executable.rfind('/');
      ImGui::TextUnformatted(row.executable.c_str() + (slash == std::string::npos ? 0 : slash + 1));
      if (ImGui::IsItemHovered() && slash != std::string::npos)
        ImGui::SetTooltip("%s", row.executable.c_str());
      ImGui::TableSetColumnIndex(kType);
      ColorSwatch(FrameTypeColor(row.type));
      ImGui::SameLine();
      const std::string_view type = FrameTypeDisplayName(row.type);
      ImGui::TextUnformatted(type.data(), type.data() + type.size());
      ImGui::PopID();
    }
  }
  ImGui::EndTable();
  menu_.Draw(context.session, context.function_actions);
  settled_ = !context.computing;
}

}  // namespace kiln::ui
