#include "ui/help_dialogs.h"

#include <imgui.h>

#include <algorithm>

#include "ui/connect_help.h"
#include "ui/theme.h"
#include "ui/widgets.h"

namespace kiln::ui {

std::vector<WindowKey> WindowKeys(size_t view_count) {
  std::vector<WindowKey> keys = {
      {.key = 'O', .ctrl = true, .command = WindowCommand::kOpen},
      {.key = 'E', .ctrl = true, .command = WindowCommand::kExport},
      {.function_key = 1, .command = WindowCommand::kShortcuts},
      {.key = 'Q', .ctrl = true, .command = WindowCommand::kQuit},
      {.key = 'F', .ctrl = true, .command = WindowCommand::kSearch},
  };
  for (size_t i = 0; i < std::min<size_t>(view_count, 9); ++i) {
    keys.push_back({.key = static_cast<char>('1' + i), .ctrl = true, .command = WindowCommand::kShowView,
                    .view = static_cast<int>(i)});
  }
  return keys;
}

std::string KeyLabel(const WindowKey& key) {
  std::string label = key.ctrl ? "Ctrl+" : "";
  return key.key != 0 ? label + key.key : label + "F" + std::to_string(key.function_key);
}

std::vector<Shortcut> KeyboardShortcuts(const std::vector<std::string>& view_titles) {
  std::vector<Shortcut> list;
  for (const WindowKey& k : WindowKeys(view_titles.size())) {
    std::string action;
    switch (k.command) {
      case WindowCommand::kOpen: action = "Open a capture file"; break;
      case WindowCommand::kExport: action = "Export what the view shows"; break;
      case WindowCommand::kShortcuts: action = "This list"; break;
      case WindowCommand::kQuit: action = "Quit"; break;
      case WindowCommand::kSearch: action = "Flamegraph: search (also /)"; break;
      case WindowCommand::kShowView: action = "Show " + view_titles[static_cast<size_t>(k.view)]; break;
    }
    list.push_back({KeyLabel(k), std::move(action)});
  }
  static const Shortcut kViewKeys[] = {
      {"n / N", "Flamegraph: next / previous match (scrolled and zoomed into view)"},
      {"Arrows", "Flamegraph: parent, heaviest child, previous / next sibling"},
      {"Enter", "Flamegraph: zoom to the selected frame"},
      {"Esc or Backspace", "Flamegraph: zoom out one level; dialogs: close"},
      {"?", "Flamegraph: this list"},
      {"Right-click", "Flamegraph, Top functions, Stack Chart: copy, focus, merge, hide, collapse..."},
      {"Double-click", "Flamegraph: zoom out one level"},
      {"Mouse wheel, drag", "Stack Chart: zoom around the pointer, pan"},
      {"Left / Right, + / -, 0", "Stack Chart: pan, zoom, show the whole range"},
      {"Click", "Stack Chart: select the box's function in every view (the flamegraph's search, Top functions' row)"},
      {"Click / drag", "Timeline: clear / select a range"},
      {"Mouse wheel", "Timeline: zoom around the pointer"},
      {"Tab, arrows, Space", "Move between and use controls (Dear ImGui keyboard navigation)"},
  };
  list.insert(list.end(), std::begin(kViewKeys), std::end(kViewKeys));
  return list;
}

void DrawConnectDialog(bool* open, const std::string& listen_address, const std::vector<std::string>& addresses,
                       const ReceiverAccess& access, const std::string& local_agent) {
  if (!*open) return;
  const float em = ImGui::GetFontSize();
  ImGui::SetNextWindowSize(ImVec2(em * 48, em * 36), ImGuiCond_FirstUseEver);
  if (!ImGui::Begin("Connect an agent", open, ImGuiWindowFlags_NoCollapse)) {
    ImGui::End();
    return;
  }
  if (EscapeCloses()) *open = false;
  if (listen_address.empty()) {
    ImGui::TextColored(CurrentPalette().error_text,
                       "This kiln is not receiving (see the Log); start it with --listen ADDRESS:PORT.");
  } else {
    ImGui::Text("Kiln receives OTLP profiles (gRPC) on %s.", listen_address.c_str());
    if (LoopbackOnly(listen_address)) {
      ImGui::TextDisabled("It listens on loopback only: other hosts need the ssh tunnel below.");
    }
    bool warn = false;
    const std::string summary = AccessSummary(listen_address, access, &warn);
    if (warn) {
      ImGui::TextColored(CurrentPalette().error_text, "Senders: %s. Any host that reaches the port can send.",
                         summary.c_str());
    } else {
      ImGui::Text("Senders: %s.", summary.c_str());
    }
    if (access.token) {
      ImGui::TextDisabled("%s", access.token_file.empty()
                                    ? "The token is in KILN_AUTH_TOKEN: put it in a file for the agents."
                                    : ("The token is in " + access.token_file + ".").c_str());
    }
  }
  ImGui::Text("This machine's addresses:");
  ImGui::SameLine();
  if (addresses.empty()) ImGui::TextDisabled("none but loopback");
  for (size_t i = 0; i < addresses.size(); ++i) {
    if (i) ImGui::SameLine();
    ImGui::TextUnformatted(addresses[i].c_str());
  }
  ImGui::Separator();
  int id = 0;
  for (const ConnectRecipe& r : ConnectRecipes(listen_address, addresses, access, local_agent)) {
    ImGui::PushID(id++);
    ImGui::TextUnformatted(r.title.c_str());
    ImGui::PushTextWrapPos(0.f);
    ImGui::TextDisabled("%s", r.explanation.c_str());
    ImGui::PopTextWrapPos();
    if (ImGui::SmallButton("Copy")) ImGui::SetClipboardText(r.text.c_str());
    ImGui::SameLine();
    const int lines = 1 + static_cast<int>(std::count(r.text.begin(), r.text.end(), '\n'));
    if (lines == 1) {
      CopyableText("##text", r.text);
    } else {
      std::string copy = r.text;
      ImGui::InputTextMultiline("##text", copy.data(), copy.size() + 1,
                                ImVec2(-FLT_MIN, ImGui::GetTextLineHeight() * (lines + 0.6f)),
                                ImGuiInputTextFlags_ReadOnly);
    }
    ImGui::Spacing();
    ImGui::PopID();
  }
  ImGui::End();
}

void DrawShortcutsDialog(bool* open, const std::vector<std::string>& view_titles) {
  if (!*open) return;
  ImGui::SetNextWindowSize(ImVec2(ImGui::GetFontSize() * 34, 0), ImGuiCond_FirstUseEver);
  if (ImGui::Begin("Keyboard shortcuts", open, ImGuiWindowFlags_NoCollapse | ImGuiWindowFlags_AlwaysAutoResize)) {
    if (EscapeCloses()) *open = false;
    if (ImGui::BeginTable("##shortcuts", 2, ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV)) {
      for (const Shortcut& s : KeyboardShortcuts(view_titles)) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(s.keys.c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(s.action.c_str());
      }
      ImGui::EndTable();
    }
  }
  ImGui::End();
}

void DrawAboutDialog(bool* open, const AboutInfo& info) {
  if (!*open) return;
  if (ImGui::Begin("About Kiln", open, ImGuiWindowFlags_NoCollapse | ImGuiWindowFlags_AlwaysAutoResize)) {
    if (EscapeCloses()) *open = false;
    ImGui::Text("Kiln %s", info.version.c_str());
    ImGui::TextDisabled("A desktop viewer for OpenTelemetry profiles, with an OTLP receiver.");
    ImGui::Separator();
    if (ImGui::BeginTable("##about", 2)) {
      auto row = [](const char* key, const std::string& value) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextDisabled("%s", key);
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(value.c_str());
      };
      row("Receiver", info.listen_address.empty() ? "not receiving" : info.listen_address);
      row("Store", info.store_path);
      row("Preferences", info.settings_path);
      row("Window state", info.state_path);
      row("Dear ImGui", ImGui::GetVersion());
      ImGui::EndTable();
    }
  }
  ImGui::End();
}

}  // namespace kiln::ui
