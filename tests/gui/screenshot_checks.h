// Helpers of the GUI tests that run the real `kiln` binary and check its
// screenshots: temp dirs, PNG loading, "not blank" and frame-type colour
// counts. Test-only; include from one test file each (anonymous namespace).
#pragma once

#include <doctest/doctest.h>
#include <stb/stb_image.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "storage/model/profile_model.h"
#include "tests/child_process.h"
#include "tests/gui/test_display.h"
#include "ui/frame_colors.h"

#ifndef KILN_TEST_NAME
#error "define KILN_TEST_NAME (for skip messages) before including screenshot_checks.h"
#endif
#ifndef KILN_BIN
#error "define KILN_BIN (the kiln binary) before including screenshot_checks.h"
#endif

namespace kiln {
namespace {

// inline: each test uses some of these helpers, and unused ones must not warn.

namespace fs = std::filesystem;
using storage::FrameType;

constexpr int kWidth = 1280;
constexpr int kHeight = 800;

inline std::string MakeTempDir() {
  std::string tmpl = (fs::temp_directory_path() / "kiln-gui-test-XXXXXX").string();
  REQUIRE(mkdtemp(tmpl.data()) != nullptr);
  return tmpl;
}

// A whole text file ("" when it cannot be read), e.g. a helper's log.
inline std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

struct Image {
  int width = 0, height = 0;
  std::vector<ui::Rgba> pixels;
};

inline Image LoadPng(const std::string& path) {
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

inline int Distance(ui::Rgba a, ui::Rgba b) {
  return std::abs(ui::RedOf(a) - ui::RedOf(b)) + std::abs(ui::GreenOf(a) - ui::GreenOf(b)) +
         std::abs(ui::BlueOf(a) - ui::BlueOf(b));
}

// Runs kiln (receiver on a free loopback port); returns its exit code. Keeps a copy of the PNG for people.
// `name` is the file name the copy for people gets ("smoke-top.png").
// `extra` is appended to the command line (e.g. {"--open", FILE}).
inline int Screenshot(const std::string& data_dir, const std::string& tab, const std::string& png,
               const std::string& name, const std::vector<std::string>& extra = {}) {
  testing::TestDisplay::Get(KILN_TEST_NAME);
  // The window symbolizes what it shows; a desktop's DEBUGINFOD_URLS would
  // send it to the internet for every executable and make --screenshot
  // wait for the answers.
  unsetenv("DEBUGINFOD_URLS");
  std::vector<std::string> argv{KILN_BIN, "--listen", "127.0.0.1:0", "--data-dir", data_dir, "--tab", tab, "--size",
                                std::to_string(kWidth) + "x" + std::to_string(kHeight), "--screenshot", png};
  argv.insert(argv.end(), extra.begin(), extra.end());
  const int code = testing::WaitChild(testing::SpawnChild(argv));
  if (const char* bin = std::getenv("KILN_BINARY_DIR"); bin && fs::exists(png)) {
    const fs::path keep = fs::path(bin) / "gui_screenshots";
    fs::create_directories(keep);
    fs::copy_file(png, keep / name, fs::copy_options::overwrite_existing);
  }
  return code;
}

inline void CheckNotBlank(const Image& image) {
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
inline std::map<FrameType, size_t> CountTypeColors(const Image& image) {
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

}  // namespace
}  // namespace kiln
