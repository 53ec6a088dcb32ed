#include "ui/widgets.h"

#include <imgui.h>
#include <imgui_internal.h>  // ImTextCharFromUtf8

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>

#include "ui/format.h"
#include "ui/view.h"
#include "ui/theme.h"

namespace kiln::ui {

void ColorSwatch(Rgba color) {
  const float h = ImGui::GetTextLineHeight();
  const float box = h * 0.8f;
  const ImVec2 p = ImGui::GetCursorScreenPos();
  ImGui::GetWindowDrawList()->AddRectFilled(ImVec2(p.x, p.y + (h - box) * 0.5f),
                                            ImVec2(p.x + box, p.y + (h + box) * 0.5f), color, 2.f);
  ImGui::Dummy(ImVec2(box, h));
}

void Spinner(float radius) {
  const float h = ImGui::GetTextLineHeight();
  if (radius <= 0) radius = h * 0.4f;
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const ImVec2 c(p.x + radius + 1.f, p.y + h * 0.5f);
  const float t = static_cast<float>(ImGui::GetTime()) * 6.f;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->PathArcTo(c, radius, t, t + 4.2f, 16);
  dl->PathStroke(ImGui::GetColorU32(ImGuiCol_Text), 0, std::max(1.5f, radius * 0.3f));
  ImGui::Dummy(ImVec2(radius * 2.f + 2.f, h));
}

void DrawHatch(ImDrawList* dl, float x0, float y0, float x1, float y1, Rgba color, float spacing) {
  if (x1 <= x0 || y1 <= y0 || spacing <= 0) return;
  dl->PushClipRect(ImVec2(x0, y0), ImVec2(x1, y1), true);
  const float h = y1 - y0;
  // Lines rising to the right; the first starts left of the box so its
  // lower-left corner is covered too.
  for (float x = x0 - h; x < x1; x += spacing) dl->AddLine(ImVec2(x, y1), ImVec2(x + h, y0), color, 1.f);
  dl->PopClipRect();
}

void InlineBar(double fraction, Rgba color, std::string_view text) {
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const float w = ImGui::GetContentRegionAvail().x;
  const float h = ImGui::GetTextLineHeight();
  const float fill = static_cast<float>(std::clamp(fraction, 0.0, 1.0)) * w;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  if (fill > 0.5f) dl->AddRectFilled(p, ImVec2(p.x + fill, p.y + h), color, 2.f);
  ImGui::TextUnformatted(text.data(), text.data() + text.size());
}

void DrawLoadingOrError(const ViewContext& context) {
  if (context.analysis && !context.analysis->error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, CurrentPalette().error_text);
    ImGui::TextWrapped("The query failed: %s", context.analysis->error.c_str());
    ImGui::PopStyleColor();
    return;
  }
  Spinner();
  ImGui::SameLine();
  ImGui::TextDisabled("Loading...");
}

void CopyableText(const char* id, const std::string& text) {
  std::string copy = text;  // InputText wants a mutable buffer; ReadOnly keeps it unchanged
  ImGui::PushID(id);
  ImGui::SetNextItemWidth(-FLT_MIN);
  ImGui::InputText("##copy", copy.data(), copy.size() + 1, ImGuiInputTextFlags_ReadOnly);
  ImGui::PopID();
}

FontAdvance::FontAdvance()
    : font(ImGui::GetFont()), size(ImGui::GetFontSize()), scale(ImGui::GetFontSize() / ImGui::GetFont()->FontSize) {}

float FontAdvance::operator()(std::string_view character) const {
  unsigned int c = 0;
  ImTextCharFromUtf8(&c, character.data(), character.data() + character.size());
  return font->GetCharAdvance(static_cast<ImWchar>(c)) * scale;
}

float FontAdvance::Ellipsis() const { return font->CalcTextSizeA(size, FLT_MAX, 0, "...").x; }

std::string FitToWidth(std::string_view text, size_t keep_from, float width) {
  const FontAdvance advance;
  return FitLabel(text, keep_from, width, advance.Ellipsis(), advance);
}

void FittedCellText(std::string_view text, size_t keep_from) {
  const std::string shown = FitToWidth(text, keep_from, ImGui::GetContentRegionAvail().x);
  ImGui::TextUnformatted(shown.data(), shown.data() + shown.size());
  if (shown.size() != text.size() && ImGui::IsItemHovered()) {
    ImGui::SetTooltip("%.*s", static_cast<int>(text.size()), text.data());
  }
}

bool EscapeCloses() {
  return ImGui::IsWindowFocused(ImGuiFocusedFlags_RootAndChildWindows) &&
         ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false);
}

}  // namespace kiln::ui
