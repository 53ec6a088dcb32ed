// kiln_gui_shot: opens the Kiln window over a data directory without the
// receiver, for smoke tests and the benchmark.
//
//   kiln_gui_shot --data-dir DIR [--demo] [--feed] [--tab T] [--size WxH] [--screenshot FILE.png]
//
// --demo writes the synthetic demo profile (ending now) into DIR first.
// --feed keeps writing the demo's last second of samples every second, as
// a live agent would (for trying live follow by hand).
// With KILN_REPORT_RSS set, prints the peak RSS on exit; with
// KILN_REPORT_STARTUP, when the store was open (RunGui reports the rest).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "app/demo_profile.h"
#include "app/gui_app.h"
#include "storage/store.h"

namespace {

long ReadStatusKb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) return std::stol(line.substr(std::strlen(field)));
  }
  return -1;
}

int Usage() {
  std::fprintf(stderr,
               "usage: kiln_gui_shot --data-dir DIR [--demo] [--tab flamegraph|top|executables|log] "
               "[--size WxH] [--screenshot FILE.png]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const auto start = std::chrono::steady_clock::now();
  kiln::app::GuiOptions options;
  bool feed = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (arg == "--data-dir") {
      options.data_dir = value();
    } else if (arg == "--demo") {
      options.demo = true;
    } else if (arg == "--feed") {
      feed = true;
    } else if (arg == "--tab") {
      options.tab = value();
    } else if (arg == "--screenshot") {
      options.screenshot_path = value();
    } else if (arg == "--size") {
      if (std::sscanf(value().c_str(), "%dx%d", &options.width, &options.height) != 2) return Usage();
    } else {
      return Usage();
    }
  }
  if (options.data_dir.empty()) return Usage();
  auto store = kiln::storage::Store::Open(options.data_dir, kiln::storage::Store::Mode::kReadWrite);
  if (!store.ok()) {
    std::fprintf(stderr, "kiln_gui_shot: %s\n", std::string(store.status().message()).c_str());
    return 1;
  }
  if (std::getenv("KILN_REPORT_STARTUP")) {
    std::fprintf(stderr, "kiln_gui_shot: store opened after %.1f ms (%llu samples)\n",
                 std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count(),
                 static_cast<unsigned long long>((*store)->Stats().samples));
  }
  if (options.demo && (*store)->Stats().samples == 0) {
    const int64_t now = kiln::storage::UnixNowNs();
    if (auto s = (*store)->Write(kiln::app::BuildDemoProfile(now)); !s.ok()) {
      std::fprintf(stderr, "kiln_gui_shot: writing the demo profile: %s\n", std::string(s.message()).c_str());
      return 1;
    }
    (void)(*store)->AppendLog(kiln::storage::LogLevel::kInfo, "demo profile written");
  }
  std::atomic<bool> stop{false};
  std::thread feeder;
  if (feed) {
    feeder = std::thread([&] {
      while (!stop) {
        std::this_thread::sleep_for(std::chrono::seconds(1));
        const int64_t now = kiln::storage::UnixNowNs();
        kiln::storage::ProfileBatch batch = kiln::app::BuildDemoProfile(now);
        std::erase_if(batch.samples,
                      [&](const kiln::storage::Sample& s) { return s.time_ns < now - 1'000'000'000; });
        (void)(*store)->Write(batch);
      }
    });
  }
  const int status = kiln::app::RunGui(**store, nullptr, options);
  stop = true;
  if (feeder.joinable()) feeder.join();
  if (std::getenv("KILN_REPORT_RSS")) {
    std::fprintf(stderr, "kiln_gui_shot: peak RSS %.1f MB\n", ReadStatusKb("VmHWM:") / 1024.0);
  }
  return status;
}
