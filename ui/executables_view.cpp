#include "ui/executables_view.h"

#include <imgui.h>

#include <algorithm>

#include "ui/flame_search.h"
#include "ui/format.h"
#include "ui/widgets.h"

namespace kiln::ui {

using storage::ExecutableRow;

namespace {
enum Column : int { kName, kWeight, kSymbols, kFrames, kHtlhash, kGnuBuildId, kGoBuildId, kColumnCount };

std::string_view Basename(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}
}  // namespace

std::string SymbolStatus(const ExecutableRow& row) {
  if (row.frames == 0) return "-";
  if (row.unsymbolized_frames == 0) return "symbolized";
  if (row.unsymbolized_frames == row.frames) return "no symbols";
  return std::to_string(row.unsymbolized_frames) + " of " + std::to_string(row.frames) +
         " frames unsymbolized";
}

void ExecutablesView::Draw(const ViewContext& context) {
  settled_ = false;
  if (context.analysis && context.analysis->executables != rows_) {
    rows_ = context.analysis->executables;
    order_dirty_ = true;
  }
  ImGui::SetNextItemWidth(320.f * ImGui::GetFontSize() / 15.f);
  if (ImGui::InputTextWithHint("##filter", "Filter by name or id", filter_, sizeof filter_))
    order_dirty_ = true;
  if (!rows_ || !context.analysis) {
    DrawLoadingOrError(context);
    return;
  }
  ImGui::SameLine();
  ImGui::TextDisabled("%zu executables in native frames of the selection", rows_->size());

  const storage::SampleKind kind = context.analysis->request.query.kind;
  const int64_t total =
      std::max<int64_t>(context.analysis->slice ? context.analysis->slice->total_weight : 1, 1);
  const ImGuiTableFlags flags = ImGuiTableFlags_Sortable | ImGuiTableFlags_RowBg |
                                ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_Resizable |
                                ImGuiTableFlags_ScrollY | ImGuiTableFlags_Hideable |
                                ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable("##executables", kColumnCount, flags)) return;
  const float em = ImGui::GetFontSize();
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("File name", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableSetupColumn(
      "Weight", ImGuiTableColumnFlags_DefaultSort | ImGuiTableColumnFlags_PreferSortDescending, em * 11);
  ImGui::TableSetupColumn("Symbols", 0, em * 12);
  ImGui::TableSetupColumn("Frames", ImGuiTableColumnFlags_PreferSortDescending, em * 4);
  ImGui::TableSetupColumn("htlhash", 0, em * 17);
  ImGui::TableSetupColumn("GNU build id", 0, em * 17);
  ImGui::TableSetupColumn("Go build id", ImGuiTableColumnFlags_DefaultHide, em * 14);
  ImGui::TableHeadersRow();

  ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs();
  if (order_dirty_ || (specs && specs->SpecsDirty)) {
    const auto& rows = *rows_;
    order_.clear();
    for (uint32_t i = 0; i < rows.size(); ++i) {
      const ExecutableRow& r = rows[i];
      if (!filter_[0] || LabelMatches(r.file_name, filter_) || LabelMatches(r.htlhash, filter_) ||
          LabelMatches(r.gnu_build_id, filter_) || LabelMatches(r.go_build_id, filter_)) {
        order_.push_back(i);
      }
    }
    if (specs && specs->SpecsCount > 0) {
      const ImGuiTableColumnSortSpecs s = specs->Specs[0];
      auto key_less = [&](uint32_t a, uint32_t b) {
        const ExecutableRow& x = rows[a];
        const ExecutableRow& y = rows[b];
        switch (s.ColumnIndex) {
          case kName:
            return Basename(x.file_name) < Basename(y.file_name);
          case kWeight:
            return x.weight < y.weight;
          case kSymbols:
            return x.unsymbolized_frames * y.frames < y.unsymbolized_frames * x.frames;
          case kFrames:
            return x.frames < y.frames;
          case kHtlhash:
            return x.htlhash < y.htlhash;
          case kGnuBuildId:
            return x.gnu_build_id < y.gnu_build_id;
          case kGoBuildId:
            return x.go_build_id < y.go_build_id;
          default:
            return false;
        }
      };
      if (s.SortDirection == ImGuiSortDirection_Ascending) {
        std::stable_sort(order_.begin(), order_.end(), key_less);
      } else {
        std::stable_sort(order_.begin(), order_.end(),
                         [&](uint32_t a, uint32_t b) { return key_less(b, a); });
      }
      specs->SpecsDirty = false;
    }
    order_dirty_ = false;
  }

  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(order_.size()));
  while (clipper.Step()) {
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      const ExecutableRow& row = (*rows_)[order_[i]];
      ImGui::TableNextRow();
      ImGui::PushID(i);
      ImGui::TableSetColumnIndex(kName);
      const std::string_view base = Basename(row.file_name);
      ImGui::TextUnformatted(base.data(), base.data() + base.size());
      if (ImGui::IsItemHovered() && base.size() != row.file_name.size())
        ImGui::SetTooltip("%s", row.file_name.c_str());
      ImGui::TableSetColumnIndex(kWeight);
      const double fraction = static_cast<double>(row.weight) / total;
      InlineBar(fraction, PackRgba(0x7a, 0x5a, 0x2a),
                FormatWeight(kind, row.weight) + "  " + FormatPercent(fraction));
      ImGui::TableSetColumnIndex(kSymbols);
      const std::string status = SymbolStatus(row);
      const ImVec4 color = row.unsymbolized_frames == 0            ? ImVec4(0.55f, 0.85f, 0.55f, 1.f)
                           : row.unsymbolized_frames == row.frames ? ImVec4(0.95f, 0.6f, 0.4f, 1.f)
                                                                   : ImVec4(0.95f, 0.85f, 0.45f, 1.f);
      ImGui::TextColored(color, "%s", status.c_str());
      ImGui::TableSetColumnIndex(kFrames);
      ImGui::Text("%llu", static_cast<unsigned long long>(row.frames));
      if (context.mono_font) ImGui::PushFont(context.mono_font);
      ImGui::TableSetColumnIndex(kHtlhash);
      ImGui::TextUnformatted(row.htlhash.empty() ? "-" : row.htlhash.c_str());
      ImGui::TableSetColumnIndex(kGnuBuildId);
      ImGui::TextUnformatted(row.gnu_build_id.empty() ? "-" : row.gnu_build_id.c_str());
      ImGui::TableSetColumnIndex(kGoBuildId);
      ImGui::TextUnformatted(row.go_build_id.empty() ? "-" : row.go_build_id.c_str());
      if (context.mono_font) ImGui::PopFont();
      ImGui::PopID();
    }
  }
  ImGui::EndTable();
  settled_ = !context.computing;
}

}  // namespace kiln::ui
