// Flamegraph keys in the real window: arrows, Enter and Esc typed through
// XTest into kiln as a user would, a double-click on empty space, and the
// window's pixels read back from the X server. A capture "main;aaa 1 /
// main;bbb 99" makes the change visible by colour: Down goes to the heavy
// bbb, not the aaa sliver left of it; Left, Enter zoom into aaa, which then
// fills its row, and Esc or a double-click brings bbb back. The Stack
// Chart's keys and click on a two-thread perf script capture, the same way.
//
// Needs a display (its own Xvfb when DISPLAY is unset); without one it
// exits 77.
#include <doctest/doctest.h>
#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <thread>

#include "ui/frame_colors.h"
#include "ui/theme.h"

#define KILN_TEST_NAME "gui_keyboard_test"
#include "tests/gui/screenshot_checks.h"
// Xlib last (its macros break the headers above).
#include "tests/gui/x11_window.h"
// After both: Image and Xlib.
#include "tests/gui/window_pixels.h"

namespace kiln {
namespace {

using Clock = std::chrono::steady_clock;

// Pixels of the window exactly `color` (frame fills are flat colours); 0
// while the window is not viewable.
size_t CountColor(Display* d, Window w, ui::Rgba color) {
  const Image image = testing::Grab(d, w);
  return static_cast<size_t>(std::count(image.pixels.begin(), image.pixels.end(), color));
}

// Waits up to `seconds` for at least `at_least` pixels of `color`; the
// last count.
size_t WaitForColor(Display* d, Window w, ui::Rgba color, size_t at_least, int seconds = 10) {
  size_t count = 0;
  for (auto deadline = Clock::now() + std::chrono::seconds(seconds); Clock::now() < deadline;) {
    count = CountColor(d, w, color);
    if (count >= at_least) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return count;
}

// Waits until `done(aaa pixels, bbb pixels)` holds for the window's
// current picture; the last counts are left in `aaa` and `bbb`.
template <typename F>
bool WaitForPicture(Display* d, Window w, ui::Rgba a_color, ui::Rgba b_color, size_t* aaa, size_t* bbb, F done) {
  for (auto deadline = Clock::now() + std::chrono::seconds(20);;) {
    *aaa = CountColor(d, w, a_color);
    *bbb = CountColor(d, w, b_color);
    if (done(*aaa, *bbb)) return true;
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

// kiln in a 900x600 window on the capture "main;aaa 1 / main;bbb 99" (or another), with
// settings of its own (icicle, the defaults), its flamegraph drawn.
struct TwoFrameWindow {
  const std::string dir = MakeTempDir();
  const std::string capture;
  const ui::Rgba a_color = ui::NodeColor(storage::NodeKind::kFrame, storage::FrameType::kNative, "aaa");
  const ui::Rgba b_color = ui::NodeColor(storage::NodeKind::kFrame, storage::FrameType::kNative, "bbb");
  std::optional<testing::ScopedChild> kiln;
  Display* d = nullptr;
  Window w = 0;

  // `name` and `text`: another capture, `tab` another view.
  explicit TwoFrameWindow(const std::string& name = "two.folded", const std::string& text = "main;aaa 1\nmain;bbb 99\n",
                          const std::string& tab = "flamegraph")
      : capture(dir + "/" + name) {
    testing::TestDisplay::Get(KILN_TEST_NAME);
    unsetenv("DEBUGINFOD_URLS");
    setenv("XDG_CONFIG_HOME", (dir + "/config").c_str(), 1);
    setenv("XDG_STATE_HOME", (dir + "/state").c_str(), 1);
    std::ofstream(capture) << text;
    REQUIRE(a_color != b_color);
    kiln.emplace(testing::SpawnChild({KILN_BIN, "--listen", "127.0.0.1:0", "--data-dir", dir + "/store", "--size",
                                      "900x600", "--tab", tab, capture}));
    d = XOpenDisplay(nullptr);
    REQUIRE(d != nullptr);
    w = testing::WaitForKilnWindow(d);
    REQUIRE_MESSAGE(w != 0, "no kiln window appeared");
  }
  ~TwoFrameWindow() {
    if (d != nullptr) XCloseDisplay(d);
    for (const char* v : {"XDG_CONFIG_HOME", "XDG_STATE_HOME"}) unsetenv(v);
    kiln.reset();
    fs::remove_all(dir);
  }
  void Focus() const {
    XSetInputFocus(d, w, RevertToParent, CurrentTime);
    XSync(d, False);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
};

TEST_CASE("arrows select (down to the heaviest child), Enter zooms in, Esc and double-click zoom out, in the real window") {
  TwoFrameWindow t;
  Display* d = t.d;
  const Window w = t.w;
  const ui::Rgba a_color = t.a_color, b_color = t.b_color;
  size_t aaa = 0, bbb = 0;
  // Drawn: bbb (99 %) fills most of its row, aaa (1 %) a sliver.
  CHECK_MESSAGE(WaitForPicture(d, w, a_color, b_color, &aaa, &bbb,
                               [](size_t a, size_t b) { return b > 5000 && a < b / 20; }),
                "aaa " << aaa << " px, bbb " << bbb << " px");
  t.Focus();

  // Down selects main (the root's only child), Down again bbb (main's
  // heaviest child; aaa, first in name order, is a sliver), Enter zooms
  // into it: bbb spans the row and aaa, not on its path, is gone.
  const size_t bbb_before = bbb;
  testing::TypeKey(d, XK_Down);
  testing::TypeKey(d, XK_Down);
  testing::TypeKey(d, XK_Return);
  CHECK_MESSAGE(WaitForPicture(d, w, a_color, b_color, &aaa, &bbb,
                               [&](size_t a, size_t b) { return a == 0 && b > bbb_before / 2; }),
                "after Down, Down, Enter: aaa " << aaa << " px, bbb " << bbb << " px");

  // Esc zooms back out: the whole tree again.
  testing::TypeKey(d, XK_Escape);
  CHECK_MESSAGE(WaitForPicture(d, w, a_color, b_color, &aaa, &bbb,
                               [&](size_t a, size_t b) { return b > bbb_before / 2 && a < b / 20; }),
                "after Esc: aaa " << aaa << " px, bbb " << bbb << " px");

  // Left from bbb is aaa; Enter zooms into it: aaa spans the row.
  testing::TypeKey(d, XK_Left);
  testing::TypeKey(d, XK_Return);
  CHECK_MESSAGE(WaitForPicture(d, w, a_color, b_color, &aaa, &bbb,
                               [&](size_t a, size_t b) { return b == 0 && a > bbb_before / 2; }),
                "after Left, Enter: aaa " << aaa << " px, bbb " << bbb << " px");

  // A double-click on the empty space below the graph zooms out.
  testing::ClickAt(d, w, 450, 480, 2);
  CHECK_MESSAGE(WaitForPicture(d, w, a_color, b_color, &aaa, &bbb,
                               [&](size_t a, size_t b) { return b > bbb_before / 2 && a < b / 20; }),
                "after a double-click on empty space: aaa " << aaa << " px, bbb " << bbb << " px");
  CHECK(t.kiln->Stop(SIGTERM) == 0);
}

TEST_CASE("the frame menu's Show in Sandwich opens the view with its data, and no more input is needed") {
  TwoFrameWindow t;
  Display* d = t.d;
  const Window w = t.w;
  const ui::Rgba a_color = t.a_color, b_color = t.b_color;
  size_t aaa = 0, bbb = 0;
  REQUIRE(WaitForPicture(d, w, a_color, b_color, &aaa, &bbb, [](size_t, size_t b) { return b > 5000; }));
  t.Focus();

  // Right-click bbb (the third row of the icicle, 99 % wide) and click
  // Show in Sandwich: the menu opens at the pointer, its fifth item 123 px
  // below it at the window's default font (Copy name, Focus on function,
  // Focus on subtree, Callers of this function, Show in Sandwich; a new
  // item above it makes this test fail, not pass). Then no input at all.
  // The Sandwich query is sent by the frame after the click and answers
  // within milliseconds; the window drew no frame for that answer and
  // showed "Loading..." until the mouse moved.
  const Image before = testing::Grab(d, w);
  int bbb_y = -1;
  for (int y = 150; y < 300 && bbb_y < 0; ++y)
    if (before.pixels[static_cast<size_t>(y) * before.width + 450] == b_color) bbb_y = y + 5;
  REQUIRE_MESSAGE(bbb_y > 0, "bbb's row not found");
  testing::ClickAt(d, w, 450, bbb_y, 1, 3);
  testing::ClickAt(d, w, 450 + 65, bbb_y + 123);
  // Sandwich's tables draw total bars; the flamegraph draws none.
  size_t bars = WaitForColor(d, w, ui::CurrentPalette().total_bar, 501, 5);
  CHECK_MESSAGE(bars > 500, "the Sandwich of bbb drew " << bars << " px of total bars");
  CHECK(CountColor(d, w, b_color) == 0);  // the flamegraph is gone
  CHECK(t.kiln->Stop(SIGTERM) == 0);
}

// Export and Save PNG of view write their default names (kiln-export.folded,
// kiln-flamegraph.png) into the directory kiln runs in.
TEST_CASE("Export (Ctrl+E) and Save PNG of view (File menu), by keyboard: the files hold what the view shows") {
  const fs::path here = fs::current_path();
  const std::string out = MakeTempDir();
  fs::current_path(out);  // kiln runs here
  TwoFrameWindow t;
  fs::current_path(here);
  Display* d = t.d;
  const Window w = t.w;
  size_t aaa = 0, bbb = 0;
  REQUIRE(WaitForPicture(d, w, t.a_color, t.b_color, &aaa, &bbb, [](size_t, size_t b) { return b > 5000; }));
  t.Focus();
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  // Ctrl+E: the dialog opens on its format (folded); Down to the file
  // name, Down to Export, Space.
  testing::TypeKey(d, XK_e, XK_Control_L);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  for (KeySym k : {XK_Down, XK_Down, XK_space}) testing::TypeKey(d, k);
  std::string folded;
  for (auto deadline = Clock::now() + std::chrono::seconds(10); Clock::now() < deadline && folded.empty();) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    folded = read(out + "/kiln-export.folded");
  }
  CHECK(folded == "main;aaa 1\nmain;bbb 99\n");
  // File > Save PNG of view...: Alt, Down opens File on Open...; then Open
  // Recent (the capture), Add symbols, Store settings, Import into store,
  // Export, Save PNG. In the dialog: Down to Save, Space.
  testing::TypeKey(d, XK_Alt_L);
  for (int i = 0; i < 7; ++i) testing::TypeKey(d, XK_Down);
  testing::TypeKey(d, XK_space);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  for (KeySym k : {XK_Down, XK_space}) testing::TypeKey(d, k);
  const std::string png = out + "/kiln-flamegraph.png";
  for (auto deadline = Clock::now() + std::chrono::seconds(10); Clock::now() < deadline && !fs::exists(png);) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // written whole
  const Image saved = LoadPng(png);
  const Image shown = testing::Grab(d, w);
  CHECK(saved.width == shown.width);
  CHECK(saved.height == shown.height);
  // The view without the dialog: bbb as wide as in the window.
  const auto count = [](const Image& im, ui::Rgba c) {
    return static_cast<size_t>(std::count(im.pixels.begin(), im.pixels.end(), c));
  };
  CHECK(count(saved, t.b_color) > 5000);
  CHECK(count(saved, t.b_color) == count(shown, t.b_color));
  CHECK(t.kiln->Stop(SIGTERM) == 0);
  fs::remove_all(out);
}

// perf script text: thread 101 of prog runs main;aaa for its first 10
// samples and main;bbb for the next 90, 10 ms apart; thread 102 runs
// main;ccc 20 times over the same second.
std::string TwoThreadsPerfScript() {
  std::string text;
  char header[96];
  for (int i = 0; i < 100; ++i) {
    std::snprintf(header, sizeof header, "prog 100/101 [000] %d.%03d: 1 cycles: \n", 1000 + i / 100, (i % 100) * 10);
    text += header;
    text += std::string("\t    401000 ") + (i < 10 ? "aaa" : "bbb") + " (/usr/bin/prog)\n\t    400500 main (/usr/bin/prog)\n\n";
    if (i % 5 == 0) {
      std::snprintf(header, sizeof header, "prog 100/102 [001] %d.%03d: 1 cycles: \n", 1000 + i / 100, (i % 100) * 10 + 1);
      text += header;
      text += "\t    402000 ccc (/usr/bin/prog)\n\t    400500 main (/usr/bin/prog)\n\n";
    }
  }
  return text;
}

TEST_CASE("the Stack Chart in the real window: the busiest thread along time, keys zoom, a click selects in every view") {
  TwoFrameWindow t("threads.perf", TwoThreadsPerfScript(), "stackchart");
  Display* d = t.d;
  const Window w = t.w;
  const ui::Rgba a_color = t.a_color, b_color = t.b_color;
  const ui::Rgba c_color = ui::NodeColor(storage::NodeKind::kFrame, storage::FrameType::kNative, "ccc");
  const ui::Rgba main_color = ui::NodeColor(storage::NodeKind::kFrame, storage::FrameType::kNative, "main");
  size_t aaa = 0, bbb = 0;
  // Thread 101 (100 samples) is shown, not 102 (20): aaa's first tenth of
  // the time, then bbb's nine tenths, main over both.
  CHECK_MESSAGE(WaitForPicture(d, w, a_color, b_color, &aaa, &bbb,
                               [](size_t a, size_t b) { return b > 5000 && a > b / 20 && a < b / 5; }),
                "aaa " << aaa << " px, bbb " << bbb << " px");
  CHECK(CountColor(d, w, c_color) == 0);
  CHECK(CountColor(d, w, main_color) > bbb / 2);
  t.Focus();

  // '=' zooms in twice around the middle (bbb's time): aaa's first tenth
  // leaves the view, bbb fills the row.
  const size_t bbb_whole = bbb;
  testing::TypeKey(d, XK_equal);
  CHECK_MESSAGE(WaitForPicture(d, w, a_color, b_color, &aaa, &bbb,
                               [&](size_t a, size_t b) { return a == 0 && b > bbb_whole; }),
                "after '=': aaa " << aaa << " px, bbb " << bbb << " px");
  // '0' shows the whole range again.
  testing::TypeKey(d, XK_0);
  CHECK_MESSAGE(WaitForPicture(d, w, a_color, b_color, &aaa, &bbb,
                               [&](size_t a, size_t b) { return a > b / 20 && b > bbb_whole / 2; }),
                "after '0': aaa " << aaa << " px, bbb " << bbb << " px");

  // Top functions (Ctrl+2) before anything is selected: no selected row.
  testing::TypeKey(d, XK_2, XK_Control_L);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const size_t selected_before = CountColor(d, w, ui::CurrentPalette().selected_row);
  CHECK(selected_before < 1000);
  testing::TypeKey(d, XK_6, XK_Control_L);  // back to the Stack Chart
  CHECK_MESSAGE(WaitForPicture(d, w, a_color, b_color, &aaa, &bbb,
                               [&](size_t a, size_t b) { return a > b / 20 && b > bbb_whole / 2; }),
                "back on the Stack Chart: aaa " << aaa << " px, bbb " << bbb << " px");

  // A click on bbb selects it: every other box dims (main's colour is
  // gone), here and in the flamegraph (Ctrl+1).
  const Image before = testing::Grab(d, w);
  int bbb_y = -1;
  for (int y = 150; y < 560 && bbb_y < 0; ++y)
    if (before.pixels[static_cast<size_t>(y) * before.width + 600] == b_color) bbb_y = y + 5;
  REQUIRE_MESSAGE(bbb_y > 0, "bbb's row not found");
  testing::ClickAt(d, w, 600, bbb_y);
  CHECK_MESSAGE(WaitForPicture(d, w, main_color, b_color, &aaa, &bbb,
                               [&](size_t m, size_t b) { return m == 0 && b > 1000; }),
                "after clicking bbb: main " << aaa << " px, bbb " << bbb << " px");
  testing::TypeKey(d, XK_1, XK_Control_L);
  CHECK_MESSAGE(WaitForPicture(d, w, main_color, b_color, &aaa, &bbb,
                               [&](size_t m, size_t b) { return m == 0 && b > 1000; }),
                "the flamegraph after clicking bbb: main " << aaa << " px, bbb " << bbb << " px");
  // Top functions (Ctrl+2): bbb's row is the selected one, a row of the
  // selection colour across the table.
  testing::TypeKey(d, XK_2, XK_Control_L);
  size_t selected = WaitForColor(d, w, ui::CurrentPalette().selected_row, 4001, 10);
  CHECK_MESSAGE(selected > 4000, "Top functions' selected row: " << selected << " px");
  // The call tree (Ctrl+3): opened down to bbb, its row selected.
  testing::TypeKey(d, XK_3, XK_Control_L);
  selected = WaitForColor(d, w, ui::CurrentPalette().selected_row, 4001, 10);
  CHECK_MESSAGE(selected > 4000, "the call tree's selected row: " << selected << " px");
  // The Sandwich (Ctrl+4), which had no function, shows bbb's: its
  // tables' total bars.
  testing::TypeKey(d, XK_4, XK_Control_L);
  size_t bars = WaitForColor(d, w, ui::CurrentPalette().total_bar, 501, 10);
  CHECK_MESSAGE(bars > 500, "the Sandwich of bbb drew " << bars << " px of total bars");
  CHECK(t.kiln->Stop(SIGTERM) == 0);
}

// The frames a window drew after its view was drawn with its data, as
// KILN_REPORT_STARTUP prints them at exit ("... over N frames"; none when
// there was no such frame).
long FramesAfterSettled(const std::string& stderr_text) {
  const std::string marker = "UI CPU per frame (NewFrame..Render) over ";
  const size_t at = stderr_text.find(marker);
  return at == std::string::npos ? 0 : std::atol(stderr_text.c_str() + at + marker.size());
}

TEST_CASE("an idle window draws no frames: nothing new, nothing drawn") {
  testing::TestDisplay::Get(KILN_TEST_NAME);
  unsetenv("DEBUGINFOD_URLS");
  const std::string dir = MakeTempDir();
  setenv("XDG_CONFIG_HOME", (dir + "/config").c_str(), 1);
  setenv("XDG_STATE_HOME", (dir + "/state").c_str(), 1);
  setenv("KILN_REPORT_STARTUP", "1", 1);
  const std::string capture = dir + "/two.folded";
  std::ofstream(capture) << "main;aaa 1\nmain;bbb 99\n";
  const std::string err = dir + "/stderr.txt";
  testing::ScopedChild kiln(testing::SpawnChild({KILN_BIN, "--listen", "127.0.0.1:0", "--data-dir", dir + "/store",
                                                 "--size", "900x600", "--tab", "flamegraph", capture},
                                                testing::ChildOutput::Inherit(), testing::ChildOutput::File(err)));
  unsetenv("KILN_REPORT_STARTUP");
  auto read_err = [&] {
    std::ifstream in(err);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  // Drawn with its data, then left alone: no input, no agent, the capture
  // loaded (its notice stays up 20 s, past this test).
  bool settled = false;
  for (auto deadline = Clock::now() + std::chrono::seconds(30); !settled && Clock::now() < deadline;) {
    settled = read_err().find("view drawn with its data") != std::string::npos;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  REQUIRE_MESSAGE(settled, read_err());
  const auto idle = std::chrono::seconds(8);
  std::this_thread::sleep_for(idle);
  CHECK(kiln.Stop(SIGTERM) == 0);
  const long frames = FramesAfterSettled(read_err());
  MESSAGE("frames drawn in the ", idle.count(), " s after the view settled: ", frames);
  // It drew four a second (a wake every half second, two frames each):
  // about 32 here. The notices' expiry and the last settling frames
  // allow a few.
  CHECK(frames <= 6);
  for (const char* v : {"XDG_CONFIG_HOME", "XDG_STATE_HOME"}) unsetenv(v);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kiln
