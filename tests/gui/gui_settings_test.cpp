// Kiln behaves like a desktop application: the real `kiln` window under a
// display (its own Xvfb when DISPLAY is unset) shows Kiln's icon and X11
// class to the window manager, keeps its settings in the XDG folders (never
// the current one), and comes back with the size, position, tab, recent
// captures and theme it was closed with. A --screenshot run reads the
// preferences but writes nothing.
//
// Without a display it prints why and exits 77 (ctest: skipped).
#include <doctest/doctest.h>
#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#define KILN_TEST_NAME "gui_settings_test"
#include "tests/gui/screenshot_checks.h"
// Xlib last (its macros break the headers above).
#include "tests/gui/x11_window.h"

namespace kiln {
namespace {

using Clock = std::chrono::steady_clock;

// XDG folders of the test's own, so the user's settings are neither read
// nor touched; kiln inherits them.
struct XdgHome {
  XdgHome() : root(MakeTempDir()) {
    setenv("XDG_CONFIG_HOME", (root + "/config").c_str(), 1);
    setenv("XDG_STATE_HOME", (root + "/state").c_str(), 1);
  }
  ~XdgHome() { fs::remove_all(root); }
  std::string settings() const { return root + "/config/kiln/settings.ini"; }
  std::string state() const { return root + "/state/kiln/state.ini"; }
  std::string imgui() const { return root + "/state/kiln/imgui.ini"; }
  std::string root;
};

struct WindowFacts {
  Window window = 0;
  std::string wm_class;  // instance "/" class
  std::vector<std::pair<long, long>> icon_sizes;
};

// Waits for kiln's window and reads what a window manager reads from it.
WindowFacts WaitForWindow(Display* d) {
  WindowFacts f;
  const Atom net_wm_icon = XInternAtom(d, "_NET_WM_ICON", False);
  f.window = testing::WaitForKilnWindow(d);
  if (!f.window) return f;
  // Class and icon are set right after the window is created; give kiln a
  // moment to get there.
  for (auto deadline = Clock::now() + std::chrono::seconds(20); Clock::now() < deadline;) {
    XClassHint hint{};
    if (XGetClassHint(d, f.window, &hint)) {
      f.wm_class = std::string(hint.res_name ? hint.res_name : "") + "/" + (hint.res_class ? hint.res_class : "");
      if (hint.res_name) XFree(hint.res_name);
      if (hint.res_class) XFree(hint.res_class);
    }
    Atom type;
    int format;
    unsigned long items = 0, after = 0;
    unsigned char* prop = nullptr;
    if (XGetWindowProperty(d, f.window, net_wm_icon, 0, 1 << 22, False, XA_CARDINAL, &type, &format, &items,
                           &after, &prop) == Success &&
        prop) {
      // CARDINAL[] of (width, height, width*height ARGB pixels)*; format-32
      // data arrives as longs.
      const long* v = reinterpret_cast<const long*>(prop);
      for (unsigned long at = 0; at + 2 <= items;) {
        const long w = v[at], h = v[at + 1];
        if (w <= 0 || h <= 0) break;
        f.icon_sizes.emplace_back(w, h);
        at += 2 + static_cast<unsigned long>(w * h);
      }
      XFree(prop);
    }
    if (!f.wm_class.empty() && !f.icon_sizes.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return f;
}

// Runs the window until it is up, then closes it with SIGTERM (as the
// close button would); returns what the window showed the display.
WindowFacts RunWindowOnce(const std::string& store_dir, const std::vector<std::string>& extra) {
  std::vector<std::string> argv{KILN_BIN, "--listen", "127.0.0.1:0", "--data-dir", store_dir};
  argv.insert(argv.end(), extra.begin(), extra.end());
  testing::ScopedChild kiln(testing::SpawnChild(argv));
  Display* d = XOpenDisplay(nullptr);
  REQUIRE(d != nullptr);
  const WindowFacts facts = WaitForWindow(d);
  XCloseDisplay(d);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // a few frames
  CHECK(kiln.Stop(SIGTERM) == 0);
  return facts;
}

TEST_CASE("the window shows Kiln's icon and class, and comes back as it was closed") {
  testing::TestDisplay::Get(KILN_TEST_NAME);
  unsetenv("DEBUGINFOD_URLS");
  XdgHome xdg;
  const std::string dir = MakeTempDir();
  const std::string capture = dir + "/stacks.folded";
  std::ofstream(capture) << "main;work;leaf 3\nmain;idle 1\n";
  const auto cwd_before = fs::exists("imgui.ini");
  // Preferences that differ from the defaults survive a run untouched.
  fs::create_directories(fs::path(xdg.settings()).parent_path());
  std::ofstream(xdg.settings()) << "kiln-settings 1\nflame = true\nshow_inline = false\n";

  const WindowFacts first = RunWindowOnce(dir + "/store", {"--size", "900x700", "--tab", "top", capture});
  REQUIRE(first.window != 0);
  CHECK(first.wm_class == "kiln/kiln");  // kiln.desktop's StartupWMClass
  // The embedded icon in every size it ships.
  CHECK(first.icon_sizes ==
        std::vector<std::pair<long, long>>{{32, 32}, {48, 48}, {64, 64}, {128, 128}, {256, 256}});

  const std::string state = ReadText(xdg.state());
  INFO("state.ini:\n" << state);
  CHECK(state.rfind("kiln-settings 1\n", 0) == 0);
  CHECK(state.find("window_size = 900x700\n") != std::string::npos);
  CHECK(state.find("tab = top\n") != std::string::npos);
  CHECK(state.find("recent = " + capture + "\n") != std::string::npos);
  const std::string preferences = ReadText(xdg.settings());
  INFO("settings.ini:\n" << preferences);
  CHECK(preferences.find("theme = dark\n") != std::string::npos);
  CHECK(preferences.find("flame = true\n") != std::string::npos);
  CHECK(preferences.find("show_inline = false\n") != std::string::npos);
  CHECK(fs::exists(xdg.imgui()));
  CHECK(fs::exists("imgui.ini") == cwd_before);  // nothing in the current folder

  // Put the window somewhere; the next run without --size or --tab must
  // come back there, with that size and tab.
  {
    std::string moved = state;
    moved += "window_position = 37,41\n";
    std::ofstream(xdg.state()) << moved;
  }
  const WindowFacts second = RunWindowOnce(dir + "/store", {});
  REQUIRE(second.window != 0);
  const std::string again = ReadText(xdg.state());
  INFO("state.ini after the second run:\n" << again);
  CHECK(again.find("window_size = 900x700\n") != std::string::npos);
  CHECK(again.find("window_position = 37,41\n") != std::string::npos);
  CHECK(again.find("tab = top\n") != std::string::npos);
  CHECK(again.find("recent = " + capture + "\n") != std::string::npos);
  fs::remove_all(dir);
}

// Mean brightness (0..255) of a horizontal band of the image.
double BandBrightness(const Image& image, int y0, int y1) {
  double sum = 0;
  size_t n = 0;
  for (int y = y0; y < y1; ++y) {
    for (int x = 0; x < image.width; ++x) {
      const ui::Rgba p = image.pixels[static_cast<size_t>(y) * image.width + x];
      sum += (ui::RedOf(p) + ui::GreenOf(p) + ui::BlueOf(p)) / 3.0;
      ++n;
    }
  }
  return n ? sum / n : 0;
}

TEST_CASE("the light theme from settings.ini is what a screenshot shows, and a screenshot saves nothing") {
  XdgHome xdg;
  const std::string dir = MakeTempDir();
  const std::string dark_png = dir + "-dark.png", light_png = dir + "-light.png";
  REQUIRE(Screenshot(dir + "/store", "log", dark_png, "settings-dark.png") == 0);
  CHECK(!fs::exists(xdg.settings()));  // a one-shot screenshot writes no settings
  CHECK(!fs::exists(xdg.state()));
  CHECK(!fs::exists(xdg.imgui()));
  fs::create_directories(fs::path(xdg.settings()).parent_path());
  std::ofstream(xdg.settings()) << "kiln-settings 1\ntheme = light\n";
  REQUIRE(Screenshot(dir + "/store", "log", light_png, "settings-light.png") == 0);
  const Image dark = LoadPng(dark_png), light = LoadPng(light_png);
  CheckNotBlank(light);
  // The lower half is the Log's background in both.
  const double dark_level = BandBrightness(dark, kHeight / 2, kHeight - 40);
  const double light_level = BandBrightness(light, kHeight / 2, kHeight - 40);
  CAPTURE(dark_level);
  CAPTURE(light_level);
  CHECK(dark_level < 60);
  CHECK(light_level > 200);
  CHECK(ReadText(xdg.settings()) == "kiln-settings 1\ntheme = light\n");  // untouched
  fs::remove(dark_png);
  fs::remove(light_png);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kiln
