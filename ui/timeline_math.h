// Timeline geometry and time ranges: mapping between Unix nanoseconds and
// pixels, wheel zoom, drag selection, the time presets. Pure functions.
#pragma once

#include <cstdint>
#include <string_view>

namespace kiln::ui {

inline constexpr int64_t kNsPerSecond = 1'000'000'000;

// A half-open time range [from_ns, to_ns).
struct TimeRange {
  int64_t from_ns = 0;
  int64_t to_ns = 0;
  int64_t Span() const { return to_ns - from_ns; }
  bool Empty() const { return to_ns <= from_ns; }
  bool operator==(const TimeRange&) const = default;
};

enum class TimePreset : uint8_t { kLast15m, kLast1h, kLast24h, kAll };
inline constexpr TimePreset kTimePresets[] = {TimePreset::kLast15m, TimePreset::kLast1h, TimePreset::kLast24h,
                                              TimePreset::kAll};
std::string_view TimePresetName(TimePreset preset);  // "Last 15m", ...

// The window a preset shows at `now_ns`. kAll covers the stored data
// [first, last] (one second around `now` when the store is empty).
TimeRange PresetRange(TimePreset preset, int64_t now_ns, int64_t first_sample_ns, int64_t last_sample_ns);

// Linear mapping of `window` onto [x0, x0 + width).
float TimeToX(TimeRange window, int64_t t_ns, float x0, float width);
int64_t XToTime(TimeRange window, float x, float x0, float width);

// The selection a drag from x_a to x_b makes (either direction), clamped
// to the window. Drags shorter than `min_px` select nothing (Empty()).
TimeRange DragSelection(TimeRange window, float x_a, float x_b, float x0, float width, float min_px = 3.f);

// Zooms `window` by `factor` (< 1 zooms in) keeping `anchor_ns` at the same
// pixel, never narrower than `min_span_ns` nor wider than `limit` (when
// limit is not Empty()).
TimeRange ZoomRange(TimeRange window, int64_t anchor_ns, double factor, TimeRange limit,
                    int64_t min_span_ns = kNsPerSecond);

// Index of the bucket holding `t_ns` in a timeline of `count` buckets of
// `bucket_ns` starting at `start_ns`, or -1 outside.
int BucketAt(int64_t start_ns, int64_t bucket_ns, int count, int64_t t_ns);

// FlameScope's grid: columns of `column_ns` (one second unless the window
// needs more than `max_columns` of them), each cut into `rows` slices from
// top to bottom, starting at a whole column before the window. A slice is
// never shorter than the sampling period `period_ns` (0 = not known): at
// kiln-agent's 20 Hz a sample comes every 50 ms, and 20 ms slices showed
// stripes (two rows of every five empty) instead of the load.
struct HeatmapGrid {
  int64_t start_ns = 0;
  int64_t column_ns = kNsPerSecond;
  int columns = 0;
  int rows = 50;
  int64_t SliceNs() const { return column_ns / rows; }
  TimeRange Span() const { return {start_ns, start_ns + column_ns * columns}; }
  // The slice's time range, and its bucket index in a timeline of
  // columns * rows buckets over Span().
  TimeRange Cell(int column, int row) const;
  int Bucket(int column, int row) const { return column * rows + row; }
};
HeatmapGrid HeatmapGridFor(TimeRange window, int64_t period_ns = 0, int max_rows = 50, int max_columns = 1200);
// What dragging from one cell to another selects: every moment from the
// earlier cell's start to the later cell's end, in time order (down a
// column, then on to the next), as FlameScope selects.
TimeRange HeatmapSelection(const HeatmapGrid& grid, int column_a, int row_a, int column_b, int row_b);

// A "nice" tick step of at least `min_ns`: 1, 2 or 5 x 10^k ns below a
// second, then 1, 2, 5, 10, 15, 30 s, minutes and hours up to a week. What
// every time axis ticks by (the timeline, the Stack Chart).
int64_t TickStepAtLeast(double min_ns);
// The step that puts ticks at least `min_px` apart on a window of
// `span_ns` over `width` pixels.
int64_t TickStep(int64_t span_ns, float width, float min_px);

}  // namespace kiln::ui
