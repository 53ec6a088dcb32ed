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

const Palette kDarkPalette = {
    .background = PackRgba(0x1c, 0x1e, 0x24),
    .plot_background = PackRgba(0x16, 0x18, 0x1d),
    .plot_tick = PackRgba(0x60, 0x66, 0x70),
    .plot_label_box = PackRgba(0x16, 0x18, 0x1d, 200),
    .contrast = PackRgba(0xff, 0xff, 0xff),
    .shade = PackRgba(0, 0, 0, 110),
    .total_bar = PackRgba(0x3a, 0x4a, 0x60),
    .weight_bar = PackRgba(0x7a, 0x5a, 0x2a),
    .selected_row = PackRgba(0x38, 0x40, 0x4f),
    .error_text = ImVec4(1.f, 0.45f, 0.4f, 1.f),
    .warning_text = ImVec4(1.f, 0.8f, 0.35f, 1.f),
    .info_text = ImVec4(0.55f, 0.8f, 1.f, 1.f),
    .ok_text = ImVec4(0.55f, 0.85f, 0.55f, 1.f),
    .muted_text = ImVec4(0.6f, 0.6f, 0.65f, 1.f),
    .accent_text = ImVec4(1.f, 0.62f, 0.25f, 1.f),
    .live_text = ImVec4(0.4f, 0.9f, 0.5f, 1.f),
    .alarm_button = ImVec4(0.7f, 0.2f, 0.18f, 1.f),
    .alarm_button_hovered = ImVec4(0.85f, 0.3f, 0.25f, 1.f),
};

// Darker text colours on a light background keep the contrast of the dark
// theme's; the flame colours stay as they are.
const Palette kLightPalette = {
    .background = PackRgba(0xf4, 0xf4, 0xf6),
    .plot_background = PackRgba(0xe6, 0xe7, 0xeb),
    .plot_tick = PackRgba(0x9a, 0x9e, 0xa6),
    .plot_label_box = PackRgba(0xf4, 0xf4, 0xf6, 210),
    .contrast = PackRgba(0x10, 0x10, 0x10),
    .shade = PackRgba(0xff, 0xff, 0xff, 140),
    .total_bar = PackRgba(0xa9, 0xbf, 0xdc),
    .weight_bar = PackRgba(0xe3, 0xc0, 0x86),
    .selected_row = PackRgba(0xc5, 0xd8, 0xf3),
    .error_text = ImVec4(0.78f, 0.12f, 0.1f, 1.f),
    .warning_text = ImVec4(0.62f, 0.42f, 0.f, 1.f),
    .info_text = ImVec4(0.1f, 0.38f, 0.7f, 1.f),
    .ok_text = ImVec4(0.13f, 0.5f, 0.18f, 1.f),
    .muted_text = ImVec4(0.42f, 0.42f, 0.46f, 1.f),
    .accent_text = ImVec4(0.75f, 0.36f, 0.f, 1.f),
    .live_text = ImVec4(0.1f, 0.55f, 0.2f, 1.f),
    .alarm_button = ImVec4(0.8f, 0.2f, 0.18f, 1.f),
    .alarm_button_hovered = ImVec4(0.9f, 0.3f, 0.25f, 1.f),
};

const Palette* g_palette = &kDarkPalette;

ImVec4 FromRgba(Rgba c, float alpha = 1.f) {
  return ImVec4(RedOf(c) / 255.f, GreenOf(c) / 255.f, BlueOf(c) / 255.f, alpha);
}

void LightColors(ImGuiStyle& style) {
  ImGui::StyleColorsLight(&style);
  ImVec4* c = style.Colors;
  c[ImGuiCol_WindowBg] = FromRgba(kLightPalette.background);
  c[ImGuiCol_ChildBg] = FromRgba(kLightPalette.background);
  c[ImGuiCol_PopupBg] = ImVec4(0.99f, 0.99f, 0.99f, 0.98f);
  c[ImGuiCol_ButtonActive] = ImVec4(0.93f, 0.6f, 0.3f, 1.f);
  // A hovered tab is lighter grey, not orange: an orange one read as the
  // open tab.
  c[ImGuiCol_TabHovered] = ImVec4(0.86f, 0.88f, 0.92f, 1.f);
  c[ImGuiCol_TabActive] = ImVec4(0.96f, 0.72f, 0.45f, 1.f);
  c[ImGuiCol_CheckMark] = ImVec4(0.8f, 0.4f, 0.05f, 1.f);
  c[ImGuiCol_SliderGrab] = ImVec4(0.8f, 0.4f, 0.05f, 1.f);
  c[ImGuiCol_TextSelectedBg] = ImVec4(0.95f, 0.6f, 0.25f, 0.35f);
  c[ImGuiCol_Header] = FromRgba(kLightPalette.selected_row);
}

void Sizes(ImGuiStyle& style) {
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
}

void DarkColors(ImGuiStyle& style) {
  ImGui::StyleColorsDark(&style);
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
  c[ImGuiCol_Header] = FromRgba(kDarkPalette.selected_row);
  c[ImGuiCol_HeaderHovered] = ImVec4(0.30f, 0.34f, 0.42f, 1.f);
  c[ImGuiCol_HeaderActive] = ImVec4(0.35f, 0.39f, 0.48f, 1.f);
  c[ImGuiCol_Tab] = ImVec4(0.16f, 0.17f, 0.21f, 1.f);
  c[ImGuiCol_TabHovered] = ImVec4(0.27f, 0.29f, 0.36f, 1.f);  // grey, as LightColors says why
  c[ImGuiCol_TabActive] = ImVec4(0.75f, 0.42f, 0.14f, 1.f);
  c[ImGuiCol_CheckMark] = ImVec4(0.95f, 0.62f, 0.25f, 1.f);
  c[ImGuiCol_SliderGrab] = ImVec4(0.95f, 0.62f, 0.25f, 1.f);
  c[ImGuiCol_TableHeaderBg] = ImVec4(0.16f, 0.17f, 0.21f, 1.f);
  c[ImGuiCol_TableRowBgAlt] = ImVec4(1.f, 1.f, 1.f, 0.03f);
  c[ImGuiCol_TextSelectedBg] = ImVec4(0.85f, 0.50f, 0.20f, 0.35f);
}

}  // namespace

const Palette& CurrentPalette() { return *g_palette; }

Fonts ApplyTheme(float content_scale, bool light) {
  if (content_scale < 0.5f || content_scale > 4.f) content_scale = 1.f;
  ImGuiStyle& style = ImGui::GetStyle();
  style = ImGuiStyle();
  g_palette = light ? &kLightPalette : &kDarkPalette;
  if (light) {
    LightColors(style);
  } else {
    DarkColors(style);
  }
  Sizes(style);
  style.ScaleAllSizes(content_scale);

  static const char* const kSans[] = {
      "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "/usr/share/fonts/TTF/DejaVuSans.ttf",
      "/usr/share/fonts/dejavu/DejaVuSans.ttf", "/System/Library/Fonts/SFNS.ttf"};
  static const char* const kMono[] = {"/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf",
                                      "/usr/share/fonts/TTF/DejaVuSansMono.ttf",
                                      "/usr/share/fonts/dejavu/DejaVuSansMono.ttf"};
  ImGui::GetIO().Fonts->Clear();  // a second call replaces the fonts, it does not add more
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
