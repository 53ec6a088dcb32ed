// The desktop window: GLFW + OpenGL 3.2 core + Dear ImGui, the frame loop,
// live follow, --screenshot, and the sources: the live store and every
// opened capture (app/capture_sources.h), switched in the menu bar, with the
// File menu and dropped files, and a symbolizer per source
// (app/symbol_service.h): dropped ELF files go to it, the Executables view
// drives it. Everything slow (loads, exports, imports, queries, symbols)
// runs off this thread; a frame only reads finished results.
//
// Index
//   [SECTION] Clock and window setup (including "no display")
//   [SECTION] Requests: from the session state to the worker
//   [SECTION] One frame: header, timeline, view, status line
//   [SECTION] Menus and keyboard shortcuts
//   [SECTION] RunGui: the loop and --screenshot

#include "app/gui_app.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <backends/imgui_impl_opengl3_loader.h>
#include <imgui.h>

#include "app/capture_sources.h"
#include "app/desktop_settings.h"
#include "app/gui_screenshot.h"
#include "app/gui_worker.h"
#include "app/file_dialogs.h"
#include "app/receiver_control.h"
#include "app/receiver_dialogs.h"
#include "app/store_settings_dialog.h"
#include "app/symbol_requests.h"
#include "app/symbol_service.h"
#include "app/view_registry.h"
#include "app/window_menus.h"
#include "app/window_icon.h"
#include "storage/store.h"
#include "ui/format.h"
#include "ui/header_bar.h"
#include "ui/help_dialogs.h"
#include "ui/source_view.h"
#include "ui/status_line.h"
#include "ui/theme.h"
#include "ui/timeline_bar.h"
#include "ui/widgets.h"

namespace kiln::app {

namespace {

// ===========================================================================
// [SECTION] Clock and window setup (including "no display")
// ===========================================================================

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

// SIGINT/SIGTERM close the window like its close button, so the workers
// join and the temporary stores of opened captures are removed. The loop
// polls this flag (it wakes at least every half second).
volatile std::sig_atomic_t g_quit_signal = 0;
void OnQuitSignal(int) { g_quit_signal = 1; }

// Everything that should make the window draw: input, a worker's result or
// changed status, a capture loaded, a file dialog's answer. An idle wait
// that ends with none of them draws no frame (the window drew four a
// second while nothing changed: 14 % of a core without a GPU).
std::atomic<uint64_t> g_ui_events{0};
void WakeUi() {
  g_ui_events.fetch_add(1);
  glfwPostEmptyEvent();
}
// Counting callbacks, installed before Dear ImGui's, which call them after
// their own.
void CountEvent() { g_ui_events.fetch_add(1, std::memory_order_relaxed); }
void CountCursor(GLFWwindow*, double, double) { CountEvent(); }
void CountButton(GLFWwindow*, int, int, int) { CountEvent(); }
void CountScroll(GLFWwindow*, double, double) { CountEvent(); }
void CountKey(GLFWwindow*, int, int, int, int) { CountEvent(); }
void CountChar(GLFWwindow*, unsigned int) { CountEvent(); }
void CountFlag(GLFWwindow*, int) { CountEvent(); }
void CountRefresh(GLFWwindow*) { CountEvent(); }
void CountSize(GLFWwindow*, int, int) { CountEvent(); }
void CountEvents(GLFWwindow* w) {
  glfwSetCursorPosCallback(w, CountCursor);
  glfwSetMouseButtonCallback(w, CountButton);
  glfwSetScrollCallback(w, CountScroll);
  glfwSetKeyCallback(w, CountKey);
  glfwSetCharCallback(w, CountChar);
  glfwSetWindowFocusCallback(w, CountFlag);
  glfwSetCursorEnterCallback(w, CountFlag);
  glfwSetWindowIconifyCallback(w, CountFlag);
  glfwSetWindowRefreshCallback(w, CountRefresh);
  glfwSetFramebufferSizeCallback(w, CountSize);
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

// The command line's view choices, applied to each source once as it
// appears: transforms, the Sandwich and Source functions and path map, and
// what to compare with (never a source with itself).
void ApplyStartupChoices(const GuiOptions& options, const std::string& source_name, ui::SessionState* session) {
  session->tree.transforms = options.transforms;
  session->off_cpu_drop_kernel = false;
  session->SetSampleType(session->sample_type);  // off-CPU's own chip, beside the command line's
  for (const auto& [key, value] : options.view_args) session->view_args[key] = value;
  if (options.compare == "previous") {
    session->baseline.kind = ui::SessionState::Baseline::Kind::kPreviousPeriod;
  } else if (!options.compare.empty() && options.compare != source_name) {
    session->baseline.kind = ui::SessionState::Baseline::Kind::kSource;
    session->baseline.source = options.compare;
  }
}

// This kiln as samples name it, so the process grouping marks it.
storage::OwnProcess OwnProcess() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = 0;
  return {.pid = std::to_string(getpid()), .host = host};
}

// "Now" for a source: the clock for the live store; the newest sample for a
// capture, so presets ("Last 15m") mean the capture's last 15 minutes.
int64_t SourceNow(const Source& source) {
  if ((source.IsCapture() || source.session.offline) && source.status && source.status->stats.samples > 0) {
    return source.status->stats.last_sample_ns + 1;
  }
  return storage::UnixNowNs();
}


struct App {
  SourceList sources;
  ReceiverControl* receiver;  // may be null or not listening
  std::string data_dir;
  // What every source starts with (--transform, --sandwich, --source,
  // --source-map, --compare); RunGui's options outlive the App.
  const GuiOptions& startup;
  // What the window remembers (app/desktop_settings.h): loaded before the
  // window opens, written when it closes (never by --screenshot).
  DesktopSettings settings;
  std::string trace_url;  // what the views open a trace with (--trace-url, else the preference)
  SettingsPaths settings_paths;
  bool restyle_requested = false;  // theme or scale changed: rebuilt between frames
  bool quit_requested = false;     // File > Quit, Ctrl+Q
  bool show_shortcuts = false, show_data_quality = false;
  std::vector<std::unique_ptr<ui::View>> views;
  std::vector<ui::FunctionAction> function_actions;  // every view's, for the right-click menu
  // The window's keys for these views (ui::WindowKeys), built once.
  std::vector<ui::WindowKey> window_keys;
  std::vector<ui::View*> view_ptrs;
  size_t active_view = 0;
  ui::HeaderBar header;
  ui::TimelineBar timeline;
  ui::Fonts fonts;

  int timeline_buckets = 300;
  bool empty_help_drawn = false;            // the content area showed the empty-store help
  bool freeze_after_first_request = false;  // --screenshot
  std::vector<std::string> dropped;         // paths from the drop callback, opened next frame
  // One symbolizer per source's store, destroyed before the sources (member
  // order) and before a capture is closed.
  SymbolSourceOptions symbol_options;
  storage::Store* main_store;    // the data dir's store, whose symbolizer answers `kiln symbols add`
  std::string main_request_dir;  // SymbolRequestDir of the data dir
  std::map<storage::Store*, std::unique_ptr<SymbolService>> symbolizers;
  ui::ViewContext::Requests view_requests;
  ui::SymbolActivity symbol_activity;
  StoreSettingsDialog store_settings{{.store = main_store,
                                      .data_dir = data_dir,
                                      .settings = &settings,
                                      .paths = &settings_paths,
                                      .notify = [this](bool error, const std::string& text) {
                                        sources.Notify(error, text);
                                      }}};

  // Connect an agent, About, and the status line's receiver changes.
  ReceiverDialogs receiver_dialogs{{.receiver = receiver,
                                    .store = main_store,
                                    .data_dir = data_dir,
                                    .saved_token_file = startup.saved_token_file,
                                    .settings = &settings,
                                    .paths = &settings_paths,
                                    .notify = [this](bool error, const std::string& text) {
                                      sources.Notify(error, text);
                                    }}};

  // File > Open, Add symbols, Export and Save PNG (app/file_dialogs.h).
  FileDialogs dialogs{{.open = [this](const std::string& path) { OpenPath(path); },
                       .add_symbols = [this](const std::string& path) { AddSymbolFile(path); },
                       .log =
                           [this](const std::string& message) {
                             (void)main_store->AppendLog(storage::LogLevel::kInfo, message);
                           }},
                      [] { WakeUi(); }};

  App(storage::Store& s, ReceiverControl* receiver, const GuiOptions& options, const DesktopSettings& loaded,
      const SettingsPaths& paths)
      : sources(s, receiver, options.data_dir, [] { WakeUi(); }),
        receiver(receiver),
        data_dir(options.data_dir),
        startup(options),
        settings(loaded),
        trace_url(options.trace_url.empty() ? loaded.trace_url : options.trace_url),
        settings_paths(paths),
        views(CreateViews()),
        window_keys(ui::WindowKeys(views.size())),
        main_store(&s) {
    for (auto& v : views) {
      view_ptrs.push_back(v.get());
      for (ui::FunctionAction& action : v->FunctionActions()) function_actions.push_back(std::move(action));
    }
    for (size_t i = 0; i < views.size(); ++i) {
      const std::string& tab = options.tab.empty() ? settings.tab : options.tab;
      if (!tab.empty() && views[i]->Id() == tab) active_view = i;
    }
    // The tab bar owns the selection; ask it, as the other views do.
    sources.Current().session.requested_tab = std::string(views[active_view]->Id());
    if (options.demo) {
      // The demo is a static recording: shown whole, never as LIVE data
      // whose window slides (its totals would shrink as the user works).
      ui::SessionState& demo = sources.Current().session;
      demo.offline = true;
      demo.offline_label = "demo";
      sources.Current().name = "Demo (temporary store)";
      demo.preset = ui::TimePreset::kAll;
    }
    symbol_options.debug_dirs = options.debug_dirs;
    symbol_options.debuginfod_urls = DebuginfodUrls(options.debuginfod_urls);
    // Retention chosen in Store settings, unless the command line chose.
    if (!options.demo) {
      const absl::Status saved = ApplySavedRetention(main_store, settings, options.retention_age_given,
                                                     options.retention_size_given);
      if (!saved.ok()) sources.Notify(true, "Settings: " + std::string(saved.message()));
    }
    main_request_dir = SymbolRequestDir(options.data_dir);
    for (const std::string& path : options.open_files) OpenPath(path);
  }
  ~App() {
    // Before the symbolizers go: a scrape in progress finishes first.
    if (startup.metrics_symbolizer) startup.metrics_symbolizer->Set(nullptr);
  }
  App(const App&) = delete;
  App& operator=(const App&) = delete;

  // A symbolizer for every source that has none yet (new captures).
  void StartSymbolizers() {
    for (const auto& source : sources.sources()) {
      if (!source->store || symbolizers.count(source->store)) continue;
      GuiWorker* worker = source->worker.get();
      SymbolSourceOptions source_options = symbol_options;
      if (source->store == main_store) source_options.request_dir = main_request_dir;
      auto& service = symbolizers[source->store] =
          std::make_unique<SymbolService>(*source->store, source_options, [worker] {
            worker->RefreshStatus();  // new statuses and SymbolsVersion: the views query again
            WakeUi();
          });
      if (source->store == main_store && startup.metrics_symbolizer) startup.metrics_symbolizer->Set(service.get());
    }
  }
  SymbolService* Symbolizer() {
    auto it = symbolizers.find(Src().store);
    return it == symbolizers.end() ? nullptr : it->second.get();
  }
  void CloseSource(size_t index) {
    if (index == 0 || index >= sources.sources().size()) return;
    symbolizers.erase(sources.sources()[index]->store);  // joins before the store goes
    sources.Close(index);
  }
  // Hands an ELF file to the shown source's symbolizer; false when that
  // source has none.
  bool AddSymbolFile(const std::string& path) {
    StartSymbolizers();
    SymbolService* s = Symbolizer();
    if (s) s->AddFiles({path});
    return s != nullptr;
  }
  // A file from Open..., the command line or a drop: ELF files are symbols
  // for the shown source, anything else a capture.
  void OpenPath(const std::string& path) {
    if (IsElfFile(path) && AddSymbolFile(path)) return;
    std::error_code ec;
    const auto absolute = std::filesystem::absolute(path, ec);
    AddRecentCapture(&settings, ec ? path : absolute.lexically_normal().string());
    sources.Open(path, settings.demangle);
  }

  Source& Src() { return sources.Current(); }
  const Source& Src() const { return sources.Current(); }
  bool Current() const {
    const Source& s = Src();
    return s.analysis && s.analysis->generation == s.submitted_generation;
  }

  // Frame start: adopt finished loads and the newest snapshots, move the
  // live window, submit a new request when anything it depends on changed.
  void Update() {
    for (const std::string& path : dropped) OpenPath(path);
    dropped.clear();
    dialogs.TakeAnswers();
    const size_t before = sources.selected();
    sources.Poll();
    StartSymbolizers();
    for (const auto& [store, service] : symbolizers) {
      for (const AddFileOutcome& o : service->TakeOutcomes())
        sources.Notify(!o.ok, "Symbols from " + o.path + ": " + o.message);
    }
    if (SymbolService* s = Symbolizer()) {
      const SymbolProgress p = s->Progress();
      symbol_activity = {p.busy, p.executable, p.source, p.fraction, p.queued};
    } else {
      symbol_activity = {};
    }
    sources.ExpireNotices(std::chrono::steady_clock::now());
    if (sources.selected() != before) {
      // A new source starts on the tab the user is on.
      Src().session.requested_tab = std::string(views[active_view]->Id());
    }
    Source& src = Src();
    src.analysis = src.worker->LatestAnalysis();
    src.status = src.worker->LatestStatus();
    ui::SessionState& session = src.session;
    // Flame/icicle and inline frames are preferences of the window, the
    // same for every source (DrawFrame keeps the two in step).
    session.flame = settings.flame;
    session.tree.show_inline = settings.show_inline;
    if (!std::exchange(src.startup_choices_applied, true)) {
      ApplyStartupChoices(startup, src.name, &session);
      // Only the live store can hold this very process (a capture's pid is
      // another run's).
      if (!src.IsCapture()) session.tree.own = OwnProcess();
    }
    if (!src.status) return;  // the window and the first query need the store's time range
    const int64_t now = SourceNow(src);
    const auto& stats = src.status->stats;
    if (!src.session_initialized && stats.samples > 0) {
      // A store whose data is older than the default preset opens on All,
      // not on an empty 15 minutes. An empty store decides when its first
      // data arrives: an agent's is recent, an imported capture's may not be.
      if (stats.last_sample_ns < now - 15 * 60 * ui::kNsPerSecond && session.live) {
        session.preset = ui::TimePreset::kAll;
        session.window = {};
      }
      src.session_initialized = true;
    }
    // A screenshot captures one moment: after the first request the window
    // stops following, or a busy agent could keep it computing forever.
    const bool frozen = freeze_after_first_request && src.has_request;
    if (session.live && !frozen) {
      // The window slides in steps of 1% of its span (at least 2 s): a
      // re-query of a big selection is not free, and a step that small is
      // invisible. New data re-queries at once through data_version.
      const ui::TimeRange span =
          ui::PresetRange(session.preset, now, stats.first_sample_ns, stats.last_sample_ns);
      const int64_t step = std::max(kLiveStepNs, span.Span() / 100);
      const int64_t now_step = src.IsCapture() ? now : (now / step + 1) * step;
      session.window = ui::PresetRange(session.preset, now_step, stats.first_sample_ns, stats.last_sample_ns);
      src.data_version = stats.data_version;  // written or deleted: query again
    } else if (session.window.Empty()) {
      session.window = ui::PresetRange(session.preset, now, stats.first_sample_ns, stats.last_sample_ns);
    }
    ui::AnalysisRequest request = ui::RequestFor(session, src.data_version, timeline_buckets);
    ui::AddViewProducts(view_ptrs, session, views[active_view]->Id(), &request);
    request.symbols_version = src.status->symbols_version;
    if (session.baseline.kind == ui::SessionState::Baseline::Kind::kSource && request.baseline) {
      // Another source as the baseline: its store and data version; a
      // closed one ends the comparison.
      const Source* other = nullptr;
      for (const auto& s : sources.sources()) {
        if (s->name == session.baseline.source && s.get() != &src) other = s.get();
      }
      if (other == nullptr) {
        session.baseline = {};
        request.baseline.reset();
      } else {
        request.baseline->store = other->shared_store;
        request.baseline->data_version = other->data_version;
      }
    }
    if (!src.has_request || !(request == src.last_request)) {
      src.submitted_generation = src.worker->Submit(request);
      src.last_request = request;
      src.has_request = true;
    }
  }

  // Limit for timeline wheel zoom: the preset window joined with the data.
  ui::TimeRange ZoomLimit() const {
    const Source& src = Src();
    const int64_t now = SourceNow(src);
    ui::TimeRange limit =
        ui::PresetRange(ui::TimePreset::kAll, now, src.status ? src.status->stats.first_sample_ns : 0,
                        src.status ? src.status->stats.last_sample_ns : 0);
    limit.from_ns = std::min(limit.from_ns, src.session.window.from_ns);
    limit.to_ns = std::max({limit.to_ns, src.session.window.to_ns, now});
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
                                   ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoBringToFrontOnFocus |
                                   ImGuiWindowFlags_MenuBar;
    ImGui::Begin("kiln", nullptr, flags);
    HandleShortcuts();
    DrawMenus();
    Source& src = Src();
    const bool computing = src.worker->Busy();
    header.Draw(view_ptrs, &active_view, src.session, src.status.get(), src.analysis.get(), computing);
    DrawLoadsAndNotices();

    const float em = ImGui::GetFontSize();
    const float timeline_h = em * 4.6f;
    if (!src.session.untimed) {  // an untimed capture has no timeline: its facts are in the header
      timeline.Draw(src.session, src.analysis.get(), ZoomLimit(), timeline_h);
      timeline_buckets = std::clamp(static_cast<int>(ImGui::GetItemRectSize().x / 4.f), 60, 600);
    }
    ImGui::Separator();

    const float status_h = ImGui::GetFrameHeightWithSpacing() + ImGui::GetStyle().ItemSpacing.y;
    ImGui::BeginChild("##content", ImVec2(0, -status_h), false);
    ui::View* view = views[active_view].get();
    ui::ViewContext context;
    context.analysis = src.analysis.get();
    context.status = src.status.get();
    context.session = &src.session;
    context.computing = computing;
    context.mono_font = fonts.mono;
    context.symbols = &symbol_activity;
    context.requests = &view_requests;
    std::vector<std::string> other_sources;
    for (const auto& s : sources.sources()) {
      if (s.get() != &src) other_sources.push_back(s->name);
    }
    context.other_sources = &other_sources;
    context.function_actions = &function_actions;
    context.trace_url = &trace_url;
    // The view draws with the window's preferences (the menu may have just
    // changed them, or switched the source) and its toggles go back to them.
    src.session.flame = settings.flame;
    src.session.tree.show_inline = settings.show_inline;
    const bool empty_store = src.status && src.status->stats.samples == 0;
    if (empty_store && view->Id() != "log") {
      if (ui::DrawEmptyStoreHelp(src.status.get(), receiver_dialogs.local_agent())) receiver_dialogs.OpenConnect();
      empty_help_drawn = true;
    } else {
      view->Draw(context);
      empty_help_drawn = false;
      settings.flame = src.session.flame;
      settings.show_inline = src.session.tree.show_inline;
    }
    if (SymbolService* s = Symbolizer()) {
      for (const std::string& key : view_requests.retry_symbol_keys) s->Retry(key);
    }
    view_requests.retry_symbol_keys.clear();
    if (std::exchange(view_requests.add_symbol_files, false)) dialogs.RequestAddSymbols();
    if (std::exchange(view_requests.show_shortcuts, false)) show_shortcuts = true;
    if (std::optional<std::string> url = std::exchange(view_requests.trace_url, std::nullopt)) {
      trace_url = *url;
      settings.trace_url = *url;  // saved as the window closes, with the rest
    }
    ImGui::EndChild();
    ImGui::Separator();
    const ui::StatusLineActions change =
        ui::DrawStatusLine(src.session, src.status.get(), src.analysis.get(), computing, &symbol_activity);
    receiver_dialogs.Change(change.receiver);
    if (change.open_data_quality) show_data_quality = true;
    if (change.open_store_settings && !src.IsCapture() && !startup.demo) store_settings.Open();
    ui::DrawDataQualityDialog(&show_data_quality, src.status.get(), src.session);
    DrawDialogs();
    store_settings.Draw(sources.sources().front()->status.get());
    ImGui::End();
    DrawNotices();
    DrawHelpWindows();
  }

  // =========================================================================
  // [SECTION] Menus and keyboard shortcuts
  // =========================================================================

  std::vector<std::string> ViewTitles() const {
    std::vector<std::string> titles;
    for (const auto& v : views) titles.emplace_back(v->Title());
    return titles;
  }
  // The keys come from one table (ui::WindowKeys), which the shortcut
  // list shows too.
  void HandleShortcuts() {
    for (const ui::WindowKey& k : PressedWindowKeys(window_keys)) {
      switch (k.command) {
        case ui::WindowCommand::kShortcuts:
          show_shortcuts = !show_shortcuts;
          break;
        case ui::WindowCommand::kOpen:
          dialogs.RequestOpen();
          break;
        case ui::WindowCommand::kExport:
          if (Src().analysis && Src().analysis->slice) dialogs.RequestExport();
          break;
        case ui::WindowCommand::kQuit:
          quit_requested = true;
          break;
        case ui::WindowCommand::kSearch:
          Src().session.focus_search = true;
          Src().session.requested_tab = "flamegraph";
          break;
        case ui::WindowCommand::kShowView:
          Src().session.requested_tab = std::string(views[static_cast<size_t>(k.view)]->Id());
          break;
      }
    }
  }

  void DrawHelpWindows() {
    if (show_shortcuts) ui::DrawShortcutsDialog(&show_shortcuts, ViewTitles());  // titles only when shown
    receiver_dialogs.Draw();
  }

  // The menu bar (app/window_menus.h), then what the user picked in it.
  // Dialog requests are recorded here and opened at window level (a popup
  // opened inside a menu would belong to the menu's ID stack).
  void DrawMenus() {
    MenuFacts facts{.can_export = Src().analysis && Src().analysis->slice,
                    .demo = startup.demo,
                    .selected = sources.selected()};
    for (const auto& source : sources.sources()) {
      facts.sources.push_back({source->name, source->IsCapture() ? source->path : std::string()});
    }
    const MenuChoices c = DrawMenuBar(facts, &settings);
    if (c.open) dialogs.RequestOpen();
    if (!c.open_recent.empty()) OpenPath(c.open_recent);
    if (c.add_symbols) dialogs.RequestAddSymbols();
    if (c.store_settings) store_settings.Open();
    if (c.import_into_store) sources.ImportIntoLive(Src().path);
    if (c.export_view) dialogs.RequestExport();
    if (c.save_png) dialogs.RequestPng();
    if (c.close_capture) CloseSource(sources.selected());
    if (c.quit) quit_requested = true;
    if (c.source) sources.Select(*c.source);
    if (c.connect) receiver_dialogs.OpenConnect();
    if (c.data_quality) show_data_quality = true;
    if (c.shortcuts) show_shortcuts = true;
    if (c.about) receiver_dialogs.OpenAbout();
    if (c.restyle) restyle_requested = true;
  }

  // Progress bars with Cancel for loads in flight, then the newest notice.
  void DrawLoadsAndNotices() {
    const float em = ImGui::GetFontSize();
    for (const auto& load : sources.loads()) {
      const CaptureLoadProgress p = load->Progress();
      ImGui::PushID(load.get());
      ImGui::Text("Opening %s", DisplayName(load->path()).c_str());
      ImGui::SameLine();
      char overlay[160];
      if (p.writing) {
        std::snprintf(overlay, sizeof overlay, "%s samples read; writing into a temporary store...",
                      ui::FormatCount(p.samples).c_str());
      } else if (p.bytes_total == 0) {
        std::snprintf(overlay, sizeof overlay, "reading the file...");
      } else {
        std::snprintf(overlay, sizeof overlay, "%s of %s, %s samples", ui::FormatBytes(p.bytes_done).c_str(),
                      ui::FormatBytes(p.bytes_total).c_str(), ui::FormatCount(p.samples).c_str());
      }
      const float fraction =
          p.writing ? 1.f : (p.bytes_total ? static_cast<float>(p.bytes_done) / p.bytes_total : 0.f);
      ImGui::ProgressBar(fraction, ImVec2(em * 30.f, 0), overlay);
      ImGui::SameLine();
      if (ImGui::SmallButton("Cancel")) load->Cancel();
      ImGui::PopID();
    }
    for (const auto& task : sources.tasks()) {
      ui::Spinner();
      ImGui::SameLine();
      ImGui::TextDisabled("%s...", task->what().c_str());
    }
  }

  // The newest notices in one place: a panel over the bottom-right corner,
  // above the status line, that moves nothing when it comes or goes (they
  // stacked above the timeline and pushed the views down). Errors in red
  // stay until their x; other notices go by themselves (kInfoNoticeSeconds).
  // Every one is in the Log too.
  void DrawNotices() {
    const auto& notices = sources.notices();
    if (notices.empty()) return;
    const float em = ImGui::GetFontSize();
    const ImGuiViewport* viewport = ImGui::GetMainViewport();
    const ImVec2 corner(viewport->WorkPos.x + viewport->WorkSize.x - em * 0.6f,
                        viewport->WorkPos.y + viewport->WorkSize.y - em * 2.4f);
    ImGui::SetNextWindowPos(corner, ImGuiCond_Always, ImVec2(1.f, 1.f));
    ImGui::SetNextWindowBgAlpha(0.96f);
    const ImGuiWindowFlags flags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_AlwaysAutoResize |
                                   ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoFocusOnAppearing |
                                   ImGuiWindowFlags_NoNav | ImGuiWindowFlags_NoMove;
    if (ImGui::Begin("##notices", nullptr, flags)) {
      constexpr size_t kShown = 3;
      const size_t first = notices.size() > kShown ? notices.size() - kShown : 0;
      std::optional<size_t> dismiss;
      ImGui::PushTextWrapPos(em * 34);
      for (size_t i = notices.size(); i-- > first;) {  // newest on top
        const Notice& n = notices[i];
        ImGui::PushID(static_cast<int>(i));
        if (ImGui::SmallButton("x")) dismiss = i;
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("Dismiss (it stays in the Log)");
        ImGui::SameLine();
        ImGui::PushStyleColor(ImGuiCol_Text, n.error ? ui::CurrentPalette().error_text : ui::CurrentPalette().info_text);
        ImGui::TextUnformatted(n.text.c_str());
        ImGui::PopStyleColor();
        ImGui::PopID();
      }
      ImGui::PopTextWrapPos();
      if (first > 0) {
        ImGui::TextDisabled("%zu older in the Log", first);
        ImGui::SameLine();
      }
      if (notices.size() > 1 && ImGui::SmallButton("Dismiss all")) sources.DismissNotices();
      if (dismiss) sources.DismissNotice(*dismiss);
    }
    ImGui::End();
  }

  void DrawDialogs() {
    dialogs.Draw(views[active_view]->Id(), [this] {
      const Source& src = Src();
      const ui::TimeRange range = src.session.QueryRange();
      char summary[512];
      std::snprintf(summary, sizeof summary, "what the view shows: %s, %s, %s - %s (%s), %zu filter key%s",
                    src.name.c_str(), storage::SampleTypeLabel(src.session.sample_type).c_str(),
                    ui::FormatDateTime(range.from_ns).c_str(), ui::FormatDateTime(range.to_ns).c_str(),
                    ui::FormatDuration(range.Span()).c_str(), src.session.filters.size(),
                    src.session.filters.size() == 1 ? "" : "s");
      return ExportTarget{summary, [this](capture::ExportFormat format, const std::string& path) {
                            const Source& s = Src();
                            sources.Export(s.analysis ? s.analysis->slice : nullptr, s.shared_store,
                                           s.analysis ? s.analysis->request.query : storage::Query{}, format,
                                           s.session.tree, path);
                          }};
    });
  }

  // After rendering: reads the framebuffer for a requested PNG once the
  // dialog has gone; the encoding and the write run as a task.
  void MaybeSavePng(int fb_w, int fb_h) {
    const std::optional<std::string> png = dialogs.TakePngToSave();
    if (!png) return;
    auto pixels = std::make_shared<const std::vector<unsigned char>>(ReadFramebufferRgba(fb_w, fb_h));
    const std::string path = *png;
    sources.RunTask("Saving " + path, [pixels, path, fb_w, fb_h]() -> absl::StatusOr<std::string> {
      std::string error;
      if (!WriteRgbaPng(path, fb_w, fb_h, *pixels, &error)) return absl::UnavailableError(error);
      std::error_code ec;
      const auto absolute = std::filesystem::absolute(path, ec);
      return "Saved " + (ec ? path : absolute.string());
    });
  }

  // Something is moving that the window should follow at a frame rate: a
  // query, a capture loading, symbols arriving, a PNG about to be saved.
  bool Busy() const {
    return Src().worker->Busy() || sources.Busy() || symbol_activity.busy || dialogs.PngPending();
  }
  // Whether the active view shows its final data (for --screenshot).
  bool Settled() const {
    const Source& src = Src();
    if (sources.Busy()) return false;  // captures from the command line are still loading
    if (const auto it = symbolizers.find(src.store); it != symbolizers.end() && !it->second->Idle())
      return false;  // symbols are still arriving
    if (!src.status || !src.has_request) return false;
    // Symbols stored since the last status poll: the views will query again.
    if (src.store && src.status->symbols_version != src.store->SymbolsVersion()) return false;
    if (empty_help_drawn) return true;
    if (Current() && !src.analysis->error.empty()) return true;  // the error is what there is to show
    return Current() && !src.worker->Busy() && views[active_view]->Settled();
  }
};

void OnDrop(GLFWwindow* window, int count, const char** paths) {
  auto* app = static_cast<App*>(glfwGetWindowUserPointer(window));
  if (!app) return;
  for (int i = 0; i < count; ++i) app->dropped.emplace_back(paths[i]);
  CountEvent();
}

}  // namespace

// ===========================================================================
// [SECTION] RunGui: the loop and --screenshot
// ===========================================================================

int RunGui(storage::Store& store, ReceiverControl* receiver, const GuiOptions& options) {
  const bool screenshot = !options.screenshot_path.empty();
  // A screenshot shows the user's preferences (theme, scale) but is a
  // one-shot: it writes no settings and no imgui.ini.
  const SettingsPaths settings_paths = DefaultSettingsPaths();
  std::vector<std::string> settings_problems;
  const DesktopSettings settings = LoadSettings(settings_paths, &settings_problems);
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
  // The X11 class matches kiln.desktop's StartupWMClass, so the task bar
  // groups the window under Kiln's menu entry and icon.
  glfwWindowHintString(GLFW_X11_CLASS_NAME, "kiln");
  glfwWindowHintString(GLFW_X11_INSTANCE_NAME, "kiln");
  if (screenshot) glfwWindowHint(GLFW_RESIZABLE, GLFW_FALSE);
  // --size wins; else the size the window had when it last closed.
  int width = options.width, height = options.height;
  if (!options.size_given && settings.window_width > 0) {
    width = settings.window_width;
    height = settings.window_height;
  }
  const bool place = !screenshot && settings.window_x != DesktopSettings::kUnset;
  if (place) glfwWindowHint(GLFW_VISIBLE, GLFW_FALSE);  // moved before it is shown
  std::unique_ptr<GLFWwindow, WindowDeleter> window(
      glfwCreateWindow(width, height, options.demo ? "Kiln (demo)" : "Kiln", nullptr, nullptr));
  if (!window) {
    ReportNoWindow("no OpenGL 3.2 context");
    glfwTerminate();
    return 1;
  }
  if (place) {
    glfwSetWindowPos(window.get(), settings.window_x, settings.window_y);
    glfwShowWindow(window.get());
  }
  if (!screenshot && settings.window_maximized) glfwMaximizeWindow(window.get());
  SetWindowIcon(window.get());
  glfwMakeContextCurrent(window.get());
  glfwSwapInterval(screenshot ? 0 : 1);

  // HiDPI: the monitor's content scale sizes fonts and paddings.
  // KILN_UI_SCALE overrides it (X11 desktops that do not report one).
  // The View menu's scale comes between the two.
  float monitor_scale = 1.f, scale_y = 1.f;
  glfwGetWindowContentScale(window.get(), &monitor_scale, &scale_y);
  auto ui_scale = [monitor_scale](const DesktopSettings& s) {
    if (const char* env = std::getenv("KILN_UI_SCALE")) return static_cast<float>(std::atof(env));
    return s.ui_scale > 0.f ? s.ui_scale : monitor_scale;
  };

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  // imgui.ini (table columns, dialog sizes) in the state folder, never in
  // the current one.
  io.IniFilename = nullptr;
  if (!screenshot) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(settings_paths.imgui_ini).parent_path(), ec);
    if (!ec) io.IniFilename = settings_paths.imgui_ini.c_str();
  }
  io.ConfigFlags |= ImGuiConfigFlags_NavEnableKeyboard;
  // A screenshot shows the data, not whatever the pointer happens to hover.
  if (screenshot) io.ConfigFlags |= ImGuiConfigFlags_NoMouse;
  int status = 0;
  {
    App app(store, receiver, options, settings, settings_paths);
    for (const std::string& problem : settings_problems) app.sources.Notify(true, "Settings: " + problem);
    app.freeze_after_first_request = screenshot;
    app.fonts = ui::ApplyTheme(ui_scale(app.settings), app.settings.theme == Theme::kLight);
    CountEvents(window.get());
    ImGui_ImplGlfw_InitForOpenGL(window.get(), true);
    ImGui_ImplOpenGL3_Init("#version 150");
    glfwSetWindowUserPointer(window.get(), &app);
    glfwSetDropCallback(window.get(), OnDrop);

    const auto start = std::chrono::steady_clock::now();
    int settled_frames = 0;
    bool first_frame = true;
    bool second_frame = false;
    uint64_t seen_events = 0;  // g_ui_events when the last Update() began
    const bool report_startup = std::getenv("KILN_REPORT_STARTUP") != nullptr;
    bool reported_settled = false;
    std::vector<double> frame_cpu_ms;  // UI CPU of frames after the data was drawn
    // Benchmarks ask for more frames before the capture to average over.
    const char* settle_env = std::getenv("KILN_SETTLE_FRAMES");
    const int settle_frames = settle_env ? std::max(3, std::atoi(settle_env)) : 3;
    struct sigaction quit {
    }, old_int{}, old_term{};
    quit.sa_handler = OnQuitSignal;
    sigemptyset(&quit.sa_mask);
    sigaction(SIGINT, &quit, &old_int);
    sigaction(SIGTERM, &quit, &old_term);
    while (!glfwWindowShouldClose(window.get()) && !g_quit_signal && !app.quit_requested) {
      if (std::exchange(app.restyle_requested, false)) {
        // Between frames: new fonts need a new texture.
        app.fonts = ui::ApplyTheme(ui_scale(app.settings), app.settings.theme == Theme::kLight);
        ImGui_ImplOpenGL3_DestroyFontsTexture();
        ImGui_ImplOpenGL3_CreateFontsTexture();
      }
      // Idle at a few frames per second, but animate promptly while the
      // worker computes; the worker wakes us when a result lands.
      // ImGui settles some changes (tab switches, popups) one frame after
      // the input, so every wake-up draws two frames back to back.
      // A wake counts from the moment the last Update() began reading the
      // workers: a result that landed while that frame was drawn (a fast
      // query sent by it) draws the next one. Counted from just before the
      // wait, it was lost, and the window showed "Loading..." until the
      // mouse moved.
      bool draw = true;
      if (first_frame || screenshot || second_frame) {
        glfwPollEvents();
        second_frame = false;
      } else {
        const bool busy = app.Busy();
        glfwWaitEventsTimeout(busy ? 1.0 / 30 : 0.5);
        draw = busy || g_ui_events.load() != seen_events;
        second_frame = draw;
      }
      seen_events = g_ui_events.load();
      const size_t notices = app.sources.notices().size();
      app.Update();
      // Nothing happened: the update may still have found due work (the
      // live window's next step sends a query: busy) or let a notice
      // expire; otherwise no frame. The wait still ends every half second,
      // for the quit signal and the live window's steps.
      if (!draw && !app.Busy() && app.sources.notices().size() == notices) continue;
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
      const ui::Rgba background = ui::CurrentPalette().background;
      glClearColor(ui::RedOf(background) / 255.f, ui::GreenOf(background) / 255.f, ui::BlueOf(background) / 255.f,
                   1.f);
      glClear(GL_COLOR_BUFFER_BIT);
      ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
      app.MaybeSavePng(fb_w, fb_h);
      // Startup figures for the benchmark (README): first frame, first
      // frame with the view's data, and RSS at each.
      if (report_startup && (first_frame || !reported_settled)) {
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        if (first_frame) {
          std::fprintf(stderr, "kiln: first frame after %.1f ms, RSS %.1f MB\n", ms, ResidentMegabytes());
        } else if (app.Settled()) {
          std::fprintf(
              stderr, "kiln: view drawn with its data after %.1f ms, RSS %.1f MB (%zu tree nodes)\n", ms,
              ResidentMegabytes(),
              app.Src().analysis && app.Src().analysis->tree ? app.Src().analysis->tree->nodes.size() : 0);
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
          } else if (const auto error = std::find_if(app.sources.notices().begin(), app.sources.notices().end(),
                                                     [](const Notice& n) { return n.error; });
                     error != app.sources.notices().end()) {
            // A file on the command line that did not open (the notice
            // names it and why): the picture shows the error, and the exit
            // says it to a script.
            std::fprintf(stderr, "kiln: %s; wrote %s showing the error\n", error->text.c_str(),
                         options.screenshot_path.c_str());
            status = 1;
          } else if (app.Src().analysis && !app.Src().analysis->error.empty()) {
            std::fprintf(stderr, "kiln: the query failed (%s); wrote %s showing the error\n",
                         app.Src().analysis->error.c_str(), options.screenshot_path.c_str());
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
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    if (!screenshot) {
      DesktopSettings& s = app.settings;
      s.window_maximized = glfwGetWindowAttrib(window.get(), GLFW_MAXIMIZED) == GLFW_TRUE;
      if (!s.window_maximized) {  // a maximized window keeps the size to restore to
        glfwGetWindowPos(window.get(), &s.window_x, &s.window_y);
        glfwGetWindowSize(window.get(), &s.window_width, &s.window_height);
      }
      s.tab = std::string(app.views[app.active_view]->Id());
      if (const std::string error = SaveSettings(settings_paths, s); !error.empty()) {
        std::fprintf(stderr, "kiln: settings not saved: %s\n", error.c_str());
        (void)store.AppendLog(storage::LogLevel::kWarning, "Settings not saved: " + error);
      }
    }
    glfwSetDropCallback(window.get(), nullptr);
    glfwSetWindowUserPointer(window.get(), nullptr);
    ImGui_ImplOpenGL3_Shutdown();
    ImGui_ImplGlfw_Shutdown();
  }  // the workers and loads join here, before the GL context goes away
  ImGui::DestroyContext();
  window.reset();
  glfwTerminate();
  return status;
}

}  // namespace kiln::app
