// Look of the window: dark theme and fonts, scaled for HiDPI. Call once
// after ImGui::CreateContext() and before the first frame (UI thread).
#pragma once

struct ImFont;

namespace kiln::ui {

struct Fonts {
  ImFont* regular = nullptr;  // DejaVu Sans when installed, else ImGui's default
  ImFont* mono = nullptr;     // DejaVu Sans Mono when installed, else `regular`
  bool system_font = false;   // true when a TTF from the system was loaded
};

// `content_scale` is the monitor's content scale (1 on classic displays,
// 2 on most HiDPI ones): fonts are rasterized at that size and the style's
// paddings scaled by it.
Fonts ApplyTheme(float content_scale);

}  // namespace kiln::ui
