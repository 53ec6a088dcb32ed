#include "ui/executables_view.h"

#include <imgui.h>

#include <algorithm>
#include <cstdio>

#include "ui/flame_search.h"
#include "ui/format.h"
#include "ui/widgets.h"
#include "ui/theme.h"

namespace kiln::ui {

using storage::ExecutableRow;
using State = storage::SymbolStatus::State;

namespace {
enum Column : int {
  kName,
  kWeight,
  kSymbols,
  kSource,
  kFrames,
  kHtlhash,
  kGnuBuildId,
  kGoBuildId,
  kColumnCount
};

std::string_view Basename(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

ImVec4 StatusColor(const storage::SymbolStatus& s, bool has_id) {
  if (!has_id) return CurrentPalette().muted_text;
  switch (s.state) {
    case State::kSymbolized:
      return CurrentPalette().ok_text;
    case State::kNoSymbols:
      return CurrentPalette().warning_text;
    case State::kFailed:
      return CurrentPalette().error_text;
    case State::kNotAttempted:
      break;
  }
  return ImGui::GetStyleColorVec4(ImGuiCol_Text);
}

const SymbolStatusMap& EmptyStatuses() {
  static const SymbolStatusMap empty;
  return empty;
}
}  // namespace

void ExecutablesView::DrawToolbar(const ViewContext& context, const ExecutableRow* selected) {
  const bool can_act = context.requests != nullptr;
  ImGui::BeginDisabled(!can_act);
  if (ImGui::Button("Add symbols from a file...")) context.requests->add_symbol_files = true;
  ImGui::EndDisabled();
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip(
        "An executable, shared library or its debug file; matched by htlhash or GNU build id.\n"
        "Dropping ELF files on the window does the same.");
  ImGui::SameLine();
  const bool has_key = selected && (!selected->htlhash.empty() || !selected->gnu_build_id.empty());
  ImGui::BeginDisabled(!can_act || !has_key);
  if (ImGui::Button("Retry")) {
    const auto keys = storage::SymbolKeys(selected->htlhash, selected->gnu_build_id);
    if (!keys.empty()) context.requests->retry_symbol_keys.push_back(keys.front());
  }
  ImGui::EndDisabled();
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip(selected ? "Look for symbols of the selected executable again"
                               : "Select an executable first");
  ImGui::SameLine();
  ImGui::BeginDisabled(!selected || !context.session);
  bool show = context.session && context.session->show_unsymbolized;
  if (ImGui::Checkbox("Show unsymbolized frames", &show) && context.session)
    context.session->show_unsymbolized = show;
  ImGui::EndDisabled();

  if (context.symbols && context.symbols->busy) {
    const SymbolActivity& a = *context.symbols;
    ImGui::SameLine();
    Spinner();
    ImGui::SameLine();
    ImGui::Text("Symbolizing %s (%s)", a.executable.c_str(), a.source.c_str());
    ImGui::SameLine();
    char overlay[32];
    std::snprintf(overlay, sizeof overlay, "%.0f%%", a.fraction * 100);
    ImGui::ProgressBar(static_cast<float>(a.fraction), ImVec2(ImGui::GetFontSize() * 8, 0), overlay);
    if (a.queued > 0) {
      ImGui::SameLine();
      ImGui::TextDisabled("%zu more queued", a.queued);
    }
  }
}

void ExecutablesView::DrawUnsymbolized(const ViewContext& context, const ExecutableRow& row) {
  const storage::ProfileSlice* slice = context.analysis->slice.get();
  const std::string key = row.file_name + '\n' + row.htlhash + '\n' + row.gnu_build_id;
  if (slice != listed_slice_ || key != listed_key_) {
    unsymbolized_ = slice ? UnsymbolizedAddresses(*slice, row) : std::vector<UnsymbolizedAddress>{};
    listed_slice_ = slice;
    listed_key_ = key;
  }
  const std::string_view base = Basename(row.file_name);
  ImGui::Text("Unsymbolized frames of %.*s: %zu address%s", static_cast<int>(base.size()), base.data(),
              unsymbolized_.size(), unsymbolized_.size() == 1 ? "" : "es");
  if (unsymbolized_.empty()) return;
  const storage::SampleType& kind = context.analysis->request.query.sample_type;
  const int64_t total = std::max<int64_t>(slice->total_weight, 1);
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                                ImGuiTableFlags_ScrollY | ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable("##unsymbolized", 2, flags)) return;
  const float em = ImGui::GetFontSize();
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("Address", 0, em * 12);
  ImGui::TableSetupColumn("Weight", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableHeadersRow();
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(unsymbolized_.size()));
  while (clipper.Step()) {
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      const UnsymbolizedAddress& u = unsymbolized_[static_cast<size_t>(i)];
      ImGui::TableNextRow();
      ImGui::TableSetColumnIndex(0);
      if (context.mono_font) ImGui::PushFont(context.mono_font);
      ImGui::Text("0x%llx", static_cast<unsigned long long>(u.address));
      if (context.mono_font) ImGui::PopFont();
      ImGui::TableSetColumnIndex(1);
      const double fraction = static_cast<double>(u.weight) / total;
      InlineBar(fraction, CurrentPalette().weight_bar,
                FormatValue(kind, u.weight) + "  " + FormatPercent(fraction));
    }
  }
  ImGui::EndTable();
}

View::Product ExecutablesView::OwnProduct() const {
  // Always asked (the worker always built it before): one pass over the
  // slice, kept while the slice is.
  return {.inputs = [](const SessionState&) { return std::string("rows"); },
          .build = [](const storage::Store&, const AnalysisSnapshot& snapshot,
                      const std::string&) -> std::shared_ptr<const void> {
            return std::make_shared<const std::vector<storage::ExecutableRow>>(
                storage::BuildExecutableTable(*snapshot.slice));
          },
          .base = ViewBase::kSlice};
}

void ExecutablesView::Draw(const ViewContext& context) {
  settled_ = false;
  if (context.analysis) {
    if (auto rows = context.analysis->ViewResult<std::vector<storage::ExecutableRow>>(std::string(Id()));
        rows != rows_) {
      rows_ = std::move(rows);
      order_dirty_ = true;
    }
  }
  if (context.status && context.status->symbol_statuses != statuses_) {
    statuses_ = context.status->symbol_statuses;
    order_dirty_ = true;  // the Symbols column may sort differently now
  }
  const SymbolStatusMap& statuses = statuses_ ? *statuses_ : EmptyStatuses();

  const ExecutableRow* selected = nullptr;
  if (rows_ && context.session) {
    const SessionState::ExecutableId& id = context.session->selected_executable;
    for (const ExecutableRow& r : *rows_) {
      if (r.file_name == id.file_name && r.htlhash == id.htlhash && r.gnu_build_id == id.gnu_build_id)
        selected = &r;
    }
  }
  DrawToolbar(context, selected);

  ImGui::SetNextItemWidth(320.f * ImGui::GetFontSize() / 15.f);
  if (ImGui::InputTextWithHint("##filter", "Filter by name or id", filter_, sizeof filter_))
    order_dirty_ = true;
  if (!rows_ || !context.analysis) {
    DrawLoadingOrError(context);
    return;
  }
  ImGui::SameLine();
  ImGui::TextDisabled("%zu executables in native frames of the selection", rows_->size());

  const storage::SampleType& kind = context.analysis->request.query.sample_type;
  const int64_t total =
      std::max<int64_t>(context.analysis->slice ? context.analysis->slice->total_weight : 1, 1);
  const ImGuiTableFlags flags = ImGuiTableFlags_Sortable | ImGuiTableFlags_RowBg |
                                ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_Resizable |
                                ImGuiTableFlags_ScrollY | ImGuiTableFlags_ScrollX | ImGuiTableFlags_Hideable |
                                ImGuiTableFlags_SizingFixedFit;
  const float em = ImGui::GetFontSize();
  const bool listing = selected && context.session->show_unsymbolized;
  const float table_height = listing ? ImGui::GetContentRegionAvail().y * 0.55f : 0.f;
  if (!ImGui::BeginTable("##executables", kColumnCount, flags, ImVec2(0, table_height))) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  // Fixed widths and horizontal scrolling: ids and sources are long, and a
  // squeezed file name column would hide the one thing a row is about.
  ImGui::TableSetupColumn("File name", ImGuiTableColumnFlags_NoHide, em * 13);
  ImGui::TableSetupColumn(storage::SampleTypeLabel(kind).c_str(),
                          ImGuiTableColumnFlags_DefaultSort | ImGuiTableColumnFlags_PreferSortDescending,
                          em * 10);
  ImGui::TableSetupColumn("Symbols", 0, em * 19);
  ImGui::TableSetupColumn("Source", 0, em * 17);
  ImGui::TableSetupColumn("Unsymbolized", ImGuiTableColumnFlags_PreferSortDescending, em * 6);
  ImGui::TableSetupColumn("htlhash", 0, em * 17);
  ImGui::TableSetupColumn("GNU build id", 0, em * 24);
  ImGui::TableSetupColumn("Go build id", ImGuiTableColumnFlags_DefaultHide, em * 14);
  ImGui::TableHeadersRow();

  ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs();
  if (order_dirty_ || (specs && specs->SpecsDirty)) {
    const auto& rows = *rows_;
    order_.clear();
    for (uint32_t i = 0; i < rows.size(); ++i) {
      const ExecutableRow& r = rows[i];
      if (!filter_[0] || LabelMatches(r.file_name, filter_) || LabelMatches(r.htlhash, filter_) ||
          LabelMatches(r.gnu_build_id, filter_) || LabelMatches(r.go_build_id, filter_) ||
          LabelMatches(ExecutableStatusText(statuses, r), filter_)) {
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
            return ExecutableStatusText(statuses, x) < ExecutableStatusText(statuses, y);
          case kSource:
            return StatusOfExecutable(statuses, x.htlhash, x.gnu_build_id).source <
                   StatusOfExecutable(statuses, y.htlhash, y.gnu_build_id).source;
          case kFrames:
            return x.unsymbolized_frames < y.unsymbolized_frames;
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
      const bool is_selected = &row == selected;
      const std::string label(base.empty() ? std::string_view("(unnamed)") : base);
      if (ImGui::Selectable(label.c_str(), is_selected, ImGuiSelectableFlags_SpanAllColumns) &&
          context.session)
        context.session->selected_executable = {row.file_name, row.htlhash, row.gnu_build_id};
      if (ImGui::IsItemHovered() && base.size() != row.file_name.size())
        ImGui::SetTooltip("%s", row.file_name.c_str());
      ImGui::TableSetColumnIndex(kWeight);
      const double fraction = static_cast<double>(row.weight) / total;
      InlineBar(fraction, CurrentPalette().weight_bar,
                FormatValue(kind, row.weight) + "  " + FormatPercent(fraction));
      const storage::SymbolStatus status = StatusOfExecutable(statuses, row.htlhash, row.gnu_build_id);
      const bool has_id = !row.htlhash.empty() || !row.gnu_build_id.empty();
      ImGui::TableSetColumnIndex(kSymbols);
      const std::string text = ExecutableStatusText(statuses, row);
      ImGui::TextColored(StatusColor(status, has_id), "%s", text.c_str());
      if (ImGui::IsItemHovered() && !status.detail.empty()) ImGui::SetTooltip("%s", status.detail.c_str());
      ImGui::TableSetColumnIndex(kSource);
      ImGui::TextUnformatted(status.source.empty() ? "-" : status.source.c_str());
      if (ImGui::IsItemHovered() && !status.source.empty()) ImGui::SetTooltip("%s", status.source.c_str());
      ImGui::TableSetColumnIndex(kFrames);
      ImGui::Text("%llu of %llu", static_cast<unsigned long long>(row.unsymbolized_frames),
                  static_cast<unsigned long long>(row.frames));
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
  if (listing) {
    ImGui::Separator();
    DrawUnsymbolized(context, *selected);
  }
  settled_ = !context.computing && !(context.symbols && context.symbols->busy);
}

}  // namespace kiln::ui
