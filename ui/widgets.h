// Small drawing helpers shared by the views (ImGui only, UI thread only).
#pragma once

#include <string_view>

#include "ui/frame_colors.h"

namespace kiln::ui {

// A text-height square of `color`, as an item (use SameLine after it).
void ColorSwatch(Rgba color);

// A rotating arc the size of the text line, for "computing" states.
void Spinner(float radius = 0.f);

// A horizontal bar filling `fraction` of the current table cell / item
// width, with `text` drawn over it.
void InlineBar(double fraction, Rgba color, std::string_view text);

// What a view shows before its first data: the query's error in red when
// it failed, else a spinner and "Loading...".
void DrawLoadingOrError(const struct ViewContext& context);

// Text the user can select and copy (read-only input), for ids and commands.
void CopyableText(const char* id, const std::string& text);

}  // namespace kiln::ui
