// Look of the window: a dark or light theme and fonts, scaled for HiDPI.
// Call ApplyTheme after ImGui::CreateContext() and before the first frame,
// or between frames to switch (then rebuild the font texture). UI thread.
#pragma once

#include <imgui.h>

#include "ui/frame_colors.h"

namespace kiln::ui {

// Colours the views draw with besides ImGui's style, so one switch changes
// all of them. Frame-type colours (frame_colors.h) are the same in both
// themes: they carry meaning and the legend names them.
struct Palette {
  Rgba background;       // window and flame graph background
  Rgba plot_background;  // the timeline's plot area
  Rgba plot_tick;        // time axis ticks
  Rgba plot_label_box;   // behind text drawn on the plot (with alpha)
  Rgba contrast;         // outlines and hover lines: white on dark, black on light (opaque)
  Rgba shade;            // outside the selected range (with alpha)
  Rgba total_bar;        // Top functions' total column
  Rgba weight_bar;       // Executables' weight column
  Rgba selected_row;     // a selected row or item (ImGui's Header colour, opaque)
  ImVec4 error_text, warning_text, info_text, ok_text, muted_text, accent_text, live_text;
  ImVec4 alarm_button, alarm_button_hovered;  // the "N rejected" badge
};
// The palette of the theme applied last (dark before any ApplyTheme).
const Palette& CurrentPalette();
// `color` with its alpha replaced.
constexpr Rgba WithAlpha(Rgba color, uint8_t alpha) { return (color & 0x00ffffffu) | (Rgba{alpha} << 24); }

struct Fonts {
  ImFont* regular = nullptr;  // DejaVu Sans when installed, else ImGui's default
  ImFont* mono = nullptr;     // DejaVu Sans Mono when installed, else `regular`
  bool system_font = false;   // true when a TTF from the system was loaded
};

// `content_scale` is the monitor's content scale (1 on classic displays,
// 2 on most HiDPI ones): fonts are rasterized at that size and the style's
// paddings scaled by it.
// `light` picks the light theme. Resets the whole style first, so calling
// it again (a new scale or theme) does not compound sizes.
Fonts ApplyTheme(float content_scale, bool light = false);

}  // namespace kiln::ui
