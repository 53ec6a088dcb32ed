#include "ui/theme.h"

#include <imgui.h>
#include <sys/stat.h>

#include <iterator>

namespace kiln::ui {

namespace {

constexpr float kBaseFontSize = 15.f;

bool FileExists(const char* path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

ImFont* LoadFirst(const char* const* paths, size_t count, float size) {
  ImGuiIO& io = ImGui::GetIO();
  for (size_t i = 0; i < count; ++i) {
    if (FileExists(paths[i])) {
      ImFontConfig config;
      config.OversampleH = 2;
      if (ImFont* f =
              io.Fonts->AddFontFromFileTTF(paths[i], size, &config, io.Fonts->GetGlyphRangesDefault())) {
        return f;
      }
    }
  }
  return nullptr;
}

}  // namespace

Fonts ApplyTheme(float content_scale) {
  if (content_scale < 0.5f || content_scale > 4.f) content_scale = 1.f;
  ImGui::StyleColorsDark();
  ImGuiStyle& style = ImGui::GetStyle();
  style.WindowRounding = 0.f;
  style.FrameRounding = 3.f;
  style.GrabRounding = 3.f;
  style.TabRounding = 3.f;
  style.ChildRounding = 2.f;
  style.PopupRounding = 3.f;
  style.FramePadding = ImVec2(6.f, 3.f);
  style.ItemSpacing = ImVec2(7.f, 5.f);
  style.WindowPadding = ImVec2(8.f, 6.f);
  style.ScrollbarSize = 12.f;
  ImVec4* c = style.Colors;
  c[ImGuiCol_WindowBg] = ImVec4(0.110f, 0.118f, 0.141f, 1.f);  // #1c1e24, matches the flame background
  c[ImGuiCol_ChildBg] = ImVec4(0.110f, 0.118f, 0.141f, 1.f);
  c[ImGuiCol_PopupBg] = ImVec4(0.13f, 0.14f, 0.17f, 0.98f);
  c[ImGuiCol_Border] = ImVec4(0.25f, 0.27f, 0.31f, 1.f);
  c[ImGuiCol_FrameBg] = ImVec4(0.17f, 0.18f, 0.22f, 1.f);
  c[ImGuiCol_FrameBgHovered] = ImVec4(0.22f, 0.24f, 0.29f, 1.f);
  c[ImGuiCol_FrameBgActive] = ImVec4(0.25f, 0.27f, 0.33f, 1.f);
  c[ImGuiCol_Button] = ImVec4(0.20f, 0.22f, 0.27f, 1.f);
  c[ImGuiCol_ButtonHovered] = ImVec4(0.30f, 0.33f, 0.40f, 1.f);
  c[ImGuiCol_ButtonActive] = ImVec4(0.80f, 0.45f, 0.15f, 1.f);
  c[ImGuiCol_Header] = ImVec4(0.22f, 0.25f, 0.31f, 1.f);
  c[ImGuiCol_HeaderHovered] = ImVec4(0.30f, 0.34f, 0.42f, 1.f);
  c[ImGuiCol_HeaderActive] = ImVec4(0.35f, 0.39f, 0.48f, 1.f);
  c[ImGuiCol_Tab] = ImVec4(0.16f, 0.17f, 0.21f, 1.f);
  c[ImGuiCol_TabHovered] = ImVec4(0.85f, 0.50f, 0.20f, 0.85f);
  c[ImGuiCol_TabActive] = ImVec4(0.75f, 0.42f, 0.14f, 1.f);
  c[ImGuiCol_CheckMark] = ImVec4(0.95f, 0.62f, 0.25f, 1.f);
  c[ImGuiCol_SliderGrab] = ImVec4(0.95f, 0.62f, 0.25f, 1.f);
  c[ImGuiCol_TableHeaderBg] = ImVec4(0.16f, 0.17f, 0.21f, 1.f);
  c[ImGuiCol_TableRowBgAlt] = ImVec4(1.f, 1.f, 1.f, 0.03f);
  c[ImGuiCol_TextSelectedBg] = ImVec4(0.85f, 0.50f, 0.20f, 0.35f);
  style.ScaleAllSizes(content_scale);

  static const char* const kSans[] = {
      "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "/usr/share/fonts/TTF/DejaVuSans.ttf",
      "/usr/share/fonts/dejavu/DejaVuSans.ttf", "/System/Library/Fonts/SFNS.ttf"};
  static const char* const kMono[] = {"/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf",
                                      "/usr/share/fonts/TTF/DejaVuSansMono.ttf",
                                      "/usr/share/fonts/dejavu/DejaVuSansMono.ttf"};
  Fonts fonts;
  const float size = kBaseFontSize * content_scale;
  fonts.regular = LoadFirst(kSans, std::size(kSans), size);
  fonts.system_font = fonts.regular != nullptr;
  if (!fonts.regular) {
    ImFontConfig config;
    config.SizePixels = 13.f * content_scale;
    fonts.regular = ImGui::GetIO().Fonts->AddFontDefault(&config);
  }
  fonts.mono = LoadFirst(kMono, std::size(kMono), size * 0.93f);
  if (!fonts.mono) fonts.mono = fonts.regular;
  return fonts;
}

}  // namespace kiln::ui
