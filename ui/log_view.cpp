#include "ui/log_view.h"

#include <imgui.h>

#include "ui/flame_search.h"
#include "ui/format.h"
#include "ui/theme.h"

namespace kiln::ui {

using storage::LogLevel;

namespace {
ImVec4 LevelColor(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return CurrentPalette().muted_text;
    case LogLevel::kInfo:
      return CurrentPalette().info_text;
    case LogLevel::kWarning:
      return CurrentPalette().warning_text;
    case LogLevel::kError:
      return CurrentPalette().error_text;
  }
  return ImGui::GetStyleColorVec4(ImGuiCol_Text);
}
}  // namespace

void LogView::Draw(const ViewContext& context) {
  settled_ = false;
  static const char* kLevels[] = {"Debug and above", "Info and above", "Warnings and errors", "Errors only"};
  ImGui::SetNextItemWidth(190.f * ImGui::GetFontSize() / 15.f);
  ImGui::Combo("##level", &min_level_, kLevels, 4);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(320.f * ImGui::GetFontSize() / 15.f);
  ImGui::InputTextWithHint("##filter", "Filter messages", filter_, sizeof filter_);
  if (!context.status) {
    ImGui::TextDisabled("Loading...");
    return;
  }
  const auto& log = context.status->log;
  // Rebuilt every frame: the log holds at most a few thousand entries.
  visible_.clear();
  for (uint32_t i = 0; i < log.size(); ++i) {
    if (static_cast<int>(log[i].level) < min_level_) continue;
    if (filter_[0] && !LabelMatches(log[i].message, filter_)) continue;
    visible_.push_back(i);
  }
  ImGui::SameLine();
  ImGui::TextDisabled("%zu of %zu entries, newest first", visible_.size(), log.size());

  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                                ImGuiTableFlags_Resizable | ImGuiTableFlags_ScrollY |
                                ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable("##log", 3, flags)) return;
  const float em = ImGui::GetFontSize();
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("Time", 0, em * 11);
  ImGui::TableSetupColumn("Level", 0, em * 5);
  ImGui::TableSetupColumn("Message", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableHeadersRow();
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(visible_.size()));
  while (clipper.Step()) {
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      const storage::LogEntry& e = log[visible_[i]];
      ImGui::TableNextRow();
      ImGui::TableSetColumnIndex(0);
      ImGui::TextUnformatted(FormatClock(e.time_ns, true).c_str());
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", FormatDateTime(e.time_ns).c_str());
      ImGui::TableSetColumnIndex(1);
      const std::string_view level = storage::LogLevelName(e.level);
      ImGui::TextColored(LevelColor(e.level), "%.*s", static_cast<int>(level.size()), level.data());
      ImGui::TableSetColumnIndex(2);
      ImGui::TextUnformatted(e.message.c_str());
      if (ImGui::IsItemHovered() && ImGui::CalcTextSize(e.message.c_str()).x > ImGui::GetColumnWidth()) {
        ImGui::BeginTooltip();
        ImGui::PushTextWrapPos(em * 50);
        ImGui::TextUnformatted(e.message.c_str());
        ImGui::PopTextWrapPos();
        ImGui::EndTooltip();
      }
    }
  }
  ImGui::EndTable();
  settled_ = true;
}

}  // namespace kiln::ui
