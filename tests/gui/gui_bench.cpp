// GUI benchmark (printed figures, not a test). Needs a display (Xvfb is fine).
//
//   kiln_gui_bench frame|frame-balanced|frame-comb [NODES] [FRAMES]
//                                           UI CPU time per frame drawing a
//                                           synthetic flame tree at 1920x1080
//   kiln_gui_bench stackchart [SAMPLES] [FRAMES]
//                                           the Stack Chart's worker build and
//                                           UI CPU per frame with SAMPLES
//                                           (default 1 M) in the range
//   kiln_gui_bench fill DIR [SAMPLES]       writes SAMPLES (default 10 M) demo
//                                           samples ending 20 minutes ago into
//                                           DIR, for the start-up figures:
//   kiln_gui_bench fill-tree DIR [NODES]    writes stacks whose flame tree has
//                                           about NODES (default 1 M) nodes
//     KILN_REPORT_STARTUP=1 [KILN_SETTLE_FRAMES=200] kiln_gui_shot --data-dir DIR
//         --size 1920x1080 --screenshot x.png   (prints first frame, data drawn,
//         RSS, and UI CPU per frame once the data is drawn)
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <backends/imgui_impl_opengl3_loader.h>
#include <imgui.h>

#include "app/demo_profile.h"
#include "app/gui_screenshot.h"
#include "storage/model/query.h"
#include "storage/model/sample_type.h"
#include "storage/store.h"
#include "ui/flame_layout.h"
#include "ui/flame_search.h"
#include "ui/flamegraph_view.h"
#include "ui/stack_chart_data.h"
#include "ui/stack_chart_view.h"
#include "ui/test_trees.h"
#include "ui/theme.h"

namespace {

using namespace kiln;
using Clock = std::chrono::steady_clock;

double ThreadCpuMs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

double MsSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// xorshift64: the same synthetic data every run.
struct XorShift {
  uint64_t state = 88172645463325252ull;
  uint64_t operator()() {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  }
};

struct Stats {
  double mean, p50, p95, max;
};
Stats Summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  return {sum / v.size(), v[v.size() / 2], v[v.size() * 95 / 100], v.back()};
}

// The drawing worst case: `width` one-pixel columns, each a call chain as
// deep as the node budget allows, so every node is at least a pixel wide.
storage::FlameTree CombTree(uint32_t nodes, uint32_t width) {
  static const storage::FrameType kTypes[] = {storage::FrameType::kNative, storage::FrameType::kKernel,
                                              storage::FrameType::kGo, storage::FrameType::kPython,
                                              storage::FrameType::kJvm};
  storage::FlameTree tree;
  const uint32_t depth = (nodes - 1) / width;
  for (uint32_t i = 0; i < 5000; ++i) {
    tree.labels.push_back("comb::Column<std::string>::Visit(unsigned long)#" + std::to_string(i));
  }
  tree.nodes.resize(1 + static_cast<size_t>(width) * depth);
  tree.nodes[0].kind = storage::NodeKind::kRoot;
  tree.nodes[0].total = width * 1000;
  tree.nodes[0].first_child = 1;
  tree.nodes[0].child_count = width;
  for (uint32_t d = 1; d <= depth; ++d) {
    for (uint32_t c = 0; c < width; ++c) {
      const uint32_t i = 1 + (d - 1) * width + c;
      storage::FlameNode& n = tree.nodes[i];
      n.parent = d == 1 ? 0 : i - width;
      n.depth = static_cast<uint16_t>(d);
      n.kind = storage::NodeKind::kFrame;
      n.type = kTypes[(c / 7 + d) % 5];
      n.total = 1000;
      n.label = (d * 7 + c) % 5000;
      if (d < depth) {
        n.first_child = i + width;
        n.child_count = 1;
      } else {
        n.self = 1000;
      }
    }
  }
  tree.max_depth = static_cast<uint16_t>(depth);
  return tree;
}

// A 1920x1080 window and `frames` frames (after 10 warm-up frames, which
// build the font atlas and the views' caches), each drawing `draw` in a
// full-window ImGui window with the pointer at `pointer(f)`; prints the
// UI thread's CPU per frame. Returns 77 without a display.
template <typename Draw, typename Pointer>
int RunFrames(int frames, Draw&& draw, Pointer&& pointer) {
  if (!glfwInit()) {
    std::fprintf(stderr, "kiln_gui_bench: no display\n");
    return 77;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 2);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
  GLFWwindow* window = glfwCreateWindow(1920, 1080, "kiln bench", nullptr, nullptr);
  if (!window) return 77;
  glfwMakeContextCurrent(window);
  glfwSwapInterval(0);
  ImGui::CreateContext();
  ImGui::GetIO().IniFilename = nullptr;
  ui::ApplyTheme(1.f);
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 150");

  std::vector<double> ui_cpu, frame_cpu, frame_wall;
  size_t vertices = 0;
  for (int f = 0; f < frames + 10; ++f) {
    const auto wall = Clock::now();
    const double cpu0 = ThreadCpuMs();
    glfwPollEvents();
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    ImGuiIO& io = ImGui::GetIO();
    pointer(f, &io);
    ImGui::NewFrame();
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(io.DisplaySize);
    ImGui::Begin("bench", nullptr, ImGuiWindowFlags_NoDecoration);
    draw(f);
    ImGui::End();
    ImGui::Render();
    const double cpu1 = ThreadCpuMs();
    int w, h;
    glfwGetFramebufferSize(window, &w, &h);
    glViewport(0, 0, w, h);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    if (f == frames + 9 && std::getenv("KILN_BENCH_PNG")) {
      std::string error;
      if (!app::WriteFramebufferPng(std::getenv("KILN_BENCH_PNG"), w, h, &error))
        std::fprintf(stderr, "%s\n", error.c_str());
    }
    glfwSwapBuffers(window);
    const double cpu2 = ThreadCpuMs();
    if (f >= 10) {
      ui_cpu.push_back(cpu1 - cpu0);
      frame_cpu.push_back(cpu2 - cpu0);
      frame_wall.push_back(MsSince(wall));
      vertices = ImGui::GetDrawData()->TotalVtxCount;
    }
  }
  const Stats a = Summarize(ui_cpu), b = Summarize(frame_cpu), c = Summarize(frame_wall);
  std::printf("frames: %d at 1920x1080, %zu vertices in the last\n", frames, vertices);
  std::printf("UI CPU per frame (NewFrame..Render):      mean %.2f ms, p50 %.2f, p95 %.2f, max %.2f\n",
              a.mean, a.p50, a.p95, a.max);
  std::printf("UI thread CPU incl. GL submit + swap:     mean %.2f ms, p50 %.2f, p95 %.2f, max %.2f\n",
              b.mean, b.p50, b.p95, b.max);
  std::printf("wall per frame (Mesa llvmpipe rasterizes): mean %.2f ms, p50 %.2f, p95 %.2f, max %.2f\n",
              c.mean, c.p50, c.p95, c.max);
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return 0;
}

int BenchFrame(uint32_t nodes, int frames, bool balanced, bool comb) {
  auto t0 = Clock::now();
  auto tree = std::make_shared<const storage::FlameTree>(
      comb ? CombTree(nodes, 1800) : ui::testing::SyntheticTree(nodes, balanced ? 3 : 6, 64, balanced));
  std::printf("tree: %zu nodes, depth %u, %s weights (built in %.0f ms)\n", tree->nodes.size(),
              tree->max_depth,
              comb       ? "comb (every node >= 1 px)"
              : balanced ? "balanced"
                         : "skewed",
              MsSince(t0));
  t0 = Clock::now();
  auto left = std::make_shared<const std::vector<int64_t>>(ui::ComputeLeftOffsets(*tree));
  std::printf("left offsets (worker thread, once per tree): %.1f ms\n", MsSince(t0));
  t0 = Clock::now();
  const auto layout = ui::LayoutFlame(*tree, *left, 0, 1890.f);
  std::printf("layout at 1890 px (on zoom/resize only): %.2f ms, %zu rects, %u skipped nodes\n", MsSince(t0),
              layout.rects.size(), layout.skipped_nodes);
  t0 = Clock::now();
  const auto search = ui::SearchFlameTree(*tree, "Function_12");
  std::printf("search over all nodes (per query edit): %.1f ms, %u matches\n", MsSince(t0),
              search.matched_nodes);

  ui::FlamegraphView view;
  ui::SessionState session;
  ui::ViewContext context;
  context.session = &session;
  // Sweep the pointer over the graph so hover, hit testing and the
  // tooltip are part of every frame.
  return RunFrames(
      frames, [&](int) { view.DrawTree(context, tree, left); },
      [](int f, ImGuiIO* io) { io->MousePos = ImVec2(40.f + (f * 37) % 1840, 120.f + (f * 13) % 700); });
}

// One thread's `samples` samples at 1 kHz, as a program runs: each sample
// keeps the one before it (90 %) or returns from a few frames and calls
// new ones, so boxes have the lengths of real calls; 8-40 frames deep.
storage::ProfileBatch ChartBatch(uint64_t samples) {
  storage::ProfileBatch batch;
  auto& dict = batch.dict;
  constexpr int kMaxDepth = 40, kVariants = 24;
  static const storage::FrameType kBands[] = {storage::FrameType::kNative, storage::FrameType::kGo,
                                              storage::FrameType::kPython, storage::FrameType::kKernel};
  std::vector<uint32_t> frame_ids;
  for (int d = 0; d < kMaxDepth; ++d) {
    for (int k = 0; k < kVariants; ++k) {
      storage::Frame f;
      f.function = dict.AddString("app::module" + std::to_string(d) + "::Step<Kind" + std::to_string(k) +
                                  ">::Run(State&)");
      f.type = kBands[std::min(d / 12, 3)];
      frame_ids.push_back(static_cast<uint32_t>(dict.frames.size()));
      dict.frames.push_back(f);
    }
  }
  const uint32_t attrs = dict.AddAttributeSet({{dict.AddString("process.executable.name"), dict.AddString("app")},
                                               {dict.AddString("process.pid"), dict.AddString("4242")},
                                               {dict.AddString("thread.id"), dict.AddString("4243")},
                                               {dict.AddString("thread.name"), dict.AddString("main")}});
  const uint32_t type = dict.AddSampleType({storage::OnCpuSamples(), "cpu", "nanoseconds", 1'000'000});
  XorShift next;
  std::vector<uint32_t> stack = {frame_ids[0]};
  uint32_t stack_id = dict.AddStack(stack);
  const int64_t start = kiln::storage::UnixNowNs() - static_cast<int64_t>(samples) * 1'000'000;
  batch.samples.reserve(samples);
  for (uint64_t i = 0; i < samples; ++i) {
    if (next() % 10 == 0) {
      const size_t keep = std::max<size_t>(1, stack.size() - std::min<size_t>(stack.size(), 1 + next() % 4));
      stack.resize(keep);
      const size_t target = 8 + next() % (kMaxDepth - 8);
      while (stack.size() < target) stack.push_back(frame_ids[stack.size() * kVariants + next() % kVariants]);
      stack_id = dict.AddStack(stack);
    }
    storage::Sample s;
    s.time_ns = start + static_cast<int64_t>(i) * 1'000'000;
    s.stack = stack_id;
    s.attribute_set = attrs;
    s.sample_type = type;
    batch.samples.push_back(s);
  }
  return batch;
}

// The Stack Chart with `samples` samples in the range: the worker's build
// (the slice's samples into one thread's boxes), then frames of the view
// at the whole range and while zooming in around the pointer.
int BenchStackChart(uint64_t samples, int frames) {
  auto t0 = Clock::now();
  const storage::ProfileBatch batch = ChartBatch(samples);
  std::printf("stack chart: %zu samples over %zu stacks, one thread (made in %.0f ms)\n", batch.samples.size(),
              batch.dict.StackCount(), MsSince(t0));
  storage::Query q;
  q.keep_samples = true;
  t0 = Clock::now();
  const auto slice = storage::SliceFromBatch(batch, q);
  std::printf("slice with every sample's time: %.0f ms\n", MsSince(t0));
  t0 = Clock::now();
  auto data = std::make_shared<const ui::StackChartData>(ui::StackChartDataOf(slice, {}, "", 1'000'000));
  size_t boxes = 0;
  for (const auto& row : data->layout.depths) boxes += row.size();
  std::printf("worker: the thread's samples, stacks and layout: %.0f ms, %zu boxes in %zu rows\n", MsSince(t0),
              boxes, data->layout.depths.size());

  ui::StackChartView view;
  ui::SessionState session;
  ui::AnalysisSnapshot snapshot;
  snapshot.slice = slice;
  snapshot.view_results[std::string(view.Id())] = data;
  ui::ViewContext context;
  context.session = &session;
  context.analysis = &snapshot;
  // The first half of the frames show all of it (the most merging); the
  // second half zoom in a notch a frame around a sweeping pointer.
  return RunFrames(
      frames, [&](int) { view.Draw(context); },
      [frames](int f, ImGuiIO* io) {
        io->MousePos = ImVec2(40.f + (f * 37) % 1840, 200.f + (f * 13) % 600);
        if (f >= 10 + frames / 2) io->MouseWheel = 1.f;
      });
}

int Fill(const std::string& dir, uint64_t samples) {
  auto store = storage::Store::Open(dir, storage::Store::Mode::kReadWrite);
  if (!store.ok()) {
    std::fprintf(stderr, "kiln_gui_bench: %s\n", std::string(store.status().message()).c_str());
    return 1;
  }
  const int64_t now = kiln::storage::UnixNowNs();
  const int64_t kQuarterHour = 15 * 60 * 1'000'000'000LL;
  const auto start = Clock::now();
  uint64_t written = 0;
  // Demo profiles laid end to end back in time; the newest ends 20 minutes
  // ago so kiln opens on "All" and queries every sample.
  for (int64_t end = now - 20 * 60 * 1'000'000'000LL; written < samples; end -= kQuarterHour) {
    storage::ProfileBatch batch = app::BuildDemoProfile(end);
    if (batch.samples.size() > samples - written) batch.samples.resize(samples - written);
    written += batch.samples.size();
    if (auto s = (*store)->Write(batch); !s.ok()) {
      std::fprintf(stderr, "kiln_gui_bench: write: %s\n", std::string(s.message()).c_str());
      return 1;
    }
  }
  (void)(*store)->Compact();
  std::printf("wrote %llu samples in %.1f s; store %s\n", static_cast<unsigned long long>(written),
              MsSince(start) / 1e3, dir.c_str());
  return 0;
}

// A store whose flame tree has about `nodes` nodes: random walks down a
// virtual call graph (branching 8 per level, 24 levels), so most stacks
// share only their first few frames, as in a large real service.
int FillTree(const std::string& dir, uint64_t nodes) {
  auto store = storage::Store::Open(dir, storage::Store::Mode::kReadWrite);
  if (!store.ok()) {
    std::fprintf(stderr, "kiln_gui_bench: %s\n", std::string(store.status().message()).c_str());
    return 1;
  }
  constexpr int kDepth = 24;
  constexpr int kBranching = 8;
  static const storage::FrameType kBands[] = {storage::FrameType::kNative, storage::FrameType::kGo,
                                              storage::FrameType::kJvm, storage::FrameType::kPython,
                                              storage::FrameType::kKernel};
  storage::ProfileBatch batch;
  auto& dict = batch.dict;
  std::vector<uint32_t> frame_ids(kDepth * kBranching * 4);
  for (int d = 0; d < kDepth; ++d) {
    for (int k = 0; k < kBranching * 4; ++k) {
      storage::Frame f;
      f.function = dict.AddString("service::layer" + std::to_string(d) + "::Handler<Request" +
                                  std::to_string(k) + ">::Process(Context&)");
      f.type = kBands[std::min(d / 5, 4)];
      frame_ids[d * kBranching * 4 + k] = static_cast<uint32_t>(dict.frames.size());
      dict.frames.push_back(f);
    }
  }
  const uint32_t attrs =
      dict.AddAttributeSet({{dict.AddString("process.executable.name"), dict.AddString("big-service")},
                            {dict.AddString("thread.name"), dict.AddString("worker")}});
  XorShift next;
  const int64_t now = kiln::storage::UnixNowNs();
  // Beyond the shared top levels each stack adds about kDepth - 5 new nodes.
  const uint64_t stacks = nodes / (kDepth - 5);
  for (uint64_t s = 0; s < stacks; ++s) {
    std::vector<uint32_t> frames;
    uint64_t path = 0;
    for (int d = 0; d < kDepth; ++d) {
      // The label depends on the parent path so siblings differ: k in [0, 4 * branching).
      const uint64_t k = next() % kBranching;
      path = path * 31 + k;
      frames.push_back(frame_ids[d * kBranching * 4 + (k + path) % (kBranching * 4)]);
    }
    const uint32_t stack = dict.AddStack(frames);
    for (int i = 0; i < 2; ++i) {
      storage::Sample sample;
      sample.time_ns = now - static_cast<int64_t>(next() % (14ull * 60 * 1'000'000'000));
      sample.stack = stack;
      sample.attribute_set = attrs;
      batch.samples.push_back(sample);
    }
  }
  const auto start = Clock::now();
  if (auto st = (*store)->Write(batch); !st.ok()) {
    std::fprintf(stderr, "kiln_gui_bench: write: %s\n", std::string(st.message()).c_str());
    return 1;
  }
  std::printf("wrote %zu samples over %llu stacks in %.1f s; store %s\n", batch.samples.size(),
              static_cast<unsigned long long>(stacks), MsSince(start) / 1e3, dir.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "frame";
  if (mode == "frame" || mode == "frame-balanced" || mode == "frame-comb") {
    return BenchFrame(argc > 2 ? static_cast<uint32_t>(std::atol(argv[2])) : 1'000'000,
                      argc > 3 ? std::atoi(argv[3]) : 200, mode == "frame-balanced", mode == "frame-comb");
  }
  if (mode == "stackchart") {
    return BenchStackChart(argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1'000'000, argc > 3 ? std::atoi(argv[3]) : 200);
  }
  if (mode == "fill-tree" && argc > 2)
    return FillTree(argv[2], argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1'000'000);
  if (mode == "fill" && argc > 2)
    return Fill(argv[2], argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 10'000'000);
  std::fprintf(stderr,
               "usage: kiln_gui_bench frame|frame-balanced|frame-comb [NODES] [FRAMES] | fill DIR [SAMPLES] "
               "| fill-tree DIR [NODES] | stackchart [SAMPLES] [FRAMES]\n");
  return 2;
}
