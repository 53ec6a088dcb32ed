#include "ui/stack_chart_layout.h"

#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

namespace kiln::ui {
namespace {

constexpr int64_t kMs = 1'000'000;

// Samples written as (time ms, duration ms, "main;a;b"), with the function
// names interned in order of appearance.
struct Fixture {
  std::vector<std::string> names;
  std::map<std::string, uint32_t> ids;
  std::vector<std::vector<uint32_t>> stacks;
  std::vector<ChartSample> samples;

  void Add(double time_ms, double duration_ms, const std::string& folded) {
    std::vector<uint32_t> frames;
    for (size_t begin = 0; begin <= folded.size();) {
      size_t end = folded.find(';', begin);
      if (end == std::string::npos) end = folded.size();
      const std::string f = folded.substr(begin, end - begin);
      begin = end + 1;
      auto [it, added] = ids.emplace(f, static_cast<uint32_t>(names.size()));
      if (added) names.push_back(f);
      frames.push_back(it->second);
    }
    stacks.push_back(std::move(frames));
    samples.push_back({static_cast<int64_t>(time_ms * kMs), static_cast<int64_t>(duration_ms * kMs),
                       static_cast<uint32_t>(stacks.size() - 1)});
  }
  // Every box, a line each: "depth name start-end ms (samples)".
  std::string Print(const StackChartLayout& layout) const {
    std::string out;
    for (size_t d = 0; d < layout.depths.size(); ++d) {
      for (const ChartBox& b : layout.depths[d]) {
        out += std::to_string(d) + " " + names[b.function] + " " + std::to_string(b.start_ns / kMs) + "-" +
               std::to_string(b.end_ns / kMs) + " (" + std::to_string(b.samples) + ")\n";
      }
    }
    return out;
  }
  std::string Layout() const { return Print(LayoutStackChart(samples, stacks)); }
};

TEST_CASE("stack chart: consecutive samples' common frames become one box, from the root down") {
  Fixture f;
  f.Add(0, 50, "main;a;x");
  f.Add(50, 50, "main;a;y");
  f.Add(100, 50, "main;b");
  f.Add(150, 50, "main;b");
  f.Add(200, 50, "main;a;x");  // a again after b: a new box, not the old one
  CHECK(f.Layout() ==
        "0 main 0-250 (5)\n"
        "1 a 0-100 (2)\n"
        "1 b 100-200 (2)\n"
        "1 a 200-250 (1)\n"
        "2 x 0-50 (1)\n"
        "2 y 50-100 (1)\n"
        "2 x 200-250 (1)\n");
}

TEST_CASE("stack chart: sampling jitter continues a box, a gap (the thread not sampled) breaks every box") {
  Fixture f;
  f.Add(0, 50, "main;a");
  f.Add(52, 50, "main;a");   // 2 ms late: the same run
  f.Add(101, 50, "main;a");  // 1 ms early: the same run
  f.Add(400, 50, "main;a");  // 249 ms after the last ended: not sampled in between
  CHECK(f.Layout() ==
        "0 main 0-151 (3)\n"
        "0 main 400-450 (1)\n"
        "1 a 0-151 (3)\n"
        "1 a 400-450 (1)\n");
}

TEST_CASE("stack chart: off-CPU samples drawn over their blocked interval") {
  Fixture f;
  f.Add(0, 300, "main;read");
  f.Add(300, 100, "main;poll");
  f.Add(1000, 20, "main;read");
  CHECK(f.Layout() ==
        "0 main 0-400 (2)\n"
        "0 main 1000-1020 (1)\n"
        "1 read 0-300 (1)\n"
        "1 poll 300-400 (1)\n"
        "1 read 1000-1020 (1)\n");
  // An interval reaching past the next sample's time is cut there: rows
  // never overlap, and each sample keeps its own time (a long wait does
  // not push every later box to its end).
  Fixture overlap;
  overlap.Add(0, 300, "main;read");
  overlap.Add(100, 50, "main;poll;futex");
  overlap.Add(120, 50, "main;poll");
  overlap.Add(140, 50, "main;read");
  CHECK(overlap.Layout() ==
        "0 main 0-300 (4)\n"
        "1 read 0-100 (1)\n"
        "1 poll 100-140 (2)\n"
        "1 read 140-190 (1)\n"
        "2 futex 100-120 (1)\n");
}

TEST_CASE("stack chart: an empty selection and a stack index out of range") {
  CHECK(LayoutStackChart({}, {}).depths.empty());
  const std::vector<ChartSample> samples = {{0, 10, 7}};
  const StackChartLayout layout = LayoutStackChart(samples, {{1, 2}});
  CHECK(layout.depths.empty());  // no frames: nothing drawn, nothing read out of range
  CHECK(layout.end_ns == 10);
}

TEST_CASE("stack chart: what one frame draws; boxes under a pixel merge, so 100 k samples draw a row of pixels") {
  // 100 k samples of 1 ms, main;a and main;b alternating: 100 s.
  Fixture f;
  for (int i = 0; i < 100'000; ++i) f.Add(i, 1, i % 2 ? "main;b" : "main;a");
  const StackChartLayout layout = LayoutStackChart(f.samples, f.stacks);
  REQUIRE(layout.depths.size() == 2);
  CHECK(layout.depths[0].size() == 1);
  CHECK(layout.depths[1].size() == 100'000);

  // All of it across 1,000 px (100 ms a pixel): main is one rect, the
  // 100 k boxes below it a rect per pixel column, each merged.
  const std::vector<ChartRect> all = VisibleChartRects(layout, 0, 100.0 * kMs, 1000);
  size_t row0 = 0, row1 = 0, merged = 0;
  float covered = 0;
  for (const ChartRect& r : all) {
    (r.depth == 0 ? row0 : row1) += 1;
    if (r.depth == 1) {
      merged += r.merged ? 1 : 0;
      covered += r.x1 - r.x0;
      CHECK(r.x1 - r.x0 == doctest::Approx(1.0f));
    }
  }
  CHECK(row0 == 1);
  CHECK(row1 == 1000);
  CHECK(merged == 1000);
  size_t mixed = 0;
  for (const ChartRect& r : all) mixed += r.mixed ? 1 : 0;
  CHECK(mixed == 1000);  // a and b in every column: no label can name it
  CHECK(covered == doctest::Approx(1000.0f));

  // Zoomed to 10 ms across 1,000 px: ten boxes of 100 px, each its own.
  const std::vector<ChartRect> zoomed = VisibleChartRects(layout, 5 * kMs, 0.01 * kMs, 1000);
  std::string text;
  for (const ChartRect& r : zoomed) {
    if (r.depth != 1) continue;
    text += f.names[layout.depths[1][r.box].function] + " " + std::to_string(static_cast<int>(r.x0)) + "-" +
            std::to_string(static_cast<int>(r.x1)) + (r.merged ? " merged" : "") + "\n";
  }
  CHECK(text ==
        "b 0-100\na 100-200\nb 200-300\na 300-400\nb 400-500\n"
        "a 500-600\nb 600-700\na 700-800\nb 800-900\na 900-1000\n");
  // The clipped main spans the whole width.
  CHECK(zoomed.front().depth == 0);
  CHECK(zoomed.front().x0 == 0);
  CHECK(zoomed.front().x1 == 1000);
}

TEST_CASE("stack chart: one function's short waits, apart and narrower than pixels, draw as one labelled rect") {
  // 1,000 waits of 1 ms in read, 10 ms apart (the thread runs, unsampled,
  // in between), then 1,000 in poll.
  Fixture f;
  for (int i = 0; i < 2000; ++i) f.Add(i * 10, 1, i < 1000 ? "main;read" : "main;poll");
  const StackChartLayout layout = LayoutStackChart(f.samples, f.stacks);
  REQUIRE(layout.depths.size() == 2);
  CHECK(layout.depths[0].size() == 2000);  // gaps break every box
  // 20 s across 200 px: 100 ms a pixel, ten waits in each.
  std::string text;
  for (const ChartRect& r : VisibleChartRects(layout, 0, 100.0 * kMs, 200)) {
    text += std::to_string(r.depth) + " " + f.names[layout.depths[r.depth][r.box].function] + " " +
            std::to_string(static_cast<int>(r.x0)) + "-" + std::to_string(static_cast<int>(r.x1)) +
            (r.merged ? " merged" : "") + (r.mixed ? " mixed" : "") + "\n";
  }
  CHECK(text ==
        "0 main 0-200 merged\n"
        "1 read 0-100 merged\n"
        "1 poll 100-200 merged\n");
}

TEST_CASE("stack chart: the box under the mouse") {
  Fixture f;
  f.Add(0, 50, "main;a");
  f.Add(50, 50, "main;b");
  f.Add(500, 50, "main;a");
  const StackChartLayout layout = LayoutStackChart(f.samples, f.stacks);
  CHECK(ChartBoxAt(layout, 10 * kMs, 0) == 0);
  CHECK(ChartBoxAt(layout, 10 * kMs, 1) == 0);
  CHECK(ChartBoxAt(layout, 60 * kMs, 1) == 1);
  CHECK(ChartBoxAt(layout, 200 * kMs, 0) == -1);  // not sampled then
  CHECK(ChartBoxAt(layout, 520 * kMs, 0) == 1);
  CHECK(ChartBoxAt(layout, 10 * kMs, 2) == -1);
  CHECK(ChartBoxAt(layout, 10 * kMs, -1) == -1);
  // In the gap (100-500 ms), with a slack: the nearer box within it.
  CHECK(ChartBoxAt(layout, 110 * kMs, 0, 20 * kMs) == 0);
  CHECK(ChartBoxAt(layout, 490 * kMs, 0, 20 * kMs) == 1);
  CHECK(ChartBoxAt(layout, 300 * kMs, 0, 20 * kMs) == -1);
  CHECK(ChartBoxAt(layout, 600 * kMs, 1, 60 * kMs) == 2);
}

TEST_CASE("stack chart axis: ticks labelled with the digits their spacing needs") {
  CHECK(ChartTickLabel(301'000'000'000, 100'000'000'000) == "+5m 01s");
  CHECK(ChartTickLabel(2'000'000'000, 1'000'000'000) == "+2.00 s");
  // A tenth of a millisecond apart, five minutes in: neighbours differ.
  CHECK(ChartTickLabel(301'024'500'000, 100'000) == "+301.0245 s");
  CHECK(ChartTickLabel(301'024'600'000, 100'000) == "+301.0246 s");
  CHECK(ChartTickLabel(1'500'000'000, 500'000'000) == "+1.5 s");
}

}  // namespace
}  // namespace kiln::ui
