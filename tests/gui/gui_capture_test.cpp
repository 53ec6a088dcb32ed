// GUI tests of opened captures through the real `kiln` binary: `kiln --open
// FILE` shows the capture's flamegraph beside an empty store, and a file that
// cannot be read leaves the window up with the error in the Log (and a
// --screenshot of it exits 1).
//
// Needs a display (its own Xvfb when DISPLAY is unset; without one it prints
// why and exits 77, ctest: skipped) and reads the capture corpus in the
// repository (tests/data/corpus). PNGs are kept in
// $KILN_BINARY_DIR/gui_screenshots.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "storage/store.h"
#include "tests/import/corpus_files.h"

#define KILN_TEST_NAME "gui_capture_test"
#include "tests/gui/screenshot_checks.h"

namespace kiln {
namespace {

TEST_CASE("a capture that cannot be read leaves the window up with the error") {
  const std::string dir = MakeTempDir();
  const std::string bad = dir + "-broken.pb.gz";
  {
    std::ofstream out(bad, std::ios::binary);
    out << std::string("\x1f\x8b\x08\x00garbage", 12);  // gzip magic, truncated stream
  }
  // An image given where a profile was meant (the issue found it refused as
  // "byte 11: Profile: invalid field number 0"): kiln's own screenshot.
  const std::string image = dir + "-image.png";
  const char* src = std::getenv("KILN_SOURCE_DIR");
  fs::copy_file(std::string(src != nullptr ? src : ".") + "/assets/screenshots/agent-calltree.png", image);
  const std::string png = dir + "-bad.png";
  // Positional files work like --open. The picture shows the window with
  // the errors; the exit status says it to whoever scripted the screenshot.
  CHECK(Screenshot(dir, "log", png, "capture-open-bad.png", {bad, image}) == 1);
  CheckNotBlank(LoadPng(png));
  fs::remove(png);
  auto store = storage::Store::Open(dir, storage::Store::Mode::kReadOnly);
  REQUIRE(store.ok());
  bool logged = false, named = false;
  for (const auto& e : (*store)->ReadLog(50)) {
    if (e.level != storage::LogLevel::kError) continue;
    if (e.message.find(bad) != std::string::npos) logged = true;
    if (e.message.find(image + ": this is a PNG image, not a profile") != std::string::npos) named = true;
  }
  CHECK(logged);
  CHECK(named);
  store->reset();
  fs::remove(bad);
  fs::remove(image);
  fs::remove_all(dir);
}

TEST_CASE("kiln --open shows the capture's flamegraph beside an empty store") {
  capture::testing::RequireCorpus();
  const std::string corpus = fs::canonical(capture::testing::CorpusDir()).string();
  const std::string dir = MakeTempDir();
  const std::string png = dir + "-open.png";
  REQUIRE(Screenshot(dir, "flamegraph", png, "capture-open.png",
                     {"--open", corpus + "/flamegraph/perf-numa-stacks-01.txt"}) == 0);
  const Image image = LoadPng(png);
  CheckNotBlank(image);
  // perf-numa-stacks: java with JIT frames ([perf-PID.map]) over kernel
  // page-fault paths, and swapper in the kernel. The empty live store alone
  // would show the help text and hardly any of these colours.
  const auto counts = CountTypeColors(image);
  auto count = [&](FrameType t) {
    const auto it = counts.find(t);
    return it == counts.end() ? size_t{0} : it->second;
  };
  CHECK(count(FrameType::kKernel) > 20000);
  CHECK(count(FrameType::kJit) > 2000);
  fs::remove(png);
  // The capture was imported into a temporary store, not into the live one.
  auto store = storage::Store::Open(dir, storage::Store::Mode::kReadOnly);
  REQUIRE(store.ok());
  CHECK((*store)->Stats().samples == 0);
  store->reset();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kiln
