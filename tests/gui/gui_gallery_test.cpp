// GUI gallery: the states a screenshot of the running app does not reach
// on its own (search highlight, zoom with breadcrumbs, flame orientation,
// off-CPU, the filter popup, an executable's unsymbolized addresses; no
// symbolizer runs here, so statuses read "not attempted"), drawn from the
// real worker over the demo store and checked like the smoke test. PNGs go to
// $KILN_BINARY_DIR/gui_screenshots/gallery-*.png for people to look at.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <thread>

#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <backends/imgui_impl_opengl3_loader.h>
#include <imgui.h>
#include <stb/stb_image.h>

#include "app/demo_profile.h"
#include "app/gui_screenshot.h"
#include "app/gui_worker.h"
#include "app/view_registry.h"
#include "storage/store.h"
#include "tests/gui/test_display.h"
#include "ui/executables_model.h"
#include "ui/frame_colors.h"
#include "ui/header_bar.h"
#include "ui/help_dialogs.h"
#include "ui/status_line.h"
#include "ui/theme.h"
#include "ui/timeline_bar.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

constexpr int kWidth = 1280;
constexpr int kHeight = 800;

// The registered views' titles, in tab order.
std::vector<std::string> RegisteredTitles() {
  std::vector<std::string> titles;
  for (const auto& v : app::CreateViews()) titles.emplace_back(v->Title());
  return titles;
}

// One window, one worker, the registered views; Shoot() draws a state until
// the worker and the view are done and writes a PNG.
class Gallery {
 public:
  explicit Gallery(storage::Store& store) : worker_(store, nullptr, "demo", {}), views_(app::CreateViews()) {
    testing::TestDisplay::Get("gui_gallery_test");
    REQUIRE(glfwInit());
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 2);
    glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
    glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
    glfwWindowHint(GLFW_RESIZABLE, GLFW_FALSE);
    window_ = glfwCreateWindow(kWidth, kHeight, "kiln gallery", nullptr, nullptr);
    REQUIRE(window_ != nullptr);
    glfwMakeContextCurrent(window_);
    ImGui::CreateContext();
    ImGui::GetIO().IniFilename = nullptr;
    ImGui::GetIO().ConfigFlags |= ImGuiConfigFlags_NoMouse;
    fonts_ = ui::ApplyTheme(1.f);
    ImGui_ImplGlfw_InitForOpenGL(window_, true);
    ImGui_ImplOpenGL3_Init("#version 150");
    for (auto& v : views_) view_ptrs_.push_back(v.get());
  }
  ~Gallery() {
    ImGui_ImplOpenGL3_Shutdown();
    ImGui_ImplGlfw_Shutdown();
    ImGui::DestroyContext();
    glfwDestroyWindow(window_);
    glfwTerminate();
  }

  ui::SessionState& session() { return session_; }

  // Draws `view_id` with the current session until settled; `before_header`
  // runs inside the window before the header (e.g. to open a popup).
  std::string Shoot(const std::string& name, const std::string& view_id,
                    const std::function<void()>& before_header = {}) {
    session_.requested_tab = view_id;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    int settled = 0;
    std::string path;
    while (std::chrono::steady_clock::now() < deadline) {
      glfwPollEvents();
      auto status = worker_.LatestStatus();
      auto analysis = worker_.LatestAnalysis();
      if (status) {
        if (session_.window.Empty()) {
          session_.window = ui::PresetRange(ui::TimePreset::kAll, storage::UnixNowNs(),
                                            status->stats.first_sample_ns, status->stats.last_sample_ns);
        }
        ui::AnalysisRequest request = ui::RequestFor(session_);
        ui::AddViewProducts(view_ptrs_, session_, view_id, &request);
        if (!submitted_ || !(request == last_)) {
          generation_ = worker_.Submit(request);
          last_ = request;
          submitted_ = true;
        }
      }
      ImGui_ImplOpenGL3_NewFrame();
      ImGui_ImplGlfw_NewFrame();
      ImGui::NewFrame();
      ImGui::SetNextWindowPos(ImVec2(0, 0));
      ImGui::SetNextWindowSize(ImGui::GetIO().DisplaySize);
      ImGui::Begin("kiln", nullptr, ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoSavedSettings);
      if (before_header) before_header();
      const bool computing = worker_.Busy();
      header_.Draw(view_ptrs_, &active_, session_, status.get(), analysis.get(), computing);
      timeline_.Draw(session_, analysis.get(), session_.window, ImGui::GetFontSize() * 4.6f);
      ImGui::Separator();
      ImGui::BeginChild("##content", ImVec2(0, -ImGui::GetFrameHeightWithSpacing() - 4.f));
      ui::ViewContext context{analysis.get(), status.get(), &session_, computing, fonts_.mono};
      views_[active_]->Draw(context);
      ImGui::EndChild();
      ImGui::Separator();
      ui::DrawStatusLine(session_, status.get(), analysis.get(), computing);
      ImGui::End();
      ImGui::Render();
      int w, h;
      glfwGetFramebufferSize(window_, &w, &h);
      glViewport(0, 0, w, h);
      glClearColor(0.11f, 0.118f, 0.141f, 1.f);
      glClear(GL_COLOR_BUFFER_BIT);
      ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
      const bool done = analysis && analysis->generation == generation_ && !computing &&
                        views_[active_]->Settled() && views_[active_]->Id() == view_id;
      settled = done ? settled + 1 : 0;
      if (settled >= 3) {
        const char* bin = std::getenv("KILN_BINARY_DIR");
        const fs::path dir = fs::path(bin ? bin : fs::temp_directory_path().string()) / "gui_screenshots";
        fs::create_directories(dir);
        path = (dir / ("gallery-" + name + ".png")).string();
        std::string error;
        REQUIRE_MESSAGE(app::WriteFramebufferPng(path, w, h, &error), error);
        glfwSwapBuffers(window_);
        break;
      }
      glfwSwapBuffers(window_);
    }
    REQUIRE_MESSAGE(!path.empty(), "state " << name << " never settled");
    return path;
  }

 private:
  app::GuiWorker worker_;
  std::vector<std::unique_ptr<ui::View>> views_;
  std::vector<ui::View*> view_ptrs_;
  size_t active_ = 0;
  ui::SessionState session_;
  ui::HeaderBar header_;
  ui::TimelineBar timeline_;
  ui::Fonts fonts_;
  GLFWwindow* window_ = nullptr;
  bool submitted_ = false;
  ui::AnalysisRequest last_;
  uint64_t generation_ = 0;
};

struct Pixels {
  int width = 0, height = 0;
  std::vector<ui::Rgba> data;
};

Pixels Load(const std::string& path) {
  Pixels p;
  int channels;
  unsigned char* raw = stbi_load(path.c_str(), &p.width, &p.height, &channels, 4);
  REQUIRE(raw != nullptr);
  for (int i = 0; i < p.width * p.height; ++i)
    p.data.push_back(ui::PackRgba(raw[4 * i], raw[4 * i + 1], raw[4 * i + 2]));
  stbi_image_free(raw);
  return p;
}

// Pixels within `tolerance` (sum of channel differences) of `color`, in
// rows from `first_row` down.
size_t CountNear(const Pixels& p, ui::Rgba color, int tolerance, int first_row = 0) {
  size_t n = 0;
  for (size_t i = static_cast<size_t>(first_row) * p.width; i < p.data.size(); ++i) {
    const ui::Rgba c = p.data[i];
    const int d = std::abs(ui::RedOf(c) - ui::RedOf(color)) + std::abs(ui::GreenOf(c) - ui::GreenOf(color)) +
                  std::abs(ui::BlueOf(c) - ui::BlueOf(color));
    if (d <= tolerance) ++n;
  }
  return n;
}

TEST_CASE("gallery of view states over the demo store") {
  std::string dir = (fs::temp_directory_path() / "kiln-gallery-XXXXXX").string();
  REQUIRE(mkdtemp(dir.data()) != nullptr);
  {
    auto store = storage::Store::Open(dir, storage::Store::Mode::kReadWrite);
    REQUIRE(store.ok());
    REQUIRE((*store)->Write(app::BuildDemoProfile(storage::UnixNowNs())).ok());
    Gallery gallery(**store);

    SUBCASE("search highlights matches and dims the rest") {
      gallery.session().flame_search = "fib";
      ++gallery.session().flame_search_serial;
      const Pixels plain = Load(gallery.Shoot("flame-search", "flamegraph"));
      CHECK(plain.width == kWidth);
      // Python frames ("fib") stay bright; kernel frames are dimmed away.
      CHECK(CountNear(plain, ui::FrameTypeColor(storage::FrameType::kPython), 60) > 2000);
      CHECK(CountNear(plain, ui::FrameTypeColor(storage::FrameType::kKernel), 40) < 300);
    }
    SUBCASE("zoomed, flame orientation, breadcrumbs") {
      gallery.session().flame = true;
      gallery.session().flame_search = "=render_report";
      gallery.session().flame_zoom_to_search = true;
      ++gallery.session().flame_search_serial;
      const Pixels p = Load(gallery.Shoot("flame-zoomed", "flamegraph"));
      CHECK(CountNear(p, ui::FrameTypeColor(storage::FrameType::kPython), 60) > 5000);
    }
    SUBCASE("transforms: focus on a function, shown as a chip") {
      gallery.session().tree.transforms = {*storage::ParseTransform("focus=render_report")};
      const Pixels p = Load(gallery.Shoot("flame-focus", "flamegraph"));
      // render_report is Python calling into native code only: no kernel,
      // Go or JVM frames remain.
      CHECK(CountNear(p, ui::FrameTypeColor(storage::FrameType::kPython), 60) > 5000);
      CHECK(CountNear(p, ui::FrameTypeColor(storage::FrameType::kGo), 20) < 200);
      CHECK(CountNear(p, ui::FrameTypeColor(storage::FrameType::kJvm), 20) < 200);
    }
    SUBCASE("call tree, inverted") {
      gallery.session().tree.transforms = {*storage::ParseTransform("invert")};
      const Pixels p = Load(gallery.Shoot("calltree-inverted", "calltree"));
      std::set<ui::Rgba> colors(p.data.begin(), p.data.end());
      CHECK(colors.size() > 50);
    }
    SUBCASE("sandwich of a recursive function") {
      gallery.session().view_args["sandwich"] = "fib";
      const Pixels p = Load(gallery.Shoot("sandwich", "sandwich"));
      // Python rows (fib and its callers) in both halves.
      CHECK(CountNear(p, ui::FrameTypeColor(storage::FrameType::kPython), 30) > 300);
    }
    SUBCASE("diff: the second half of the demo against the first") {
      // The demo has a burst in its middle: the halves differ for real.
      const storage::StoreStats st = (*store)->Stats();
      const int64_t mid = st.first_sample_ns + (st.last_sample_ns - st.first_sample_ns) / 2;
      gallery.session().baseline.kind = ui::SessionState::Baseline::Kind::kRange;
      gallery.session().baseline.range = {st.first_sample_ns, mid};
      gallery.session().selection = {mid, st.last_sample_ns + 1};
      const Pixels p = Load(gallery.Shoot("diff-halves", "flamegraph"));
      // Clearly red or blue nodes: significant changes drawn as such.
      size_t red = 0, blue = 0;
      for (ui::Rgba c : p.data) {
        red += ui::RedOf(c) > ui::BlueOf(c) + 40 && ui::GreenOf(c) < 190;
        blue += ui::BlueOf(c) > ui::RedOf(c) + 40;
      }
      CHECK(red > 500);
      CHECK(blue > 500);
      // Diff colours, not frame types, in the graph (below the orange
      // timeline): unchanged grey, no native orange.
      CHECK(CountNear(p, ui::DiffColor(0.0), 12, p.height / 4) > 5000);
      CHECK(CountNear(p, ui::FrameTypeColor(storage::FrameType::kNative), 30, p.height / 4) < 200);
      // The baseline (the first half) is hatched on the timeline in violet:
      // neither the bars' orange nor the diff's red and blue.
      size_t violet = 0;
      for (size_t i = 0; i < p.data.size() / 4; ++i) {
        const ui::Rgba c = p.data[i];
        violet += ui::RedOf(c) > ui::GreenOf(c) + 30 && ui::BlueOf(c) > ui::GreenOf(c) + 50;
      }
      CHECK(violet > 300);
      const Pixels top = Load(gallery.Shoot("diff-top", "top"));
      std::set<ui::Rgba> colors(top.data.begin(), top.data.end());
      CHECK(colors.size() > 50);
    }
    SUBCASE("FlameScope heat map of the demo's 15 minutes") {
      const Pixels p = Load(gallery.Shoot("heatmap", "heatmap"));
      // Cells from empty to hot: many distinct shades of the heat colour.
      std::set<ui::Rgba> colors(p.data.begin() + p.width * p.height / 4, p.data.end());
      CHECK(colors.size() > 20);
    }
    SUBCASE("Stack Chart of the demo's off-CPU time: the heaviest thread, each wait over its interval") {
      gallery.session().SetSampleType(storage::OffCpuTime());
      const Pixels p = Load(gallery.Shoot("stackchart-offcpu", "stackchart"));
      // Boxes of many functions below the timeline, not an empty chart.
      std::set<ui::Rgba> colors(p.data.begin() + p.width * p.height / 3, p.data.end());
      CHECK(colors.size() > 20);
    }
    SUBCASE("Spans of the demo's services: requests' traces and spans with their weight") {
      const Pixels p = Load(gallery.Shoot("spans", "spans"));
      // A weight bar per visible row.
      CHECK(CountNear(p, ui::CurrentPalette().total_bar, 8) > 2000);
    }
    SUBCASE("source of a function whose file is not on this machine") {
      gallery.session().view_args["source"] = "fib";
      const Pixels p = Load(gallery.Shoot("source-missing", "source"));
      // "Source not found at /srv/app/report.py" in the error colour.
      const ImVec4 e = ui::CurrentPalette().error_text;
      const ui::Rgba error = ui::PackRgba(static_cast<uint8_t>(e.x * 255), static_cast<uint8_t>(e.y * 255),
                                          static_cast<uint8_t>(e.z * 255));
      CHECK(CountNear(p, error, 60) > 50);
    }
    SUBCASE("off-CPU top functions") {
      gallery.session().sample_type = storage::OffCpuTime();
      const Pixels p = Load(gallery.Shoot("offcpu-top", "top"));
      std::set<ui::Rgba> colors(p.data.begin(), p.data.end());
      CHECK(colors.size() > 50);
    }
    SUBCASE("executables: the unsymbolized addresses of the selected executable") {
      // The demo's postgres has one frame without a name (0x5a3f10).
      ui::SessionState::ExecutableId postgres;
      for (const storage::ExecutableInfo& e : (*store)->Executables()) {
        if (e.file_name == "/usr/bin/postgres") postgres = {e.file_name, e.htlhash, e.gnu_build_id};
      }
      REQUIRE(!postgres.htlhash.empty());
      {  // what the panel lists, straight from a query
        auto slice = (*store)->Run({});
        REQUIRE(slice.ok());
        storage::ExecutableRow row;
        row.file_name = postgres.file_name;
        row.htlhash = postgres.htlhash;
        row.gnu_build_id = postgres.gnu_build_id;
        const auto listed = ui::UnsymbolizedAddresses(**slice, row);
        REQUIRE(listed.size() == 1);
        CHECK(listed[0].address == 0x5a3f10);
        CHECK(listed[0].weight > 0);
      }
      gallery.session().selected_executable = postgres;
      gallery.session().show_unsymbolized = true;
      const Pixels p = Load(gallery.Shoot("executables-unsymbolized", "executables"));
      std::set<ui::Rgba> colors(p.data.begin(), p.data.end());
      CHECK(colors.size() > 50);
    }
    SUBCASE("filter popup lists attribute values") {
      gallery.session().AddFilterValue("process.executable.name", "postgres");
      const Pixels p =
          Load(gallery.Shoot("filter-popup", "executables", [] { ImGui::OpenPopup("##filter_popup"); }));
      std::set<ui::Rgba> colors(p.data.begin(), p.data.end());
      CHECK(colors.size() > 50);
    }
    SUBCASE("Help: Connect an agent and the keyboard shortcuts") {
      bool connect = true, shortcuts = true;
      const Pixels p = Load(gallery.Shoot("help-connect", "flamegraph", [&] {
        ImGui::SetNextWindowPos(ImVec2(40, 60), ImGuiCond_Always);
        ui::DrawConnectDialog(&connect, "0.0.0.0:11000", {"192.0.2.10", "2001:db8::10"}, {}, "kiln-agent");
        ImGui::SetNextWindowPos(ImVec2(ImGui::GetIO().DisplaySize.x - 660, 60), ImGuiCond_Always);
        ui::DrawShortcutsDialog(&shortcuts, RegisteredTitles());
      }));
      CHECK(connect);  // still open: nothing closed them
      CHECK(shortcuts);
      std::set<ui::Rgba> colors(p.data.begin(), p.data.end());
      CHECK(colors.size() > 50);
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kiln
