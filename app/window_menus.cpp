#include "app/window_menus.h"

#include <cstdlib>
#include <filesystem>
#include <utility>

#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>
#include <imgui.h>

namespace kiln::app {

namespace {

void DrawFileMenu(const MenuFacts& facts, DesktopSettings* settings, MenuChoices* c) {
  if (!ImGui::BeginMenu("File")) return;
  if (ImGui::MenuItem("Open...", "Ctrl+O")) c->open = true;
  if (ImGui::BeginMenu("Open Recent", !settings->recent.empty())) {
    for (const std::string& path : settings->recent) {
      std::error_code ec;
      // A file that has gone stays listed (it may be on a drive that
      // comes back) but cannot be picked.
      if (ImGui::MenuItem(path.c_str(), nullptr, false, std::filesystem::exists(path, ec))) c->open_recent = path;
    }
    ImGui::Separator();
    if (ImGui::MenuItem("Clear list")) settings->recent.clear();
    ImGui::EndMenu();
  }
  if (ImGui::MenuItem("Add symbols from a file...")) c->add_symbols = true;
  if (ImGui::MenuItem("Store settings...", nullptr, false, !facts.demo)) c->store_settings = true;
  if (ImGui::MenuItem("Import into store", nullptr, false, facts.capture())) c->import_into_store = true;
  if (ImGui::IsItemHovered() && !facts.capture()) ImGui::SetTooltip("Select an opened capture first");
  if (ImGui::MenuItem("Export...", "Ctrl+E", false, facts.can_export)) c->export_view = true;
  if (ImGui::MenuItem("Save PNG of view...")) c->save_png = true;
  ImGui::Separator();
  if (ImGui::MenuItem("Close capture", nullptr, false, facts.capture())) c->close_capture = true;
  ImGui::Separator();
  if (ImGui::MenuItem("Quit", "Ctrl+Q")) c->quit = true;
  ImGui::EndMenu();
}

void DrawViewMenu(DesktopSettings* settings, MenuChoices* c) {
  if (!ImGui::BeginMenu("View")) return;
  if (ImGui::MenuItem("Dark theme", nullptr, settings->theme == Theme::kDark)) {
    settings->theme = Theme::kDark;
    c->restyle = true;
  }
  if (ImGui::MenuItem("Light theme", nullptr, settings->theme == Theme::kLight)) {
    settings->theme = Theme::kLight;
    c->restyle = true;
  }
  ImGui::Separator();
  if (ImGui::BeginMenu("UI scale")) {
    const std::pair<const char*, float> scales[] = {{"Monitor's", 0.f}, {"75%", 0.75f}, {"100%", 1.f},
                                                    {"125%", 1.25f},    {"150%", 1.5f},  {"200%", 2.f}};
    for (const auto& [label, scale] : scales) {
      if (ImGui::MenuItem(label, nullptr, settings->ui_scale == scale)) {
        settings->ui_scale = scale;
        c->restyle = true;
      }
    }
    if (std::getenv("KILN_UI_SCALE")) ImGui::TextDisabled("KILN_UI_SCALE is set and wins");
    ImGui::EndMenu();
  }
  ImGui::Separator();
  ImGui::MenuItem("Flame graph (roots at the bottom)", nullptr, &settings->flame);
  ImGui::MenuItem("Show inline frames", nullptr, &settings->show_inline);
  ImGui::MenuItem("Demangle C++/Rust names in captures", nullptr, &settings->demangle);
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip("perf script and folded files opened from now on; off keeps names as written "
                      "(as stackcollapse-perf.pl prints them)");
  }
  ImGui::EndMenu();
}

void DrawHelpMenu(MenuChoices* c) {
  if (!ImGui::BeginMenu("Help")) return;
  if (ImGui::MenuItem("Connect an agent...")) c->connect = true;
  if (ImGui::MenuItem("Data quality...")) c->data_quality = true;
  if (ImGui::MenuItem("Keyboard shortcuts", "F1")) c->shortcuts = true;
  if (ImGui::MenuItem("About Kiln")) c->about = true;
  ImGui::EndMenu();
}

void DrawSourceSwitcher(const MenuFacts& facts, MenuChoices* c) {
  ImGui::TextDisabled("Source:");
  if (facts.sources.empty()) return;
  const MenuFacts::SourceItem& current = facts.sources[facts.selected];
  const bool capture = facts.capture();
  const std::string label = current.name + (capture ? "  (capture, read-only)" : "");
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 22.f);
  if (ImGui::BeginCombo("##source", label.c_str())) {
    for (size_t i = 0; i < facts.sources.size(); ++i) {
      ImGui::PushID(static_cast<int>(i));
      if (ImGui::Selectable(facts.sources[i].name.c_str(), i == facts.selected)) c->source = i;
      if (ImGui::IsItemHovered() && !facts.sources[i].path.empty()) {
        ImGui::SetTooltip("%s", facts.sources[i].path.c_str());
      }
      ImGui::PopID();
    }
    ImGui::EndCombo();
  }
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip("%s", capture ? current.path.c_str()
                                    : "The store the receiver writes to. Open or drop capture "
                                      "files to add sources.");
  }
}

// Dear ImGui 1.87 named every key; 1.86 (Debian 12) indexes its key state
// by the backend's key codes, GLFW's here.
int KeyCode(const ui::WindowKey& k) {
#if IMGUI_VERSION_NUM >= 18700
  if (k.key >= 'A' && k.key <= 'Z') return ImGuiKey_A + (k.key - 'A');
  if (k.key >= '0' && k.key <= '9') return ImGuiKey_0 + (k.key - '0');
  return ImGuiKey_F1 + (k.function_key - 1);
#else
  // GLFW's codes for letters and digits are their ASCII codes.
  return k.key != 0 ? k.key : GLFW_KEY_F1 + (k.function_key - 1);
#endif
}

}  // namespace

MenuChoices DrawMenuBar(const MenuFacts& facts, DesktopSettings* settings) {
  MenuChoices c;
  if (!ImGui::BeginMenuBar()) return c;
  DrawFileMenu(facts, settings, &c);
  DrawViewMenu(settings, &c);
  DrawHelpMenu(&c);
  DrawSourceSwitcher(facts, &c);
  ImGui::EndMenuBar();
  return c;
}

std::vector<ui::WindowKey> PressedWindowKeys(const std::vector<ui::WindowKey>& keys) {
  const ImGuiIO& io = ImGui::GetIO();
  std::vector<ui::WindowKey> pressed;
  for (const ui::WindowKey& k : keys) {
    if (k.ctrl != io.KeyCtrl || (k.ctrl && (io.KeyShift || io.KeyAlt))) continue;
    if (ImGui::IsKeyPressed(KeyCode(k), false)) pressed.push_back(k);
  }
  return pressed;
}

}  // namespace kiln::app
