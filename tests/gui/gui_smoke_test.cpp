// GUI smoke tests: screenshots of every view over a known store (the demo
// profile), checked for size, content and the frame-type colours; the
// empty-store help; and the one-line message without a display.
//
// Needs a display. With DISPLAY unset the test starts its own Xvfb; when
// Xvfb is not installed it prints why and exits 77 (ctest: skipped).
// Screenshots are kept in $KILN_BINARY_DIR/gui_screenshots for people.
#include <doctest/doctest.h>
#include <signal.h>
#include <stb/stb_image.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "app/demo_profile.h"
#include "storage/store.h"
#define KILN_TEST_NAME "gui_smoke_test"
#include "tests/gui/screenshot_checks.h"
#include "tests/gui/test_display.h"
#include "tests/temp_dir.h"
#include "ui/frame_colors.h"

namespace kiln {
namespace {

// A data dir holding the demo profile and a few log entries of every level.
std::string DemoStore() {
  // Removed at exit (a static TempDir): the directory outlives each test case.
  static const testing::TempDir holder("kiln-gui-test");
  static const std::string dir = [] {
    const std::string d = holder.path;
    auto store = storage::Store::Open(d, storage::Store::Mode::kReadWrite);
    REQUIRE(store.ok());
    REQUIRE((*store)->Write(app::BuildDemoProfile(storage::UnixNowNs())).ok());
    REQUIRE((*store)->AppendLog(storage::LogLevel::kInfo, "listening on 0.0.0.0:11000").ok());
    REQUIRE(
        (*store)
            ->AppendLog(
                storage::LogLevel::kWarning,
                "agent ipv4:10.0.0.7:53412 sent a profile with 3 out-of-range stack indices; dropped them")
            .ok());
    REQUIRE(
        (*store)
            ->AppendLog(
                storage::LogLevel::kError,
                "rejected request from ipv4:10.0.0.9:40022: INVALID_ARGUMENT: string_table[0] must be empty")
            .ok());
    return d;
  }();
  return dir;
}

TEST_CASE("every view renders the demo store") {
  const std::string dir = DemoStore();
  for (const std::string tab : {"flamegraph", "top", "executables", "log"}) {
    CAPTURE(tab);
    const std::string png = dir + "/../kiln-" + fs::path(dir).filename().string() + "-" + tab + ".png";
    REQUIRE(Screenshot(dir, tab, png, "smoke-" + tab + ".png") == 0);
    const Image image = LoadPng(png);
    CheckNotBlank(image);
    if (tab == "flamegraph") {
      const auto counts = CountTypeColors(image);
      for (FrameType t :
           {FrameType::kKernel, FrameType::kNative, FrameType::kPython, FrameType::kGo, FrameType::kJvm}) {
        CAPTURE(static_cast<int>(t));
        const auto it = counts.find(t);
        CHECK((it == counts.end() ? 0 : it->second) > 1500);
      }
    }
    fs::remove(png);
  }
}

TEST_CASE("an empty store shows how to add data") {
  const std::string dir = MakeTempDir();
  const std::string png = dir + "-empty.png";
  REQUIRE(Screenshot(dir, "flamegraph", png, "smoke-empty-store.png") == 0);
  const Image image = LoadPng(png);
  CheckNotBlank(image);
  // No flame graph: hardly any frame-type colour (the timeline is empty too).
  size_t typed = 0;
  for (const auto& [type, n] : CountTypeColors(image)) typed += n;
  CHECK(typed < image.pixels.size() / 50);
  fs::remove(png);
  fs::remove_all(dir);
}

TEST_CASE("without a display it says so in one line and points to --headless") {
  const std::string dir = MakeTempDir();
  const std::string err = dir + "/stderr.txt";
  const std::string command = "env -u DISPLAY -u WAYLAND_DISPLAY " + std::string(KILN_BIN) +
                              " --listen 127.0.0.1:0 --data-dir " + dir + "/store 2>" + err;
  const int status = std::system(command.c_str());
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) != 0);
  std::ifstream in(err);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CAPTURE(text);
  CHECK(text.find("kiln --headless") != std::string::npos);
  CHECK(std::count(text.begin(), text.end(), '\n') == 1);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kiln
