// Tests that open windows call TestDisplay::Get() first: it keeps an
// existing DISPLAY, else starts a private Xvfb, else prints why and exits 77
// so ctest reports the test as skipped. A test that can skip for another
// reason checks that before calling Get().
//
// The Xvfb never outlives the test nor holds its output: it is started with
// tests/child_process.h (output to a log file in /tmp, stdin /dev/null, no
// inherited descriptors, SIGKILL when the test process dies by any path),
// and terminated here at normal exit.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "tests/child_process.h"

namespace kiln::testing {

inline constexpr int kSkip = 77;

inline bool OnPath(const std::string& name) { return !FindOnPath(name).empty(); }

// Xvfb started by this test (killed at exit), or an existing display.
class TestDisplay {
 public:
  static TestDisplay& Get(const char* test_name) {
    static TestDisplay display(test_name);
    return display;
  }
  ~TestDisplay() {
    if (xvfb_ > 0) {
      kill(xvfb_, SIGTERM);
      WaitChild(xvfb_);
    }
  }

 private:
  explicit TestDisplay(const char* test_name) {
    const char* display = std::getenv("DISPLAY");
    if (display && *display) return;
    if (!OnPath("Xvfb")) {
      std::printf("%s: skipped: DISPLAY is not set and Xvfb is not installed (apt install xvfb)\n",
                  test_name);
      std::fflush(stdout);
      std::_Exit(kSkip);
    }
    for (int n = 90; n < 140; ++n) {
      const std::string socket = "/tmp/.X11-unix/X" + std::to_string(n);
      const std::string lock = "/tmp/.X" + std::to_string(n) + "-lock";
      if (std::filesystem::exists(socket) || std::filesystem::exists(lock)) continue;
      const std::string log = "/tmp/kiln-test-xvfb-" + std::to_string(getpid()) + ".log";
      const pid_t pid = SpawnChild({"Xvfb", ":" + std::to_string(n), "-screen", "0", "1920x1200x24", "-nolisten",
                                    "tcp"},
                                   ChildOutput::Null(), ChildOutput::File(log));
      for (int i = 0; i < 100 && !std::filesystem::exists(socket); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (!std::filesystem::exists(socket)) {
        KillChild(pid);
        continue;
      }
      std::remove(log.c_str());
      xvfb_ = pid;
      setenv("DISPLAY", (":" + std::to_string(n)).c_str(), 1);
      return;
    }
    std::printf("%s: skipped: could not start Xvfb on displays :90..:139\n", test_name);
    std::_Exit(kSkip);
  }
  pid_t xvfb_ = 0;
};

}  // namespace kiln::testing
