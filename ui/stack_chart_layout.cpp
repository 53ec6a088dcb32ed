#include "ui/stack_chart_layout.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <iterator>

#include "storage/model/sample_type.h"

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
    // Rows never overlap: a box of the samples before that reaches past
    // this sample's time (an off-CPU interval longer than the gap to the
    // next sample) is cut where this one begins, at every depth this
    // sample does not continue, so each sample keeps its own time.
    for (size_t d = common; d < out.depths.size(); ++d) {
      std::vector<ChartBox>& row = out.depths[d];
      if (!row.empty() && row.back().end_ns > s.time_ns) row.back().end_ns = std::max(row.back().start_ns, s.time_ns);
    }
    for (size_t d = common; d < frames.size(); ++d) {
      out.depths[d].push_back({s.time_ns, end, frames[d], static_cast<uint32_t>(i), 1});
    }
    if (first || s.time_ns < out.start_ns) out.start_ns = s.time_ns;
    out.end_ns = first ? end : std::max(out.end_ns, end);
    first = false;
    previous = &frames;
    previous_end = contiguous ? std::max(previous_end, end) : end;
  }
  for (std::vector<ChartBox>& row : out.depths) {
    for (size_t i = row.size(); i-- > 0;) {
      const bool same = i + 1 < row.size() && row[i + 1].function == row[i].function;
      row[i].same_until = same ? row[i + 1].same_until : static_cast<uint32_t>(i);
    }
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
      // The longest of at most kLookedAt boxes spread over the run: a run
      // under one pixel may hold a million boxes, and looking at them all
      // would cost what the data does again.
      constexpr ptrdiff_t kLookedAt = 16;
      const ptrdiff_t n = run_end - it;
      const ptrdiff_t stride = std::max<ptrdiff_t>(1, n / kLookedAt);
      auto longest = it;
      for (auto b = it; b < run_end; b += std::min(stride, run_end - b)) {
        if (b->end_ns - b->start_ns > longest->end_ns - longest->start_ns) longest = b;
      }
      const bool mixed = it->same_until < static_cast<uint32_t>(run_end - row.begin() - 1);
      const uint32_t index_of_longest = static_cast<uint32_t>(longest - row.begin());
      ChartRect* before = out.empty() ? nullptr : &out.back();
      if (!mixed && before != nullptr && before->depth == d && before->merged && !before->mixed &&
          row[before->box].function == it->function && before->x1 >= c0 - 0.5f) {
        before->x1 = std::min(c1, width);  // the same function's run goes on
      } else {
        out.push_back({c0, std::min(c1, width), static_cast<uint32_t>(d), index_of_longest, true, mixed});
      }
      it = run_end;
    }
  }
  return out;
}

int ChartBoxAt(const StackChartLayout& layout, int64_t time_ns, int depth, int64_t slack_ns) {
  if (depth < 0 || static_cast<size_t>(depth) >= layout.depths.size()) return -1;
  const std::vector<ChartBox>& row = layout.depths[depth];
  auto it = std::partition_point(row.begin(), row.end(), [&](const ChartBox& b) { return b.end_ns <= time_ns; });
  if (it != row.end() && it->start_ns <= time_ns) return static_cast<int>(it - row.begin());
  // In a gap: the box after it or the one before it, whichever is nearer.
  int64_t best = slack_ns;
  int found = -1;
  if (it != row.end() && it->start_ns - time_ns <= best) {
    best = it->start_ns - time_ns;
    found = static_cast<int>(it - row.begin());
  }
  if (it != row.begin() && time_ns - std::prev(it)->end_ns < best + (found < 0 ? 1 : 0)) {
    found = static_cast<int>(std::prev(it) - row.begin());
  }
  return found;
}

std::string ChartTickLabel(int64_t offset_ns, int64_t step_ns) {
  if (step_ns >= 1'000'000'000) return "+" + storage::FormatDuration(offset_ns);
  int decimals = 0;
  for (int64_t s = step_ns; s < 1'000'000'000; s *= 10) ++decimals;
  char buf[48];
  std::snprintf(buf, sizeof buf, "+%.*f s", decimals, static_cast<double>(offset_ns) / 1e9);
  return buf;
}

}  // namespace kiln::ui
