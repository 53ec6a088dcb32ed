#include "ui/timeline_bar.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>

#include "ui/format.h"
#include "ui/frame_colors.h"
#include "ui/theme.h"
#include "ui/widgets.h"

namespace kiln::ui {

void TimelineBar::Draw(SessionState& session, const AnalysisSnapshot* analysis, TimeRange limit,
                       float height) {
  const TimeRange window = session.window;
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  const float width = std::max(ImGui::GetContentRegionAvail().x, 10.f);
  const float axis_h = ImGui::GetTextLineHeight() + 2.f;
  const float plot_h = std::max(height - axis_h, 8.f);
  ImGui::InvisibleButton("##timeline", ImVec2(width, height));
  const bool hovered = ImGui::IsItemHovered();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->AddRectFilled(p0, ImVec2(p0.x + width, p0.y + plot_h), CurrentPalette().plot_background);

  // Bars: buckets of the newest timeline, placed by their own times so the
  // picture stays right while live follow slides the window ahead of it.
  const storage::Timeline* tl = analysis && analysis->timeline ? analysis->timeline.get() : nullptr;
  const Rgba bar =
      storage::ClassOfUnit(session.sample_type.unit) == storage::UnitClass::kTime ? PackRgba(0x4f, 0x86, 0xdc) : PackRgba(0xe8, 0x93, 0x3d);
  int64_t max_weight = 1;
  if (tl) {
    for (int64_t w : tl->weights) max_weight = std::max(max_weight, w);
    for (size_t i = 0; i < tl->weights.size(); ++i) {
      if (tl->weights[i] <= 0) continue;
      const int64_t t0 = tl->start_ns + static_cast<int64_t>(i) * tl->bucket_ns;
      float x0 = TimeToX(window, t0, p0.x, width);
      float x1 = TimeToX(window, t0 + tl->bucket_ns, p0.x, width);
      if (x1 < p0.x || x0 > p0.x + width) continue;
      x0 = std::max(x0, p0.x);
      x1 = std::min(std::max(x1 - 1.f, x0 + 1.f), p0.x + width);
      const float h = plot_h * static_cast<float>(tl->weights[i]) / static_cast<float>(max_weight);
      dl->AddRectFilled(ImVec2(x0, p0.y + plot_h - std::max(h, 1.f)), ImVec2(x1, p0.y + plot_h), bar);
    }
  }

  // Time axis.
  const int64_t step = TickStep(window.Span(), width, ImGui::CalcTextSize("00:00:00").x + 24.f);
  const Rgba tick = CurrentPalette().plot_tick;
  if (step > 0 && !window.Empty()) {
    for (int64_t t = (window.from_ns / step + 1) * step; t < window.to_ns; t += step) {
      const float x = TimeToX(window, t, p0.x, width);
      dl->AddLine(ImVec2(x, p0.y + plot_h), ImVec2(x, p0.y + plot_h + 4.f), tick);
      const std::string label = FormatClock(t, step < kNsPerSecond);
      const float tw = ImGui::CalcTextSize(label.c_str()).x;
      if (x - tw * 0.5f < p0.x || x + tw * 0.5f > p0.x + width) continue;
      dl->AddText(ImVec2(x - tw * 0.5f, p0.y + plot_h + 2.f), ImGui::GetColorU32(ImGuiCol_TextDisabled),
                  label.c_str());
    }
  }

  // Selection (committed, or the one being dragged).
  const ImVec2 mouse = ImGui::GetMousePos();
  if (ImGui::IsItemActivated()) {
    drag_start_x_ = mouse.x;
    dragging_ = true;
  }
  TimeRange shown = session.selection;
  if (dragging_) {
    const TimeRange pending = DragSelection(window, drag_start_x_, mouse.x, p0.x, width);
    if (!pending.Empty()) shown = pending;
    if (ImGui::IsItemDeactivated()) {
      dragging_ = false;
      if (!pending.Empty()) {
        session.selection = pending;
        session.live = false;
      } else {
        session.selection = {};  // a click clears the selection
      }
    }
  }
  if (!shown.Empty()) {
    const float x0 = std::max(TimeToX(window, shown.from_ns, p0.x, width), p0.x);
    const float x1 = std::min(TimeToX(window, shown.to_ns, p0.x, width), p0.x + width);
    const Rgba shade = CurrentPalette().shade;
    dl->AddRectFilled(p0, ImVec2(x0, p0.y + plot_h), shade);
    dl->AddRectFilled(ImVec2(x1, p0.y), ImVec2(p0.x + width, p0.y + plot_h), shade);
    dl->AddRect(ImVec2(x0, p0.y), ImVec2(x1, p0.y + plot_h), WithAlpha(CurrentPalette().contrast, 160));
  }

  // The diff's baseline, when it is a time range of this source: hatched
  // and named at its foot, over the shading (it lies outside the
  // selection, where the shading would hide it).
  if (const TimeRange base = session.BaselineRange(); !base.Empty()) {
    const float x0 = std::max(TimeToX(window, base.from_ns, p0.x, width), p0.x);
    const float x1 = std::min(TimeToX(window, base.to_ns, p0.x, width), p0.x + width);
    if (x1 > x0) {
      const Rgba tint = PackRgba(0x9a, 0x6c, 0xd8);  // neither the bars' blue/orange nor the diff's red/green
      dl->AddRectFilled(ImVec2(x0, p0.y), ImVec2(x1, p0.y + plot_h), WithAlpha(tint, 60));
      DrawHatch(dl, x0, p0.y, x1, p0.y + plot_h, WithAlpha(tint, 220), 7.f);
      const char* text = "baseline";
      const ImVec2 size = ImGui::CalcTextSize(text);
      if (x1 - x0 > size.x + 6.f) {
        const ImVec2 at(x0 + 3.f, p0.y + plot_h - size.y - 2.f);
        dl->AddRectFilled(ImVec2(at.x - 2.f, at.y), ImVec2(at.x + size.x + 2.f, at.y + size.y),
                          CurrentPalette().plot_label_box, 3.f);
        dl->AddText(at, ImGui::GetColorU32(ImGuiCol_Text), text);
      }
    }
  }

  // The range every view shows, in words, at the plot's top-left corner.
  {
    const TimeRange range = session.QueryRange();
    if (!range.Empty()) {
      const std::string text = (session.selection.Empty() ? "" : "Selected ") + FormatClock(range.from_ns) +
                               " - " + FormatClock(range.to_ns) + "  (" + FormatDuration(range.Span()) + ")";
      const ImVec2 size = ImGui::CalcTextSize(text.c_str());
      const ImVec2 at(p0.x + 6.f, p0.y + 3.f);
      dl->AddRectFilled(ImVec2(at.x - 3.f, at.y - 1.f), ImVec2(at.x + size.x + 3.f, at.y + size.y + 1.f),
                        CurrentPalette().plot_label_box, 3.f);
      dl->AddText(at, ImGui::GetColorU32(ImGuiCol_Text), text.c_str());
    }
  }

  if (hovered) {
    const int64_t t = XToTime(window, mouse.x, p0.x, width);
    dl->AddLine(ImVec2(mouse.x, p0.y), ImVec2(mouse.x, p0.y + plot_h), WithAlpha(CurrentPalette().contrast, 90));
    ImGui::BeginTooltip();
    ImGui::Text("%s", FormatDateTime(t).c_str());
    if (tl) {
      const int b = BucketAt(tl->start_ns, tl->bucket_ns, static_cast<int>(tl->weights.size()), t);
      if (b >= 0) {
        ImGui::Text("%s in %s", FormatValue(session.sample_type, tl->weights[b]).c_str(),
                    FormatDuration(tl->bucket_ns).c_str());
      }
    }
    if (!session.selection.Empty()) {
      ImGui::TextDisabled("Selected %s", FormatDuration(session.selection.Span()).c_str());
    }
    ImGui::TextDisabled("Drag to select, click to clear, wheel to zoom");
    ImGui::EndTooltip();
    const float wheel = ImGui::GetIO().MouseWheel;
    if (wheel != 0 && !window.Empty()) {
      session.window = ZoomRange(window, t, std::pow(0.8, wheel), limit);
      session.live = false;
    }
  }
}

}  // namespace kiln::ui
