#include "ui/stack_chart_layout.h"

#include <algorithm>
#include <cmath>

namespace kiln::ui {

StackChartLayout LayoutStackChart(std::span<const ChartSample> samples,
                                  const std::vector<std::vector<uint32_t>>& stacks) {
  static const std::vector<uint32_t> kNoFrames;
  StackChartLayout out;
  const std::vector<uint32_t>* previous = nullptr;
  int64_t previous_end = 0;
  bool first = true;
  for (size_t i = 0; i < samples.size(); ++i) {
    const ChartSample& s = samples[i];
    const std::vector<uint32_t>& frames = s.stack < stacks.size() ? stacks[s.stack] : kNoFrames;
    const int64_t duration = std::max<int64_t>(s.duration_ns, 0);
    const int64_t end = s.time_ns + duration;
    // Jitter within half a period continues the boxes; a longer gap is
    // time the thread was not sampled.
    const bool contiguous = previous != nullptr && s.time_ns - previous_end <= duration / 2;
    size_t common = 0;
    if (contiguous) {
      while (common < frames.size() && common < previous->size() && frames[common] == (*previous)[common]) ++common;
    }
    if (out.depths.size() < frames.size()) out.depths.resize(frames.size());
    for (size_t d = 0; d < common; ++d) {
      ChartBox& box = out.depths[d].back();  // the previous sample's box at this depth
      box.end_ns = std::max(box.end_ns, end);
      ++box.samples;
    }
    for (size_t d = common; d < frames.size(); ++d) {
      std::vector<ChartBox>& row = out.depths[d];
      // Rows never overlap: an off-CPU interval reaching past the next
      // sample's time is cut where the next box begins.
      const int64_t start = row.empty() ? s.time_ns : std::max(s.time_ns, row.back().end_ns);
      row.push_back({start, std::max(start, end), frames[d], static_cast<uint32_t>(i), 1});
    }
    if (first || s.time_ns < out.start_ns) out.start_ns = s.time_ns;
    out.end_ns = first ? end : std::max(out.end_ns, end);
    first = false;
    previous = &frames;
    previous_end = contiguous ? std::max(previous_end, end) : end;
  }
  return out;
}

std::vector<ChartRect> VisibleChartRects(const StackChartLayout& layout, int64_t view_start_ns, double ns_per_px,
                                         float width, float min_width) {
  std::vector<ChartRect> out;
  if (ns_per_px <= 0 || width <= 0 || min_width <= 0) return out;
  const auto px = [&](int64_t ns) { return static_cast<float>(static_cast<double>(ns - view_start_ns) / ns_per_px); };
  const int64_t view_end_ns = view_start_ns + static_cast<int64_t>(std::ceil(width * ns_per_px));
  for (size_t d = 0; d < layout.depths.size(); ++d) {
    const std::vector<ChartBox>& row = layout.depths[d];
    // Boxes of a row are ordered and do not overlap, so their ends are
    // ordered too: the first visible one by binary search.
    auto it = std::partition_point(row.begin(), row.end(),
                                   [&](const ChartBox& b) { return b.end_ns <= view_start_ns; });
    while (it != row.end() && it->start_ns < view_end_ns) {
      const float x0 = px(it->start_ns), x1 = px(it->end_ns);
      const uint32_t index = static_cast<uint32_t>(it - row.begin());
      if (x1 - x0 >= min_width) {
        out.push_back({std::max(x0, 0.0f), std::min(x1, width), static_cast<uint32_t>(d), index, false});
        ++it;
        continue;
      }
      // Narrower than min_width: every box starting in this pixel column
      // is drawn as one rect, named after the longest; the next box is
      // found by binary search, not by walking the ones in between.
      const float c0 = std::max(0.0f, std::floor(x0 / min_width) * min_width);
      const float c1 = c0 + min_width;
      const int64_t c1_ns = view_start_ns + static_cast<int64_t>(std::ceil(c1 * ns_per_px));
      auto run_end = std::partition_point(it, row.end(), [&](const ChartBox& b) { return b.start_ns < c1_ns; });
      if (run_end == it) run_end = it + 1;  // rounding: always move on
      auto longest = std::max_element(it, run_end, [](const ChartBox& a, const ChartBox& b) {
        return a.end_ns - a.start_ns < b.end_ns - b.start_ns;
      });
      out.push_back({c0, std::min(c1, width), static_cast<uint32_t>(d), static_cast<uint32_t>(longest - row.begin()),
                     run_end - it > 1});
      it = run_end;
    }
  }
  return out;
}

int ChartBoxAt(const StackChartLayout& layout, int64_t time_ns, int depth) {
  if (depth < 0 || static_cast<size_t>(depth) >= layout.depths.size()) return -1;
  const std::vector<ChartBox>& row = layout.depths[depth];
  auto it = std::partition_point(row.begin(), row.end(), [&](const ChartBox& b) { return b.end_ns <= time_ns; });
  if (it == row.end() || it->start_ns > time_ns) return -1;
  return static_cast<int>(it - row.begin());
}

}  // namespace kiln::ui
