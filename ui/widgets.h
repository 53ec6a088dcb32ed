// Small drawing helpers shared by the views (ImGui only, UI thread only).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "ui/frame_colors.h"

struct ImFont;
struct ImDrawList;

namespace kiln::ui {

// A text-height square of `color`, as an item (use SameLine after it).
void ColorSwatch(Rgba color);

// A rotating arc the size of the text line, for "computing" states.
void Spinner(float radius = 0.f);

// A horizontal bar filling `fraction` of the current table cell / item
// width, with `text` drawn over it.
void InlineBar(double fraction, Rgba color, std::string_view text);

// Diagonal lines `spacing` apart over the rectangle (x0, y0)-(x1, y1),
// clipped to it: marks a region without hiding what is under it (a diff's
// new and gone boxes, the baseline on the timeline).
void DrawHatch(ImDrawList* dl, float x0, float y0, float x1, float y1, Rgba color, float spacing);

// What a view shows before its first data: the query's error in red when
// it failed, else a spinner and "Loading...".
void DrawLoadingOrError(const struct ViewContext& context);

// Text the user can select and copy (read-only input), for ids and commands.
void CopyableText(const char* id, const std::string& text);

// The width of one UTF-8 character in the current font at its current size,
// as EllipsisPrefix and FitLabel take it.
struct FontAdvance {
  FontAdvance();
  float operator()(std::string_view character) const;
  float Ellipsis() const;  // the width of "..."
  ImFont* font;
  float size, scale;
};

// `text` fitted to `width` in the current font by FitLabel (`keep_from`:
// FunctionKeepFrom or PathKeepFrom), for a cell or a box.
std::string FitToWidth(std::string_view text, size_t keep_from, float width);

// A table cell's text fitted to the column (its start, "...", its last
// component), with the whole text as a tooltip when it was cut.
void FittedCellText(std::string_view text, size_t keep_from);

// Inside a dialog's Begin/End: Esc was pressed while it had focus (every
// dialog closes on Esc, as its close button does).
bool EscapeCloses();

}  // namespace kiln::ui
