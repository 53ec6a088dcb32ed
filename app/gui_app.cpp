// The desktop window: GLFW + OpenGL 3.2 core + Dear ImGui, the frame loop,
// live follow, and --screenshot.
//
// Index
//   [SECTION] Clock and window setup (including "no display")
//   [SECTION] Requests: from the session state to the worker
//   [SECTION] One frame: header, timeline, view, status line
//   [SECTION] RunGui: the loop and --screenshot

#include "app/gui_app.h"

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

#include "app/gui_screenshot.h"
#include "app/gui_worker.h"
#include "app/view_registry.h"
#include "storage/store.h"
#include "ui/header_bar.h"
#include "ui/status_line.h"
#include "ui/theme.h"
#include "ui/timeline_bar.h"

namespace kiln::app {

namespace {

// ===========================================================================
// [SECTION] Clock and window setup (including "no display")
// ===========================================================================

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string g_glfw_error;  // last GLFW error text; GLFW reports through a C callback

void OnGlfwError(int /*code*/, const char* description) { g_glfw_error = description ? description : "?"; }

// One line, pointing at the headless mode, instead of a raw GLFW error.
void ReportNoWindow(const char* what) {
  std::string reason = g_glfw_error.empty() ? what : g_glfw_error;
  const char* display = std::getenv("DISPLAY");
  const char* wayland = std::getenv("WAYLAND_DISPLAY");
  if ((!display || !*display) && (!wayland || !*wayland)) reason = "no display (DISPLAY is not set)";
  std::fprintf(stderr,
               "kiln: cannot open a window: %s. Run `kiln --headless` to receive and store profiles "
               "without a display.\n",
               reason.c_str());
}

double ThreadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

double ResidentMegabytes() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  double mb = -1;
  while (std::fgets(line, sizeof line, f)) {
    long kb = 0;
    if (std::sscanf(line, "VmRSS: %ld kB", &kb) == 1) mb = kb / 1024.0;
  }
  std::fclose(f);
  return mb;
}

struct WindowDeleter {
  void operator()(GLFWwindow* w) const { glfwDestroyWindow(w); }
};

// ===========================================================================
// [SECTION] Requests: from the session state to the worker
// ===========================================================================

// Live follow moves the window on a grid at least this fine, so a sliding
// window does not turn into a query per frame.
constexpr int64_t kLiveStepNs = 2 * ui::kNsPerSecond;

ui::AnalysisRequest BuildRequest(const ui::SessionState& session, uint64_t data_version, int buckets) {
  ui::AnalysisRequest r;
  r.query.kind = session.kind;
  const ui::TimeRange range = session.QueryRange();
  r.query.from_ns = range.from_ns;
  r.query.to_ns = range.to_ns;
  r.query.filters = session.filters;
  r.tree_options.group_by = session.group_by;
  r.tree_options.show_inline = session.show_inline;
  r.timeline_window = session.window;
  r.timeline_buckets = buckets;
  r.data_version = data_version;
  return r;
}

struct App {
  storage::Store& store;
  GuiWorker worker;
  std::vector<std::unique_ptr<ui::View>> views;
  std::vector<ui::View*> view_ptrs;
  size_t active_view = 0;
  ui::SessionState session;
  ui::HeaderBar header;
  ui::TimelineBar timeline;
  ui::Fonts fonts;

  std::shared_ptr<const ui::AnalysisSnapshot> analysis;
  std::shared_ptr<const ui::StatusSnapshot> status;
  bool session_initialized = false;
  bool has_request = false;
  ui::AnalysisRequest last_request;
  uint64_t submitted_generation = 0;
  uint64_t data_version = 0;
  int timeline_buckets = 300;
  bool empty_help_drawn = false;            // the content area showed the empty-store help
  bool freeze_after_first_request = false;  // --screenshot

  App(storage::Store& s, const ingest::OtlpReceiver* receiver, const GuiOptions& options)
      : store(s), worker(s, receiver, options.data_dir, [] { glfwPostEmptyEvent(); }), views(CreateViews()) {
    for (auto& v : views) view_ptrs.push_back(v.get());
    for (size_t i = 0; i < views.size(); ++i) {
      if (!options.tab.empty() && views[i]->Id() == options.tab) active_view = i;
    }
    // The tab bar owns the selection; ask it, as the other views do.
    session.requested_tab = std::string(views[active_view]->Id());
  }

  bool Current() const { return analysis && analysis->generation == submitted_generation; }

  // Frame start: adopt the newest snapshots, move the live window, submit
  // a new request when anything it depends on changed.
  void Update() {
    analysis = worker.LatestAnalysis();
    status = worker.LatestStatus();
    if (!status) return;  // the window and the first query need the store's time range
    const int64_t now = NowNs();
    const auto& stats = status->stats;
    if (!session_initialized) {
      // A store whose data is older than the default preset opens on All,
      // not on an empty 15 minutes.
      if (stats.samples > 0 && stats.last_sample_ns < now - 15 * 60 * ui::kNsPerSecond) {
        session.preset = ui::TimePreset::kAll;
      }
      session_initialized = true;
    }
    // A screenshot captures one moment: after the first request the window
    // stops following, or a busy agent could keep it computing forever.
    const bool frozen = freeze_after_first_request && has_request;
    if (session.live && !frozen) {
      // The window slides in steps of 1% of its span (at least 2 s): a
      // re-query of a big selection is not free, and a step that small is
      // invisible. New data re-queries at once through data_version.
      const ui::TimeRange span =
          ui::PresetRange(session.preset, now, stats.first_sample_ns, stats.last_sample_ns);
      const int64_t step = std::max(kLiveStepNs, span.Span() / 100);
      const int64_t now_step = (now / step + 1) * step;
      session.window = ui::PresetRange(session.preset, now_step, stats.first_sample_ns, stats.last_sample_ns);
      data_version = stats.samples;  // new samples: query again
    } else if (session.window.Empty()) {
      session.window = ui::PresetRange(session.preset, now, stats.first_sample_ns, stats.last_sample_ns);
    }
    const ui::AnalysisRequest request = BuildRequest(session, data_version, timeline_buckets);
    if (!has_request || !(request == last_request)) {
      submitted_generation = worker.Submit(request);
      last_request = request;
      has_request = true;
    }
  }

  // Limit for timeline wheel zoom: the preset window joined with the data.
  ui::TimeRange ZoomLimit() const {
    ui::TimeRange limit =
        ui::PresetRange(ui::TimePreset::kAll, NowNs(), status ? status->stats.first_sample_ns : 0,
                        status ? status->stats.last_sample_ns : 0);
    limit.from_ns = std::min(limit.from_ns, session.window.from_ns);
    limit.to_ns = std::max({limit.to_ns, session.window.to_ns, NowNs()});
    return limit;
  }

  // =========================================================================
  // [SECTION] One frame: header, timeline, view, status line
  // =========================================================================

  void DrawFrame() {
    const ImGuiViewport* viewport = ImGui::GetMainViewport();
    ImGui::SetNextWindowPos(viewport->WorkPos);
    ImGui::SetNextWindowSize(viewport->WorkSize);
    const ImGuiWindowFlags flags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                                   ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoBringToFrontOnFocus;
    ImGui::Begin("kiln", nullptr, flags);
    const bool computing = worker.Busy();
    header.Draw(view_ptrs, &active_view, session, status.get(), computing);

    const float em = ImGui::GetFontSize();
    const float timeline_h = em * 4.6f;
    timeline.Draw(session, analysis.get(), ZoomLimit(), timeline_h);
    timeline_buckets = std::clamp(static_cast<int>(ImGui::GetItemRectSize().x / 4.f), 60, 600);
    ImGui::Separator();

    const float status_h = ImGui::GetFrameHeightWithSpacing() + ImGui::GetStyle().ItemSpacing.y;
    ImGui::BeginChild("##content", ImVec2(0, -status_h), false);
    ui::View* view = views[active_view].get();
    ui::ViewContext context;
    context.analysis = analysis.get();
    context.status = status.get();
    context.session = &session;
    context.computing = computing;
    context.mono_font = fonts.mono;
    const bool empty_store = status && status->stats.samples == 0;
    if (empty_store && view->Id() != "log") {
      ui::DrawEmptyStoreHelp(status.get());
      empty_help_drawn = true;
    } else {
      view->Draw(context);
      empty_help_drawn = false;
    }
    ImGui::EndChild();
    ImGui::Separator();
    ui::DrawStatusLine(session, status.get(), analysis.get(), computing);
    ImGui::End();
  }

  // Whether the active view shows its final data (for --screenshot).
  bool Settled() const {
    if (!status || !has_request) return false;
    if (empty_help_drawn) return true;
    if (Current() && !analysis->error.empty()) return true;  // the error is what there is to show
    return Current() && !worker.Busy() && views[active_view]->Settled();
  }
};

}  // namespace

// ===========================================================================
// [SECTION] RunGui: the loop and --screenshot
// ===========================================================================

int RunGui(storage::Store& store, const ingest::OtlpReceiver* receiver, const GuiOptions& options) {
  glfwSetErrorCallback(OnGlfwError);
  if (!glfwInit()) {
    ReportNoWindow("GLFW could not initialize");
    return 1;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 2);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
  glfwWindowHint(GLFW_SCALE_TO_MONITOR, GLFW_TRUE);  // HiDPI: size in screen coordinates
  const bool screenshot = !options.screenshot_path.empty();
  if (screenshot) glfwWindowHint(GLFW_RESIZABLE, GLFW_FALSE);
  std::unique_ptr<GLFWwindow, WindowDeleter> window(glfwCreateWindow(
      options.width, options.height, options.demo ? "Kiln (demo)" : "Kiln", nullptr, nullptr));
  if (!window) {
    ReportNoWindow("no OpenGL 3.2 context");
    glfwTerminate();
    return 1;
  }
  glfwMakeContextCurrent(window.get());
  glfwSwapInterval(screenshot ? 0 : 1);

  // HiDPI: the monitor's content scale sizes fonts and paddings.
  // KILN_UI_SCALE overrides it (X11 desktops that do not report one).
  float scale_x = 1.f, scale_y = 1.f;
  glfwGetWindowContentScale(window.get(), &scale_x, &scale_y);
  if (const char* env = std::getenv("KILN_UI_SCALE")) scale_x = static_cast<float>(std::atof(env));

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // no imgui.ini in the user's working directory
  io.ConfigFlags |= ImGuiConfigFlags_NavEnableKeyboard;
  // A screenshot shows the data, not whatever the pointer happens to hover.
  if (screenshot) io.ConfigFlags |= ImGuiConfigFlags_NoMouse;
  int status = 0;
  {
    App app(store, receiver, options);
    app.freeze_after_first_request = screenshot;
    app.fonts = ui::ApplyTheme(scale_x);
    ImGui_ImplGlfw_InitForOpenGL(window.get(), true);
    ImGui_ImplOpenGL3_Init("#version 150");

    const auto start = std::chrono::steady_clock::now();
    int settled_frames = 0;
    bool first_frame = true;
    bool second_frame = false;
    const bool report_startup = std::getenv("KILN_REPORT_STARTUP") != nullptr;
    bool reported_settled = false;
    std::vector<double> frame_cpu_ms;  // UI CPU of frames after the data was drawn
    // Benchmarks ask for more frames before the capture to average over.
    const char* settle_env = std::getenv("KILN_SETTLE_FRAMES");
    const int settle_frames = settle_env ? std::max(3, std::atoi(settle_env)) : 3;
    while (!glfwWindowShouldClose(window.get())) {
      // Idle at a few frames per second, but animate promptly while the
      // worker computes; the worker wakes us when a result lands.
      // ImGui settles some changes (tab switches, popups) one frame after
      // the input, so every wake-up draws two frames back to back.
      if (first_frame || screenshot || second_frame) {
        glfwPollEvents();
        second_frame = false;
      } else {
        glfwWaitEventsTimeout(app.worker.Busy() ? 1.0 / 30 : 0.5);
        second_frame = true;
      }
      app.Update();
      const double cpu_before = ThreadCpuMs();
      ImGui_ImplOpenGL3_NewFrame();
      ImGui_ImplGlfw_NewFrame();
      ImGui::NewFrame();
      app.DrawFrame();
      ImGui::Render();
      if (reported_settled) frame_cpu_ms.push_back(ThreadCpuMs() - cpu_before);
      int fb_w = 0, fb_h = 0;
      glfwGetFramebufferSize(window.get(), &fb_w, &fb_h);
      glViewport(0, 0, fb_w, fb_h);
      glClearColor(0.11f, 0.118f, 0.141f, 1.f);
      glClear(GL_COLOR_BUFFER_BIT);
      ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
      // Startup figures for the benchmark (README): first frame, first
      // frame with the view's data, and RSS at each.
      if (report_startup && (first_frame || !reported_settled)) {
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        if (first_frame) {
          std::fprintf(stderr, "kiln: first frame after %.1f ms, RSS %.1f MB\n", ms, ResidentMegabytes());
        } else if (app.Settled()) {
          std::fprintf(stderr, "kiln: view drawn with its data after %.1f ms, RSS %.1f MB (%zu tree nodes)\n",
                       ms, ResidentMegabytes(),
                       app.analysis && app.analysis->tree ? app.analysis->tree->nodes.size() : 0);
          reported_settled = true;
        }
      }
      first_frame = false;

      if (screenshot) {
        // A few settled frames in a row: fonts, layout and table sizes have
        // converged and the view's data is what the store holds.
        settled_frames = app.Settled() ? settled_frames + 1 : 0;
        const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const bool timed_out = waited > 120.0;
        if (settled_frames >= settle_frames || timed_out) {
          std::string error;
          if (!WriteFramebufferPng(options.screenshot_path, fb_w, fb_h, &error)) {
            std::fprintf(stderr, "kiln: %s\n", error.c_str());
            status = 1;
          } else if (app.analysis && !app.analysis->error.empty()) {
            std::fprintf(stderr, "kiln: the query failed (%s); wrote %s showing the error\n",
                         app.analysis->error.c_str(), options.screenshot_path.c_str());
            status = 1;
          } else if (timed_out) {
            std::fprintf(stderr, "kiln: the view did not finish loading within 120 s; wrote %s anyway\n",
                         options.screenshot_path.c_str());
            status = 1;
          }
          break;
        }
      }
      glfwSwapBuffers(window.get());
    }
    if (report_startup && !frame_cpu_ms.empty()) {
      std::sort(frame_cpu_ms.begin(), frame_cpu_ms.end());
      double sum = 0;
      for (double ms : frame_cpu_ms) sum += ms;
      std::fprintf(stderr,
                   "kiln: UI CPU per frame (NewFrame..Render) over %zu frames: mean %.2f ms, p95 %.2f ms, "
                   "max %.2f ms\n",
                   frame_cpu_ms.size(), sum / frame_cpu_ms.size(),
                   frame_cpu_ms[frame_cpu_ms.size() * 95 / 100], frame_cpu_ms.back());
    }
    ImGui_ImplOpenGL3_Shutdown();
    ImGui_ImplGlfw_Shutdown();
  }  // the worker joins here, before the GL context goes away
  ImGui::DestroyContext();
  window.reset();
  glfwTerminate();
  return status;
}

}  // namespace kiln::app
