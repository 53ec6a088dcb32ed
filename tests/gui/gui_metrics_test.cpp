// `kiln --metrics-listen` with the window: the real kiln window on a data
// dir, scraped over HTTP as Prometheus would, the text read back by
// prometheus_client. The window serves what `kiln --headless` serves,
// the background symbolizer's progress included (it had no symbolizer
// series: the window's symbolizer lives inside it, and the metrics are
// started before it).
//
// Needs a display (its own Xvfb when DISPLAY is unset); without one it
// exits 77.
#include <doctest/doctest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <thread>

#define KILN_TEST_NAME "gui_metrics_test"
#include "tests/free_port.h"
#include "tests/gui/screenshot_checks.h"
#include "tests/prometheus_scrape.h"

namespace kiln {
namespace {

bool Listening(int port) {
  const int fd = testing::ConnectLoopback(port);
  if (fd >= 0) close(fd);
  return fd >= 0;
}

TEST_CASE("the window's --metrics-listen serves the receiver's, the store's and the symbolizer's series") {
  testing::TestDisplay::Get(KILN_TEST_NAME);
  REQUIRE_MESSAGE(testing::HavePrometheusParser(),
                  "python3-prometheus-client is the oracle (packaging/debian-packages.txt)");
  const std::string dir = MakeTempDir();
  setenv("XDG_CONFIG_HOME", (dir + "/config").c_str(), 1);
  setenv("XDG_STATE_HOME", (dir + "/state").c_str(), 1);
  const int port = testing::FreePort();
  REQUIRE(port > 0);
  testing::ScopedChild kiln(testing::SpawnChild({KILN_BIN, "--listen", "127.0.0.1:0", "--data-dir", dir + "/store",
                                                 "--size", "900x600", "--metrics-listen",
                                                 "127.0.0.1:" + std::to_string(port)}));
  // The symbolizer starts with the window's first frame; its series come
  // with it.
  std::map<std::string, double> m;
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
       std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(std::chrono::milliseconds(200))) {
    if (!Listening(port)) continue;
    const auto [status, body] = testing::ScrapeMetrics(port);
    REQUIRE_MESSAGE(status.find(" 200 ") != std::string::npos, status);
    m = testing::ParsePrometheus(body);
    if (m.count("kiln_symbolizer_busy{}")) break;
  }
  CHECK(m.count("kiln_requests_total{}") == 1);  // the receiver's
  CHECK(m.count("kiln_store_samples{}") == 1);   // the store's
  CHECK(m.count("kiln_symbolizer_busy{}") == 1);
  CHECK(m.count("kiln_symbolizer_queued_files{}") == 1);
  CHECK(m.count("kiln_symbolizer_files_done_total{}") == 1);
  // It stops with the window, cleanly.
  CHECK(kiln.Stop(SIGTERM) == 0);
  CHECK_FALSE(Listening(port));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kiln
