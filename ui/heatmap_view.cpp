#include "ui/heatmap_view.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "storage/model/sample_type.h"

#include "ui/format.h"
#include "ui/frame_colors.h"
#include "ui/theme.h"
#include "ui/widgets.h"

namespace kiln::ui {
namespace {

// What the worker builds for this view: the timeline window's weight per
// slice of the grid, bucket Bucket(column, row).
struct HeatmapResult {
  HeatmapGrid grid;
  int64_t period_ns = 0;  // the sample type's sampling period: slices are never shorter
  storage::Timeline timeline;
};

std::shared_ptr<const void> BuildHeatmap(const storage::Store& store, const AnalysisSnapshot& snapshot,
                                         const std::string&) {
  const int64_t period = snapshot.slice ? storage::PeriodNs(snapshot.slice->sample_type) : 0;
  const HeatmapGrid grid = HeatmapGridFor(snapshot.request.timeline_window, period);
  if (grid.columns <= 0) return nullptr;
  storage::Query q = snapshot.request.query;
  q.from_ns = grid.Span().from_ns;
  q.to_ns = grid.Span().to_ns;
  // The span is a whole number of slices: each bucket is one slice.
  auto t = store.RunTimeline(q, grid.columns * grid.rows);
  if (!t.ok()) return nullptr;
  return std::make_shared<const HeatmapResult>(HeatmapResult{grid, period, *std::move(t)});
}

}  // namespace

View::Product HeatmapView::OwnProduct() const {
  // A scan of the whole window: only while FlameScope is on screen, and
  // kept while only the selection moves (a drag on the map selects).
  return {.inputs = [](const SessionState&) { return std::string("window"); },
          .build = &BuildHeatmap,
          .base = ViewBase::kWindow,
          .only_while_shown = true};
}

void HeatmapView::Draw(const ViewContext& context) {
  settled_ = false;
  SessionState* session = context.session;
  const AnalysisSnapshot* a = context.analysis;
  const auto result = a ? a->ViewResult<HeatmapResult>(std::string(Id())) : nullptr;
  if (!result) {
    DrawLoadingOrError(context);
    return;
  }
  const HeatmapGrid& grid = result->grid;
  const storage::Timeline& t = result->timeline;
  if (grid.columns <= 0 || t.weights.size() != static_cast<size_t>(grid.columns) * grid.rows) {
    DrawLoadingOrError(context);
    return;
  }
  const storage::SampleType& type = a->request.query.sample_type;
  // The row height, and why: finer than the sampling period would only
  // show which rows the samples' phase falls in.
  const int64_t period = result->period_ns;
  const std::string why = period > 0 ? "never shorter than the " + FormatDuration(period) + " sampling period"
                                     : "the sender did not say its sampling period";
  ImGui::TextDisabled("Columns of %s, rows of %s (%s), top to bottom. Drag from one cell to another to select those moments.",
                      FormatDuration(grid.column_ns).c_str(), FormatDuration(grid.SliceNs()).c_str(), why.c_str());
  if (session) {
    ImGui::SameLine();
    ImGui::BeginDisabled(session->selection.Empty());
    if (ImGui::Button("Use selection as baseline")) {
      session->baseline = {};
      session->baseline.kind = SessionState::Baseline::Kind::kRange;
      session->baseline.range = session->selection;
      session->selection = {};
    }
    ImGui::EndDisabled();
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) {
      ImGui::SetTooltip("Then select another area: the Flamegraph and Top functions show the difference");
    }
    if (session->baseline.kind == SessionState::Baseline::Kind::kRange) {
      ImGui::SameLine();
      ImGui::TextDisabled("baseline %s - %s", FormatClock(session->baseline.range.from_ns, true).c_str(),
                          FormatClock(session->baseline.range.to_ns, true).c_str());
    }
  }
  int64_t peak = 1;
  for (int64_t w : t.weights) peak = std::max(peak, w);

  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float label_h = ImGui::GetTextLineHeightWithSpacing();
  const float width = std::max(avail.x, 1.f), height = std::max(avail.y - label_h, 1.f);
  const float cw = width / grid.columns, ch = height / grid.rows;
  ImGui::InvisibleButton("##heatmap", ImVec2(width, height));
  const bool hovered = ImGui::IsItemHovered();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const Rgba background = CurrentPalette().background;
  const Rgba hot = FrameTypeColor(storage::FrameType::kNative);
  auto cell_at = [&](ImVec2 p, int* column, int* row) {
    *column = std::clamp(static_cast<int>((p.x - origin.x) / cw), 0, grid.columns - 1);
    *row = std::clamp(static_cast<int>((p.y - origin.y) / ch), 0, grid.rows - 1);
  };
  // The pending drag, or the session's selection, highlighted.
  TimeRange highlight = session ? session->selection : TimeRange{};
  int hover_column = 0, hover_row = 0;
  cell_at(ImGui::GetMousePos(), &hover_column, &hover_row);
  if (dragging_) highlight = HeatmapSelection(grid, drag_column_, drag_row_, hover_column, hover_row);
  for (int c = 0; c < grid.columns; ++c) {
    for (int r = 0; r < grid.rows; ++r) {
      const int64_t w = t.weights[grid.Bucket(c, r)];
      // Square root: a few hot slices must not wash out the pattern.
      const float heat = w > 0 ? 0.12f + 0.88f * std::sqrt(static_cast<float>(w) / static_cast<float>(peak)) : 0.f;
      Rgba fill = BlendTowards(background, hot, heat);
      const TimeRange cell = grid.Cell(c, r);
      if (!highlight.Empty() && cell.from_ns < highlight.to_ns && cell.to_ns > highlight.from_ns) {
        fill = BlendTowards(fill, CurrentPalette().contrast, 0.35f);
      }
      const ImVec2 p0(origin.x + c * cw, origin.y + r * ch);
      dl->AddRectFilled(p0, ImVec2(p0.x + std::max(cw - (cw > 4 ? 1.f : 0.f), 1.f), p0.y + std::max(ch - 1.f, 1.f)),
                        fill);
    }
  }
  // Column labels: a clock time every few columns.
  const int label_every = std::max(1, static_cast<int>(std::ceil(ImGui::CalcTextSize("00:00:00").x * 1.5f / cw)));
  for (int c = 0; c < grid.columns; c += label_every) {
    const std::string text = FormatClock(grid.Cell(c, 0).from_ns);
    dl->AddText(ImVec2(origin.x + c * cw, origin.y + height + 2.f), ImGui::GetColorU32(ImGuiCol_TextDisabled),
                text.c_str());
  }
  if (hovered && ImGui::IsMouseClicked(ImGuiMouseButton_Left)) {
    dragging_ = true;
    drag_column_ = hover_column;
    drag_row_ = hover_row;
  }
  if (dragging_ && !ImGui::IsMouseDown(ImGuiMouseButton_Left)) {
    dragging_ = false;
    if (session) {
      session->selection = HeatmapSelection(grid, drag_column_, drag_row_, hover_column, hover_row);
      session->live = false;
    }
  }
  if (hovered) {
    const TimeRange cell = grid.Cell(hover_column, hover_row);
    ImGui::SetTooltip("%s - %s\n%s", FormatClock(cell.from_ns, true).c_str(), FormatClock(cell.to_ns, true).c_str(),
                      FormatValue(type, t.weights[grid.Bucket(hover_column, hover_row)]).c_str());
  }
  settled_ = !context.computing;
}

}  // namespace kiln::ui
