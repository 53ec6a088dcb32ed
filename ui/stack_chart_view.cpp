#include "ui/stack_chart_view.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "storage/model/sample_type.h"
#include "storage/store.h"

#include "ui/flame_search.h"
#include "ui/format.h"
#include "ui/stack_chart_data.h"
#include "ui/theme.h"
#include "ui/timeline_math.h"
#include "ui/widgets.h"

namespace kiln::ui {
namespace {

constexpr const char* kId = "stackchart";
constexpr float kMinLabelWidth = 36.f;
constexpr float kDimAmount = 0.7f;
constexpr int kTooltipFrames = 16;
// The deepest zoom: 100 ns a pixel (a 1 kHz sample is 10,000 px wide).
constexpr double kMinNsPerPx = 100;

// The worker's part: the selection's samples again, each with its own
// time (the shared slice sums them per stack), for the chosen thread.
std::shared_ptr<const void> BuildStackChart(const storage::Store& store, const AnalysisSnapshot& snapshot,
                                            const std::string& inputs) {
  storage::Query q = snapshot.request.query;
  q.keep_samples = true;
  auto slice = store.Run(q);
  if (!slice.ok()) return nullptr;
  const std::string thread = inputs.substr(inputs.find('=') + 1);
  const int64_t period = storage::PeriodNs((*slice)->sample_type);
  return std::make_shared<const StackChartData>(
      StackChartDataOf(*std::move(slice), snapshot.request.tree_options, thread, period));
}

// The index of the last sample of `box` at or before `time_ns` (its first
// when the time is before them all).
uint32_t SampleAt(const StackChartData& data, const ChartBox& box, int64_t time_ns) {
  const auto begin = data.samples.begin() + box.first_sample;
  const auto end = begin + box.samples;
  auto it = std::partition_point(begin, end, [&](const ChartSample& s) { return s.time_ns <= time_ns; });
  if (it != begin) --it;
  return static_cast<uint32_t>(it - data.samples.begin());
}

}  // namespace

View::Product StackChartView::OwnProduct() const {
  // A second scan of the selection (with every sample's time): only while
  // the chart is on screen.
  return {.inputs = [](const SessionState& session) { return "thread=" + session.ViewArg(kId); },
          .build = &BuildStackChart,
          .base = ViewBase::kStacks,
          .only_while_shown = true};
}

std::vector<View::Flag> StackChartView::Flags() const {
  // PID/TID as the thread picker keys threads: digits, either side may be
  // empty (a sender that names no thread), not both.
  auto encode = [](const std::vector<std::string>& values, std::string* error) -> std::string {
    const std::string& v = values.back();
    const size_t slash = v.find('/');
    const bool digits = v.find_first_not_of("0123456789/") == std::string::npos;
    if (slash == std::string::npos || v.find('/', slash + 1) != std::string::npos || !digits || v == "/") {
      *error = "--chart-thread wants PID/TID (digits, e.g. 1234/1240), got \"" + v + "\"";
      return "";
    }
    return v;
  };
  return {{.name = "--chart-thread",
           .help = "The Stack Chart's thread, as PID/TID (default: the heaviest in the range)",
           .key = kId,
           .encode = encode}};
}

void StackChartView::Draw(const ViewContext& context) {
  settled_ = false;
  const AnalysisSnapshot* a = context.analysis;
  const auto data = a ? a->ViewResult<StackChartData>(std::string(Id())) : nullptr;
  if (!data) {
    DrawLoadingOrError(context);
    return;
  }
  if (data.get() != seen_) {
    seen_ = data.get();
    colors_.clear();
    if (data->functions) {
      colors_.reserve(data->functions->size());
      for (size_t f = 0; f < data->functions->size(); ++f) {
        const storage::StackFunction& fn = (*data->functions)[static_cast<uint32_t>(f)];
        colors_.push_back(NodeColor(storage::NodeKind::kFrame, fn.type, fn.name));
      }
    }
    searched_ = "\x01";  // matched again below
  }
  DrawToolbar(context, *data);
  if (data->samples.empty()) {
    ImGui::Spacing();
    ImGui::TextDisabled(data->threads.empty() ? "No sample in this range has a time of its own to draw."
                                              : "The transforms leave none of this thread's samples.");
    settled_ = !context.computing;
    return;
  }
  DrawChart(context, *data);
  menu_.Draw(context.session, context.function_actions);
  settled_ = !context.computing;
}

void StackChartView::DrawToolbar(const ViewContext& context, const StackChartData& data) {
  SessionState* session = context.session;
  int64_t total = 0;
  for (const ChartThread& t : data.threads) total += t.weight;
  auto shown = std::find_if(data.threads.begin(), data.threads.end(),
                            [&](const ChartThread& t) { return t.key == data.thread; });
  auto entry = [&](const ChartThread& t) {
    return t.label + "  " + FormatPercent(total > 0 ? static_cast<double>(t.weight) / total : 0) + "##" + t.key;
  };
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Thread");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(std::min(ImGui::GetContentRegionAvail().x * 0.5f, 34.f * ImGui::GetFontSize()));
  if (ImGui::BeginCombo("##thread", shown == data.threads.end() ? "none" : entry(*shown).c_str())) {
    for (const ChartThread& t : data.threads) {
      if (ImGui::Selectable(entry(t).c_str(), t.key == data.thread) && session) {
        session->view_args[kId] = t.key;
        zoomed_ = false;
      }
    }
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  std::string facts = std::to_string(data.samples.size()) + " samples";
  switch (data.durations) {
    case StackChartData::Durations::kPeriod:
      facts += ", each drawn over its " + FormatDuration(data.duration_ns) + " sampling period";
      break;
    case StackChartData::Durations::kSpacing:
      facts += ", each drawn over " + FormatDuration(data.duration_ns) +
               " (the sender did not say its period: the samples' median spacing)";
      break;
    case StackChartData::Durations::kBlocked:
      facts += ", each drawn over the time it was blocked";
      break;
  }
  ImGui::TextDisabled("%s", facts.c_str());
  if (data.transformed_away > 0 || data.untimed_events > 0) {
    std::string left_out;
    if (data.transformed_away > 0) left_out += std::to_string(data.transformed_away) + " left out by the transforms";
    if (data.untimed_events > 0) {
      left_out += (left_out.empty() ? "" : "; ") + std::to_string(data.untimed_events) +
                  " in the range have no time of their own (summarized) and are not drawn";
    }
    ImGui::SameLine();
    ImGui::TextDisabled("(%s)", left_out.c_str());
  }
  // A thread chosen (--chart-thread, or the picker before the range moved)
  // that has no sample here: say so, rather than show another silently.
  if (session && !session->ViewArg(kId).empty() && session->ViewArg(kId) != data.thread) {
    ImGui::TextColored(CurrentPalette().warning_text, "Thread %s has no samples in this range: showing the heaviest.",
                       session->ViewArg(kId).c_str());
  }
  ImGui::TextDisabled("Wheel: zoom  drag, Left/Right: pan  +/-: zoom  0 or double-click: all  click a box: select its function");
}

void StackChartView::DrawChart(const ViewContext& context, const StackChartData& data) {
  const StackChartLayout& layout = data.layout;
  SessionState* session = context.session;
  const storage::FunctionTable& functions = *data.functions;
  const std::string& search = session ? session->search_text : std::string();
  if (search != searched_) {
    searched_ = search;
    matches_.assign(functions.size(), 0);
    for (size_t f = 0; f < functions.size(); ++f) {
      matches_[f] = LabelMatches(functions[static_cast<uint32_t>(f)].name, search) ? 1 : 0;
    }
  }
  const bool searching = !search.empty();

  const float row_h = ImGui::GetTextLineHeight() + 4.f;
  const float axis_h = ImGui::GetTextLineHeightWithSpacing();
  const float width = std::max(ImGui::GetContentRegionAvail().x - ImGui::GetStyle().ScrollbarSize, 50.f);
  const int64_t span = std::max<int64_t>(layout.end_ns - layout.start_ns, 1);
  const double fit = static_cast<double>(span) / width;
  if (!zoomed_ || ns_per_px_ <= 0) {
    view_start_ns_ = layout.start_ns;
    ns_per_px_ = fit;
  }
  auto clamp_view = [&] {
    ns_per_px_ = std::clamp(ns_per_px_, std::min(kMinNsPerPx, fit), fit);
    const int64_t shown = static_cast<int64_t>(ns_per_px_ * width);
    view_start_ns_ = std::clamp(view_start_ns_, layout.start_ns, std::max(layout.start_ns, layout.end_ns - shown));
  };
  auto zoom_at = [&](float x, double factor) {
    const double t = static_cast<double>(view_start_ns_) + x * ns_per_px_;
    ns_per_px_ *= factor;
    clamp_view();
    view_start_ns_ = static_cast<int64_t>(t - x * ns_per_px_);
    clamp_view();
    zoomed_ = ns_per_px_ < fit;
  };

  // The time axis: offsets from the range's first sample.
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 axis_origin = ImGui::GetCursorScreenPos();
  ImGui::Dummy(ImVec2(width, axis_h));
  const int64_t step = TickStepAtLeast(ns_per_px_ * 110.0);
  const ImU32 tick_color = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  for (int64_t t = (view_start_ns_ - layout.start_ns) / step * step;
       static_cast<double>(t - (view_start_ns_ - layout.start_ns)) < width * ns_per_px_; t += step) {
    const float x = axis_origin.x + static_cast<float>((t - (view_start_ns_ - layout.start_ns)) / ns_per_px_);
    if (x < axis_origin.x) continue;
    dl->AddLine(ImVec2(x, axis_origin.y + axis_h - 4.f), ImVec2(x, axis_origin.y + axis_h), tick_color);
    const std::string label = t == 0 ? FormatClock(layout.start_ns, true) : ChartTickLabel(t, step);
    dl->AddText(ImVec2(x + 3.f, axis_origin.y), tick_color, label.c_str());
  }

  // The rows, in a child that scrolls vertically (deep stacks).
  ImGui::BeginChild("##stackchart", ImVec2(0, 0), false, ImGuiWindowFlags_AlwaysVerticalScrollbar);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float height = std::max(static_cast<float>(layout.depths.size()) * row_h, ImGui::GetContentRegionAvail().y);
  ImGui::InvisibleButton("##chart", ImVec2(width, std::max(height, 1.f)),
                         ImGuiButtonFlags_MouseButtonLeft | ImGuiButtonFlags_MouseButtonRight);
  const bool hovered = ImGui::IsItemHovered();
  const ImGuiIO& io = ImGui::GetIO();
  const float mouse_x = io.MousePos.x - origin.x;

  // Navigation: wheel, drag and keys.
  if (hovered && io.MouseWheel != 0.f) zoom_at(mouse_x, std::pow(0.8, io.MouseWheel));
  if (ImGui::IsItemActivated() && ImGui::IsMouseDown(ImGuiMouseButton_Left)) {
    dragging_ = true;
    drag_from_x_ = io.MousePos.x;
    drag_from_start_ = view_start_ns_;
  }
  bool dragged = false;
  if (dragging_) {
    const float dx = io.MousePos.x - drag_from_x_;
    dragged = std::abs(dx) > 3.f;
    if (dragged) {
      view_start_ns_ = drag_from_start_ - static_cast<int64_t>(dx * ns_per_px_);
      clamp_view();
      zoomed_ = zoomed_ || ns_per_px_ < fit;
    }
    if (!ImGui::IsMouseDown(ImGuiMouseButton_Left)) dragging_ = false;
  }
  if (!io.WantTextInput) {  // the keys work wherever the pointer is, as the flamegraph's
    const int64_t pan = static_cast<int64_t>(width * ns_per_px_ / 8);
    auto pressed = [](ImGuiKey key) { return ImGui::IsKeyPressed(ImGui::GetKeyIndex(key), true); };
    if (pressed(ImGuiKey_LeftArrow)) view_start_ns_ -= pan;
    if (pressed(ImGuiKey_RightArrow)) view_start_ns_ += pan;
    if (pressed(ImGuiKey_Home)) zoomed_ = false;
    // Printable keys arrive as characters (the same on every layout).
    for (int i = 0; i < io.InputQueueCharacters.Size; ++i) {
      const ImWchar c = io.InputQueueCharacters[i];
      if (c == '+' || c == '=') zoom_at(width / 2, 0.5);
      if (c == '-') zoom_at(width / 2, 2.0);
      if (c == '0') zoomed_ = false;
    }
    clamp_view();
  }

  // What this frame draws: at most a rect per pixel column and row, of the
  // rows the child shows (its draw list and clip rect, not the window's).
  dl = ImGui::GetWindowDrawList();
  const ImVec2 clip_min = dl->GetClipRectMin(), clip_max = dl->GetClipRectMax();
  const FontAdvance advance;
  const float ellipsis_w = advance.Ellipsis();
  const float text_dy = (row_h - advance.size) * 0.5f - 0.5f;
  const Rgba background = CurrentPalette().background;
  for (const ChartRect& r : VisibleChartRects(layout, view_start_ns_, ns_per_px_, width)) {
    const float y0 = origin.y + r.depth * row_h;
    if (y0 + row_h < clip_min.y || y0 > clip_max.y) continue;
    const ChartBox& box = layout.depths[r.depth][r.box];
    Rgba fill = box.function < colors_.size() ? colors_[box.function] : background;
    if (searching && !(box.function < matches_.size() && matches_[box.function])) {
      fill = BlendTowards(fill, background, kDimAmount);
    }
    const float x0 = origin.x + r.x0;
    const float x1 = origin.x + std::max(r.x1 - (r.x1 - r.x0 > 3.f ? 1.f : 0.f), r.x0 + 1.f);
    dl->AddRectFilled(ImVec2(x0, y0), ImVec2(x1, y0 + row_h - 1.f), fill);
    if (r.mixed || r.x1 - r.x0 < kMinLabelWidth) continue;
    const std::string& name = functions[box.function].name;
    const std::string shown = FitLabel(name, FunctionKeepFrom(name), r.x1 - r.x0 - 8.f, ellipsis_w, advance);
    if (!shown.empty()) {
      dl->AddText(advance.font, advance.size, ImVec2(x0 + 4.f, y0 + text_dy), TextColorOn(fill), shown.data(),
                  shown.data() + shown.size());
    }
  }

  // The box under the mouse.
  const int depth = hovered ? static_cast<int>((io.MousePos.y - origin.y) / row_h) : -1;
  const int64_t time_ns = view_start_ns_ + static_cast<int64_t>(mouse_x * ns_per_px_);
  const int index = hovered ? ChartBoxAt(layout, time_ns, depth, static_cast<int64_t>(2 * ns_per_px_)) : -1;
  if (index >= 0 && !dragging_) {
    const ChartBox& box = layout.depths[depth][index];
    const storage::StackFunction& fn = functions[box.function];
    const uint32_t s = SampleAt(data, box, time_ns);
    const ChartSample& sample = data.samples[s];
    const storage::SampleType& type = context.analysis->request.query.sample_type;
    std::string stack;
    const std::vector<uint32_t>& frames = data.stacks[sample.stack];
    for (size_t i = frames.size(), n = 0; i-- > 0 && n < kTooltipFrames; ++n) {
      stack += "\n  " + functions[frames[i]].name;
    }
    if (frames.size() > kTooltipFrames) stack += "\n  ... " + std::to_string(frames.size() - kTooltipFrames) + " more";
    if (s < data.span_of.size() && data.span_of[s] != 0) {
      const storage::SpanIdentity& span = data.spans[data.span_of[s]];
      stack += "\n\nIn span " + span.span + " of trace " + span.trace;
    }
    ImGui::SetTooltip(
        "%s  (%s)\n%s for %s, %u samples\n\nThe sample at %s, weighing %s; its stack, innermost first:%s", fn.name.c_str(),
        std::string(FrameTypeDisplayName(fn.type)).c_str(), FormatClock(box.start_ns, true).c_str(),
        FormatDuration(box.end_ns - box.start_ns).c_str(), box.samples, FormatClock(sample.time_ns, true).c_str(),
        FormatValue(type, data.values[s]).c_str(), stack.c_str());
    if (ImGui::IsItemDeactivated() && !dragged && session) {
      SelectFunction(session, fn.name, context.function_actions);  // every view follows
    }
    if (ImGui::IsItemClicked(ImGuiMouseButton_Right)) {
      std::vector<std::string> path;
      for (int d = 0; d <= depth && d < static_cast<int>(frames.size()); ++d) path.push_back(functions[frames[d]].name);
      menu_.Open({storage::NodeKind::kFrame, fn.name, fn.executable, std::move(path),
                  fn.type == storage::FrameType::kKernel});
    }
  } else if (hovered && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) {
    zoomed_ = false;
  } else if (hovered && ImGui::IsItemDeactivated() && !dragged && session) {
    SelectFunction(session, "", context.function_actions);  // a click on empty space: nothing selected
  }
  ImGui::EndChild();
}

}  // namespace kiln::ui
