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
#include "tests/gui/test_display.h"
#include "ui/frame_colors.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using storage::FrameType;

constexpr int kWidth = 1280;
constexpr int kHeight = 800;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string MakeTempDir() {
  std::string tmpl = (fs::temp_directory_path() / "kiln-gui-test-XXXXXX").string();
  REQUIRE(mkdtemp(tmpl.data()) != nullptr);
  return tmpl;
}

// A data dir holding the demo profile and a few log entries of every level.
std::string DemoStore() {
  static const std::string dir = [] {
    const std::string d = MakeTempDir();
    auto store = storage::Store::Open(d, storage::Store::Mode::kReadWrite);
    REQUIRE(store.ok());
    REQUIRE((*store)->Write(app::BuildDemoProfile(NowNs())).ok());
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

struct Image {
  int width = 0, height = 0;
  std::vector<ui::Rgba> pixels;
};

Image LoadPng(const std::string& path) {
  Image image;
  int channels = 0;
  unsigned char* data = stbi_load(path.c_str(), &image.width, &image.height, &channels, 4);
  REQUIRE_MESSAGE(data != nullptr, "cannot read " << path);
  image.pixels.resize(static_cast<size_t>(image.width) * image.height);
  for (size_t i = 0; i < image.pixels.size(); ++i) {
    image.pixels[i] = ui::PackRgba(data[4 * i], data[4 * i + 1], data[4 * i + 2]);
  }
  stbi_image_free(data);
  return image;
}

int Distance(ui::Rgba a, ui::Rgba b) {
  return std::abs(ui::RedOf(a) - ui::RedOf(b)) + std::abs(ui::GreenOf(a) - ui::GreenOf(b)) +
         std::abs(ui::BlueOf(a) - ui::BlueOf(b));
}

// Runs kiln (receiver on a free loopback port); returns its exit code. Keeps a copy of the PNG for people.
// `name` is the file name the copy for people gets ("smoke-top.png").
int Screenshot(const std::string& data_dir, const std::string& tab, const std::string& png,
               const std::string& name) {
  testing::TestDisplay::Get("gui_smoke_test");
  const std::string command = std::string(KILN_BIN) + " --listen 127.0.0.1:0 --data-dir " + data_dir + " --tab " + tab +
                              " --size " + std::to_string(kWidth) + "x" + std::to_string(kHeight) +
                              " --screenshot " + png;
  const int status = std::system(command.c_str());
  if (const char* bin = std::getenv("KILN_BINARY_DIR"); bin && fs::exists(png)) {
    const fs::path keep = fs::path(bin) / "gui_screenshots";
    fs::create_directories(keep);
    fs::copy_file(png, keep / name, fs::copy_options::overwrite_existing);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void CheckNotBlank(const Image& image) {
  CHECK(image.width == kWidth);
  CHECK(image.height == kHeight);
  std::set<ui::Rgba> colors;
  size_t differs = 0;
  const ui::Rgba background = image.pixels[image.pixels.size() / 2 + kWidth / 3];
  for (ui::Rgba p : image.pixels) {
    if (colors.size() < 5000) colors.insert(p);
    if (Distance(p, background) > 30) ++differs;
  }
  CHECK(colors.size() > 50);  // text, bars, widgets: not a flat fill
  CHECK(differs > image.pixels.size() / 100);
}

// Pixels whose nearest legend colour is `type`'s and which are close to it.
std::map<FrameType, size_t> CountTypeColors(const Image& image) {
  std::map<FrameType, size_t> counts;
  for (ui::Rgba p : image.pixels) {
    int best = 1 << 30;
    FrameType best_type = FrameType::kUnknown;
    for (int t = 0; t < storage::kFrameTypeCount; ++t) {
      const int d = Distance(p, ui::FrameTypeColor(static_cast<FrameType>(t)));
      if (d < best) {
        best = d;
        best_type = static_cast<FrameType>(t);
      }
    }
    if (best < 75) ++counts[best_type];
  }
  return counts;
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
