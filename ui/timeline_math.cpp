#include "ui/timeline_math.h"

#include <algorithm>
#include <cmath>

namespace kiln::ui {

std::string_view TimePresetName(TimePreset preset) {
  switch (preset) {
    case TimePreset::kLast15m:
      return "Last 15m";
    case TimePreset::kLast1h:
      return "Last 1h";
    case TimePreset::kLast24h:
      return "Last 24h";
    case TimePreset::kAll:
      return "All";
  }
  return "?";
}

TimeRange PresetRange(TimePreset preset, int64_t now_ns, int64_t first_sample_ns, int64_t last_sample_ns) {
  constexpr int64_t kMinute = 60 * kNsPerSecond;
  switch (preset) {
    case TimePreset::kLast15m:
      return {now_ns - 15 * kMinute, now_ns};
    case TimePreset::kLast1h:
      return {now_ns - 60 * kMinute, now_ns};
    case TimePreset::kLast24h:
      return {now_ns - 24 * 60 * kMinute, now_ns};
    case TimePreset::kAll:
      break;
  }
  if (first_sample_ns == 0 && last_sample_ns == 0) return {now_ns - kNsPerSecond, now_ns};
  // The end is exclusive: one nanosecond past the newest sample.
  return {first_sample_ns, std::max(last_sample_ns + 1, first_sample_ns + kNsPerSecond)};
}

float TimeToX(TimeRange window, int64_t t_ns, float x0, float width) {
  if (window.Empty()) return x0;
  return x0 + static_cast<float>(static_cast<double>(t_ns - window.from_ns) /
                                 static_cast<double>(window.Span()) * width);
}

int64_t XToTime(TimeRange window, float x, float x0, float width) {
  if (width <= 0) return window.from_ns;
  return window.from_ns + static_cast<int64_t>(std::llround(static_cast<double>(x - x0) / width *
                                                            static_cast<double>(window.Span())));
}

TimeRange DragSelection(TimeRange window, float x_a, float x_b, float x0, float width, float min_px) {
  if (std::fabs(x_b - x_a) < min_px) return {};
  const float lo = std::clamp(std::min(x_a, x_b), x0, x0 + width);
  const float hi = std::clamp(std::max(x_a, x_b), x0, x0 + width);
  TimeRange r{XToTime(window, lo, x0, width), XToTime(window, hi, x0, width)};
  if (r.Empty()) return {};
  return r;
}

TimeRange ZoomRange(TimeRange window, int64_t anchor_ns, double factor, TimeRange limit,
                    int64_t min_span_ns) {
  if (window.Empty()) return window;
  double span = static_cast<double>(window.Span()) * factor;
  span = std::max(span, static_cast<double>(min_span_ns));
  if (!limit.Empty()) span = std::min(span, static_cast<double>(limit.Span()));
  const double frac = static_cast<double>(anchor_ns - window.from_ns) / window.Span();
  int64_t from = anchor_ns - static_cast<int64_t>(std::llround(frac * span));
  int64_t to = from + static_cast<int64_t>(std::llround(span));
  if (!limit.Empty()) {
    if (from < limit.from_ns) {
      to += limit.from_ns - from;
      from = limit.from_ns;
    }
    if (to > limit.to_ns) {
      from -= to - limit.to_ns;
      to = limit.to_ns;
    }
    from = std::max(from, limit.from_ns);
  }
  return {from, to};
}

int BucketAt(int64_t start_ns, int64_t bucket_ns, int count, int64_t t_ns) {
  if (bucket_ns <= 0 || t_ns < start_ns) return -1;
  const int64_t i = (t_ns - start_ns) / bucket_ns;
  return i < count ? static_cast<int>(i) : -1;
}

int64_t TickStepAtLeast(double min_ns) {
  // Below a second 1, 2 or 5 x 10^k ns; from a second on, what clocks
  // divide into (15 s, 30 s, 1 min, 5 min, ... a week).
  static constexpr int64_t kClockSteps[] = {kNsPerSecond,
                                            2 * kNsPerSecond,
                                            5 * kNsPerSecond,
                                            10 * kNsPerSecond,
                                            15 * kNsPerSecond,
                                            30 * kNsPerSecond,
                                            60 * kNsPerSecond,
                                            120 * kNsPerSecond,
                                            300 * kNsPerSecond,
                                            600 * kNsPerSecond,
                                            900 * kNsPerSecond,
                                            1800 * kNsPerSecond,
                                            3600 * kNsPerSecond,
                                            3 * 3600 * kNsPerSecond,
                                            6 * 3600 * kNsPerSecond,
                                            12 * 3600 * kNsPerSecond,
                                            24 * 3600 * kNsPerSecond,
                                            7 * 24 * 3600 * kNsPerSecond};
  for (int64_t step = 1; step < kNsPerSecond; step *= 10) {
    for (int64_t m : {1, 2, 5}) {
      if (static_cast<double>(step * m) >= min_ns) return step * m;
    }
  }
  for (int64_t step : kClockSteps) {
    if (static_cast<double>(step) >= min_ns) return step;
  }
  return kClockSteps[std::size(kClockSteps) - 1];
}

int64_t TickStep(int64_t span_ns, float width, float min_px) {
  if (width <= 0 || span_ns <= 0) return TickStepAtLeast(static_cast<double>(INT64_MAX));
  return TickStepAtLeast(static_cast<double>(span_ns) / width * min_px);
}

TimeRange HeatmapGrid::Cell(int column, int row) const {
  const int64_t from = start_ns + column * column_ns + row * SliceNs();
  return {from, row + 1 == rows ? start_ns + (column + 1) * column_ns : from + SliceNs()};
}

HeatmapGrid HeatmapGridFor(TimeRange window, int64_t period_ns, int max_rows, int max_columns) {
  HeatmapGrid g;
  g.rows = std::max(max_rows, 1);
  if (window.Empty()) return g;
  // Whole seconds per column, as few as fit.
  const int64_t span = window.Span();
  int64_t seconds = std::max<int64_t>(1, (span + static_cast<int64_t>(max_columns) * kNsPerSecond - 1) /
                                             (static_cast<int64_t>(max_columns) * kNsPerSecond));
  g.column_ns = seconds * kNsPerSecond;
  // Slices of at least a period: each then holds one sample of a busy
  // thread (or a whole number of them), not one or none by phase.
  if (period_ns > 0) g.rows = static_cast<int>(std::clamp<int64_t>(g.column_ns / period_ns, 1, g.rows));
  g.start_ns = window.from_ns - (((window.from_ns % g.column_ns) + g.column_ns) % g.column_ns);
  g.columns = static_cast<int>((window.to_ns - g.start_ns + g.column_ns - 1) / g.column_ns);
  return g;
}

TimeRange HeatmapSelection(const HeatmapGrid& grid, int column_a, int row_a, int column_b, int row_b) {
  TimeRange a = grid.Cell(column_a, row_a), b = grid.Cell(column_b, row_b);
  if (b.from_ns < a.from_ns) std::swap(a, b);
  return {a.from_ns, b.to_ns};
}

}  // namespace kiln::ui
