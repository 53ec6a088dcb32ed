#include "ui/timeline_math.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

namespace kiln::ui {
namespace {

constexpr int64_t kS = kNsPerSecond;

TEST_CASE("time and x map both ways") {
  const TimeRange w{100 * kS, 200 * kS};
  CHECK(TimeToX(w, 150 * kS, 10.f, 100.f) == doctest::Approx(60.f));
  CHECK(XToTime(w, 60.f, 10.f, 100.f) == 150 * kS);
  CHECK(XToTime(w, 10.f, 10.f, 100.f) == 100 * kS);
}

TEST_CASE("drag selection is ordered, clamped, and ignores clicks") {
  const TimeRange w{0, 100 * kS};
  CHECK(DragSelection(w, 80, 20, 0, 100) == TimeRange{20 * kS, 80 * kS});
  CHECK(DragSelection(w, -50, 10, 0, 100) == TimeRange{0, 10 * kS});
  CHECK(DragSelection(w, 50, 51, 0, 100).Empty());
}

TEST_CASE("wheel zoom keeps the anchor and respects limits") {
  const TimeRange w{0, 100 * kS};
  const TimeRange in = ZoomRange(w, 25 * kS, 0.5, w);
  CHECK(in == TimeRange{12'500'000'000, 62'500'000'000});
  // Zooming out past the limit clamps to it.
  CHECK(ZoomRange(in, 30 * kS, 4.0, w) == w);
  // Never narrower than the minimum span.
  CHECK(ZoomRange(w, 50 * kS, 1e-6, w).Span() == kS);
}

TEST_CASE("presets") {
  const int64_t now = 10'000 * kS;
  CHECK(PresetRange(TimePreset::kLast15m, now, 0, 0) == TimeRange{now - 900 * kS, now});
  CHECK(PresetRange(TimePreset::kLast24h, now, 0, 0).Span() == 86'400 * kS);
  CHECK(PresetRange(TimePreset::kAll, now, 5 * kS, 50 * kS) == TimeRange{5 * kS, 50 * kS + 1});
  CHECK(PresetRange(TimePreset::kAll, now, 0, 0).to_ns == now);
  CHECK(TimePresetName(TimePreset::kLast1h) == "Last 1h");
}

TEST_CASE("buckets and ticks") {
  CHECK(BucketAt(100, 10, 5, 100) == 0);
  CHECK(BucketAt(100, 10, 5, 149) == 4);
  CHECK(BucketAt(100, 10, 5, 150) == -1);
  CHECK(BucketAt(100, 10, 5, 99) == -1);
  // 15 minutes over 1500 px with ticks >= 80 px apart: one per minute.
  CHECK(TickStep(900 * kS, 1500.f, 80.f) == 60 * kS);
  // 1-2-5 below a second, clock steps above it, a week at most.
  CHECK(TickStepAtLeast(1) == 1);
  CHECK(TickStepAtLeast(110) == 200);
  CHECK(TickStepAtLeast(3'000'000) == 5'000'000);
  CHECK(TickStepAtLeast(6'000'000) == 10'000'000);
  CHECK(TickStepAtLeast(600'000'000) == kS);
  CHECK(TickStepAtLeast(11 * kS) == 15 * kS);
  CHECK(TickStepAtLeast(100 * kS) == 120 * kS);
  CHECK(TickStepAtLeast(1e18) == 7 * 24 * 3600 * kS);
  CHECK(TickStep(0, 100.f, 10.f) == 7 * 24 * 3600 * kS);
}

}  // namespace
}  // namespace kiln::ui

namespace kiln::ui {

TEST_CASE("FlameScope grid: whole-second columns of 20 ms slices, selections in time order") {
  const int64_t s = kNsPerSecond;
  const HeatmapGrid g = HeatmapGridFor({100 * s + s / 2, 160 * s});
  CHECK(g.start_ns == 100 * s);
  CHECK(g.column_ns == s);
  CHECK(g.columns == 60);
  CHECK(g.SliceNs() == 20'000'000);
  CHECK(g.Cell(0, 0) == TimeRange{100 * s, 100 * s + 20'000'000});
  CHECK(g.Cell(2, 49) == TimeRange{102 * s + 980'000'000, 103 * s});
  // From row 10 of column 3 to row 5 of column 1: dragged backwards.
  CHECK(HeatmapSelection(g, 3, 10, 1, 5) == TimeRange{101 * s + 100'000'000, 103 * s + 220'000'000});
  // One cell.
  CHECK(HeatmapSelection(g, 0, 0, 0, 0) == g.Cell(0, 0));
  // A day: columns widen to whole seconds so at most 1200 fit.
  const HeatmapGrid day = HeatmapGridFor({0, 86400 * s});
  CHECK(day.column_ns == 72 * s);
  CHECK(day.columns == 1200);
  CHECK(HeatmapGridFor({}).columns == 0);
}

TEST_CASE("FlameScope grid: slices never shorter than the sampling period, so a steady load shows no stripes") {
  const int64_t s = kNsPerSecond;
  const TimeRange minute{100 * s, 160 * s};
  // kiln-agent's default 20 Hz: 50 ms slices, 20 of them.
  const HeatmapGrid agent = HeatmapGridFor(minute, 50'000'000);
  CHECK(agent.rows == 20);
  CHECK(agent.SliceNs() == 50'000'000);
  // A thread busy all the minute, sampled every 50 ms at some phase: every
  // cell holds the same count (with 20 ms slices, two rows of five were empty).
  for (const int64_t phase : {int64_t{0}, int64_t{7'000'000}, int64_t{49'999'999}}) {
    std::vector<int> per_cell(static_cast<size_t>(agent.columns) * agent.rows, 0);
    for (int64_t t = minute.from_ns + phase; t < minute.to_ns; t += 50'000'000) {
      const int column = static_cast<int>((t - agent.start_ns) / agent.column_ns);
      for (int row = 0; row < agent.rows; ++row) {
        if (agent.Cell(column, row).from_ns <= t && t < agent.Cell(column, row).to_ns) ++per_cell[agent.Bucket(column, row)];
      }
    }
    CHECK(*std::min_element(per_cell.begin(), per_cell.end()) == 1);
    CHECK(*std::max_element(per_cell.begin(), per_cell.end()) == 1);
  }
  // 100 Hz (pprof's default): the 50 rows of 20 ms, two samples each.
  CHECK(HeatmapGridFor(minute, 10'000'000).rows == 50);
  // 1 Hz: one row a column; slower still: still one.
  CHECK(HeatmapGridFor(minute, s).rows == 1);
  CHECK(HeatmapGridFor(minute, 5 * s).rows == 1);
  // Unknown period: 20 ms.
  CHECK(HeatmapGridFor(minute, 0).rows == 50);
}

}  // namespace kiln::ui
