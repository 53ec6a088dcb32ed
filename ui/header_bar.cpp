#include "ui/header_bar.h"

#include <imgui.h>

#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "ui/flame_search.h"
#include "ui/format.h"
#include "ui/widgets.h"
#include "ui/theme.h"

namespace kiln::ui {


const std::vector<FilterKey>& WellKnownFilterKeys() {
  static const std::vector<FilterKey> kKeys = {
      {"process.executable.name", "Process"}, {"process.pid", "PID"},      {"thread.name", "Thread"},
      {"container.id", "Container"},          {"service.name", "Service"}, {"host.name", "Host"},
  };
  return kKeys;
}

std::string FilterKeyDisplayName(const std::string& key) {
  for (const FilterKey& k : WellKnownFilterKeys()) {
    if (key == k.key) return k.display;
  }
  return key;
}

void HeaderBar::Draw(const std::vector<View*>& views, size_t* active_view, SessionState& session,
                     const StatusSnapshot* status, const AnalysisSnapshot* analysis, bool computing) {
  // Row 1: name, tabs, kind, presets.
  ImGui::PushStyleColor(ImGuiCol_Text, CurrentPalette().accent_text);
  ImGui::TextUnformatted("Kiln");
  ImGui::PopStyleColor();
  ImGui::SameLine(0, ImGui::GetFontSize() * 1.2f);

  size_t requested = *active_view;
  if (!session.requested_tab.empty()) {
    for (size_t i = 0; i < views.size(); ++i) {
      if (views[i]->Id() == session.requested_tab) requested = i;
    }
  }
  // Wide enough for every tab's title at full length.
  float tabs_width = 0;
  for (const View* v : views) {
    const std::string_view t = v->Title();
    tabs_width += ImGui::CalcTextSize(t.data(), t.data() + t.size()).x + ImGui::GetStyle().FramePadding.x * 2 +
                  ImGui::GetStyle().ItemInnerSpacing.x;
  }
  tabs_width += ImGui::GetFontSize();
  ImGui::BeginChild("##tabs", ImVec2(tabs_width, ImGui::GetFrameHeight() + 2.f), false,
                    ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
  if (ImGui::BeginTabBar("##views", ImGuiTabBarFlags_None)) {
    for (size_t i = 0; i < views.size(); ++i) {
      const std::string title(views[i]->Title());
      ImGuiTabItemFlags flags = 0;
      if (!session.requested_tab.empty() && i == requested) flags |= ImGuiTabItemFlags_SetSelected;
      if (ImGui::BeginTabItem(title.c_str(), nullptr, flags)) {
        *active_view = i;
        ImGui::EndTabItem();
      }
    }
    ImGui::EndTabBar();
  }
  ImGui::EndChild();
  if (!session.requested_tab.empty()) {
    *active_view = requested;
    session.requested_tab.clear();
  }

  ImGui::SameLine(0, ImGui::GetFontSize());
  DrawSampleTypePicker(session, status, analysis);

  if (session.offline && session.untimed) {
    // No times per sample: nothing to choose a range from. The facts instead.
    ImGui::SameLine();
    if (session.profile_start_ns != 0) {
      ImGui::TextDisabled("profile at %s, %s", FormatDateTime(session.profile_start_ns).c_str(),
                          session.profile_end_ns > session.profile_start_ns
                              ? ("duration " + FormatDuration(session.profile_end_ns - session.profile_start_ns)).c_str()
                              : "duration not recorded");
    } else {
      ImGui::TextDisabled("profile time not recorded");
    }
    if (ImGui::IsItemHovered()) {
      ImGui::SetTooltip("%s", "The file's samples carry no times of their own (pprof keeps one time and a\n"
                              "duration per profile), so the whole capture is shown.");
    }
  } else {
    for (TimePreset preset : kTimePresets) {
      ImGui::SameLine();
      const bool active = session.live && session.preset == preset;
      if (active) ImGui::PushStyleColor(ImGuiCol_Button, ImGui::GetStyleColorVec4(ImGuiCol_ButtonActive));
      const std::string name(TimePresetName(preset));
      if (ImGui::Button(name.c_str())) {
        session.preset = preset;
        session.live = true;
        session.selection = {};
      }
      if (active) ImGui::PopStyleColor();
    }
  }
  ImGui::SameLine();
  if (session.offline) {
    ImGui::TextDisabled("%s", session.offline_label.c_str());
    if (ImGui::IsItemHovered() && !session.untimed)
      ImGui::SetTooltip("Static data (%s): read-only; presets count back from its newest sample.",
                        session.offline_label.c_str());
  } else if (session.live) {
    ImGui::TextColored(CurrentPalette().live_text, "LIVE");
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("Following new data. Select a range in the timeline to stop.");
  } else {
    ImGui::TextDisabled("paused");
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Choose a preset to follow new data again.");
  }
  if (computing) {
    ImGui::SameLine();
    Spinner();
  }
  DrawFilterBar(session, status, analysis);
}

void HeaderBar::DrawSampleTypePicker(SessionState& session, const StatusSnapshot* status,
                                     const AnalysisSnapshot* analysis) {
  std::vector<storage::SampleTypeInfo> types;
  if (status != nullptr) {
    for (const storage::SampleTypeCount& c : status->stats.sample_types) types.push_back(c.info);
  }
  auto current = std::find_if(types.begin(), types.end(),
                              [&](const storage::SampleTypeInfo& t) { return t.type == session.sample_type; });
  if (current == types.end()) {
    types.insert(types.begin(), storage::SampleTypeInfo{session.sample_type});
    current = types.begin();
  }
  const std::string label = storage::SampleTypeLabel(session.sample_type);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 10.f);
  if (ImGui::BeginCombo("##sample_type", label.c_str())) {
    for (const storage::SampleTypeInfo& t : types) {
      const std::string item = storage::SampleTypeLabel(t.type) + "##" + storage::SampleTypeName(t.type);
      if (ImGui::Selectable(item.c_str(), t.type == session.sample_type)) session.SetSampleType(t.type);
    }
    ImGui::EndCombo();
  }
  if (ImGui::IsItemHovered()) {
    std::string tip = "What the values measure: " + storage::SampleTypeName(current->type);
    if (current->period != 0) {
      tip += "\nSampled every " +
             storage::FormatValue({current->period_type, current->period_unit}, current->period);
      if (!current->period_type.empty()) tip += " of " + current->period_type;
    }
    ImGui::SetTooltip("%s", tip.c_str());
  }
  // Values scaled up from a sampled share, or off-CPU time that may be a
  // share nobody said: the picker says so, in words on hover.
  if (analysis != nullptr && analysis->sampling && analysis->sampling->kind != storage::SamplingNote::Kind::kNone &&
      analysis->request.query.sample_type == session.sample_type) {
    ImGui::SameLine();
    ImGui::TextColored(CurrentPalette().warning_text, "%s", analysis->sampling->label.c_str());
    if (ImGui::IsItemHovered()) {
      ImGui::SetNextWindowSize(ImVec2(ImGui::GetFontSize() * 28.f, 0));
      ImGui::BeginTooltip();
      ImGui::TextWrapped("%s", analysis->sampling->text.c_str());
      ImGui::EndTooltip();
    }
  }
}

void HeaderBar::DrawFilterBar(SessionState& session, const StatusSnapshot* status,
                              const AnalysisSnapshot* analysis) {
  ImGui::TextDisabled("Filters:");
  // Copy: removing a chip edits session.filters while we iterate.
  const auto filters = session.filters;
  for (const auto& f : filters) {
    for (const auto& v : f.values) {
      ImGui::SameLine();
      const std::string chip = FilterKeyDisplayName(f.key) + " = " + v + "  x";
      ImGui::PushID(f.key.c_str());
      ImGui::PushID(v.c_str());
      ImGui::PushStyleColor(ImGuiCol_Button, ImVec4(0.22f, 0.33f, 0.5f, 1.f));
      if (ImGui::SmallButton(chip.c_str())) session.RemoveFilterValue(f.key, v);
      ImGui::PopStyleColor();
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s = %s (click to remove)", f.key.c_str(), v.c_str());
      ImGui::PopID();
      ImGui::PopID();
    }
  }
  ImGui::SameLine();
  if (ImGui::SmallButton("+ Add filter")) ImGui::OpenPopup("##filter_popup");
  if (!session.filters.empty()) {
    ImGui::SameLine();
    if (ImGui::SmallButton("Clear filters")) session.filters.clear();
  }
  DrawFilterPopup(session, status, analysis);
}

void HeaderBar::DrawFilterPopup(SessionState& session, const StatusSnapshot* status,
                                const AnalysisSnapshot* analysis) {
  if (!ImGui::BeginPopup("##filter_popup")) return;
  if (!status || status->attribute_keys.empty()) {
    ImGui::TextDisabled("No attributes seen yet.");
    ImGui::EndPopup();
    return;
  }
  // Well-known keys first, then every other key seen.
  std::vector<std::string> keys;
  for (const FilterKey& k : WellKnownFilterKeys()) {
    if (std::find(status->attribute_keys.begin(), status->attribute_keys.end(), k.key) !=
        status->attribute_keys.end()) {
      keys.push_back(k.key);
    }
  }
  for (const auto& k : status->attribute_keys) {
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  }
  if (popup_key_.empty() || std::find(keys.begin(), keys.end(), popup_key_) == keys.end())
    popup_key_ = keys[0];

  const float em = ImGui::GetFontSize();
  ImGui::BeginChild("##keys", ImVec2(em * 19, em * 18), true);
  for (const auto& k : keys) {
    const std::string label = FilterKeyDisplayName(k) == k ? k : FilterKeyDisplayName(k) + "  (" + k + ")";
    if (ImGui::Selectable(label.c_str(), k == popup_key_)) popup_key_ = k;
  }
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginGroup();
  ImGui::SetNextItemWidth(em * 20);
  ImGui::InputTextWithHint("##value_filter", "Filter values", value_filter_, sizeof value_filter_);
  ImGui::BeginChild("##values", ImVec2(em * 20, em * 16.5f), true);
  auto it = status->attribute_values.find(popup_key_);
  if (it == status->attribute_values.end() || it->second.empty()) {
    ImGui::TextDisabled("No values known yet.");
  } else {
    // A pid says little on its own: what ran under it in the range.
    // Looked up once a frame, not a scan of the processes per value.
    const bool pids = popup_key_ == storage::attr::kProcessPid;
    std::unordered_map<std::string_view, const storage::ProcessSummary*> process_of_pid;
    if (pids && analysis && analysis->processes) {
      for (const storage::ProcessSummary& p : *analysis->processes) process_of_pid.emplace(p.pid, &p);
    }
    const int64_t total = analysis && analysis->slice ? analysis->slice->total_weight : 0;
    for (const auto& v : it->second) {
      const auto found = pids ? process_of_pid.find(v) : process_of_pid.end();
      const std::string shown =
          pids ? PidValueLabel(v, found == process_of_pid.end() ? nullptr : found->second, total) : v;
      if (value_filter_[0] && !LabelMatches(shown, value_filter_)) continue;
      bool on = session.HasFilterValue(popup_key_, v);
      ImGui::PushID(v.c_str());
      const bool clicked = ImGui::Checkbox(shown.c_str(), &on);
      ImGui::PopID();
      if (clicked) {
        if (on) {
          session.AddFilterValue(popup_key_, v);
        } else {
          session.RemoveFilterValue(popup_key_, v);
        }
      }
    }
  }
  ImGui::EndChild();
  ImGui::EndGroup();
  ImGui::EndPopup();
}

}  // namespace kiln::ui
