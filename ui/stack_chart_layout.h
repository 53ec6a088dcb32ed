// Stack chart geometry (issue 31): one thread's samples along time, x is
// time and y is depth, as the Firefox Profiler's stack chart and Tracy's
// zones read. Pure functions with no ImGui dependency, tested from small
// timestamped fixtures.
//
// Two steps, as the flame graph's: LayoutStackChart merges consecutive
// samples' common frames into boxes once per selection (on the worker
// thread, O(samples x depth)); VisibleChartRects picks what one frame
// draws for a zoom and width, merging what falls under one pixel, so a
// million samples cost what the window's width does, not what the data
// does.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace kiln::ui {

// One sample of one thread.
struct ChartSample {
  int64_t time_ns = 0;
  // How long it stands for: the sampling period for an on-CPU sample, the
  // blocked time for an off-CPU one (drawn over its interval).
  int64_t duration_ns = 0;
  uint32_t stack = 0;  // index into the stacks LayoutStackChart takes
};

// A run of consecutive samples that share a frame at `depth` and every
// frame above it.
struct ChartBox {
  int64_t start_ns = 0;  // the first sample's time
  int64_t end_ns = 0;    // the last sample's time plus its duration
  uint32_t function = 0;  // the frame, as the stacks name it
  uint32_t first_sample = 0;  // samples [first_sample, first_sample + samples)
  uint32_t samples = 0;
  // The index of the last box of this row's run of consecutive boxes of
  // the same function (gaps between them allowed): what lets a row of
  // one function's short waits, narrower than pixels, draw as one
  // labelled rect while a row of alternating functions cannot.
  uint32_t same_until = 0;
  bool operator==(const ChartBox&) const = default;
};

struct StackChartLayout {
  std::vector<std::vector<ChartBox>> depths;  // boxes of depth d, ordered by time, not overlapping
  int64_t start_ns = 0, end_ns = 0;           // over every box (0, 0 when empty)
};

// `samples` ordered by time (ties keep their order); `stacks[i]` the
// frames of stack i, root first. A sample continues the boxes of the one
// before it when it starts no later than half its own duration after that
// one ended (sampling jitter; a longer gap is time the thread was not
// sampled, and breaks every box) and its frames agree from the root down.
StackChartLayout LayoutStackChart(std::span<const ChartSample> samples,
                                  const std::vector<std::vector<uint32_t>>& stacks);

// What one frame draws at one depth.
struct ChartRect {
  float x0 = 0, x1 = 0;  // pixels from the chart's left edge, clipped to [0, width]
  uint32_t depth = 0;
  uint32_t box = 0;  // index in depths[depth]: the box, or the longest of up to 16 spread over a merged run
  bool merged = false;  // several boxes narrower than a pixel, drawn as one
  bool mixed = false;   // ... of more than one function (no label names them)
};

// The rects of every depth for the time range starting at `view_start_ns`
// at `ns_per_px` across `width` pixels: a box at least `min_width` pixels
// wide is its own rect; runs of narrower ones are merged into rects of
// `min_width` (a pixel column each), so a row draws at most about
// width / min_width rects whatever the number of boxes. Neighbouring
// merged columns of one function's boxes become one rect.
std::vector<ChartRect> VisibleChartRects(const StackChartLayout& layout, int64_t view_start_ns, double ns_per_px,
                                         float width, float min_width = 1.0f);

// The box at `time_ns` in row `depth`, as an index in depths[depth], or -1;
// in a gap, the nearest box within `slack_ns` (a pixel or two: boxes
// narrower than the pointer's aim can still be hovered).
int ChartBoxAt(const StackChartLayout& layout, int64_t time_ns, int depth, int64_t slack_ns = 0);

// The time axis ticks by TickStepAtLeast (timeline_math.h). A tick's
// label: its offset from the range's start with as many digits as the
// spacing needs ("+5m 01s" for seconds apart, "+301.0245 s" for a tenth of
// a millisecond apart: neighbouring ticks never read alike).
std::string ChartTickLabel(int64_t offset_ns, int64_t step_ns);

}  // namespace kiln::ui
