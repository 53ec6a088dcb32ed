// File > Open through the desktop's file chooser: the real kiln window, a
// private D-Bus session bus with the real xdg-desktop-portal on it, and a
// FileChooser backend (portal_test_backend.py) standing where a desktop's
// dialog would be, answering with a capture file. Ctrl+O is typed into the
// window through XTest, as a user would. Without a portal on the bus the
// same keys fall back to Kiln's own browser and the Log says why.
//
// Needs a display (its own Xvfb when DISPLAY is unset), dbus-daemon,
// xdg-desktop-portal and python3-dbus; without the display it exits 77.
#include <doctest/doctest.h>
#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "storage/store.h"

#define KILN_TEST_NAME "gui_file_dialog_test"
#include "tests/gui/screenshot_checks.h"
// Xlib last (its macros break the headers above).
#include "tests/gui/x11_window.h"

namespace kiln {
namespace {

using Clock = std::chrono::steady_clock;

template <typename F>
bool WaitFor(F done, int seconds) {
  for (auto deadline = Clock::now() + std::chrono::seconds(seconds); Clock::now() < deadline;) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return done();
}

bool LogHas(const std::string& store_dir, const std::string& needle) {
  auto store = storage::Store::Open(store_dir, storage::Store::Mode::kReadOnly);
  if (!store.ok()) return false;
  for (const auto& e : (*store)->ReadLog(200)) {
    if (e.message.find(needle) != std::string::npos) return true;
  }
  return false;
}

// Starts the kiln window on `store`; then, once it is up, types Ctrl+`key`
// into it as a user would.
pid_t StartKilnAndType(const std::string& store, KeySym key) {
  const pid_t kiln =
      testing::SpawnChild({KILN_BIN, "--listen", "127.0.0.1:0", "--data-dir", store, "--size", "900x600"});
  Display* d = XOpenDisplay(nullptr);
  if (!d) testing::KillChild(kiln);  // a failed REQUIRE leaves nothing running
  REQUIRE(d != nullptr);
  const Window w = testing::WaitForKilnWindow(d);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // drawing
  if (w) {
    XSetInputFocus(d, w, RevertToParent, CurrentTime);
    XSync(d, False);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    testing::TypeKey(d, key, XK_Control_L);
  }
  XCloseDisplay(d);
  if (!w) testing::KillChild(kiln);
  REQUIRE_MESSAGE(w != 0, "no kiln window appeared");
  return kiln;
}

TEST_CASE("Ctrl+O asks the desktop portal's file chooser and opens the file it answers") {
  testing::TestDisplay::Get(KILN_TEST_NAME);
  unsetenv("DEBUGINFOD_URLS");
  for (const char* tool : {"dbus-daemon", "gdbus"}) REQUIRE_MESSAGE(testing::OnPath(tool), tool << " is missing");
  REQUIRE(fs::exists("/usr/libexec/xdg-desktop-portal"));
  const std::string dir = MakeTempDir();
  setenv("XDG_CONFIG_HOME", (dir + "/config").c_str(), 1);
  setenv("XDG_STATE_HOME", (dir + "/state").c_str(), 1);
  const std::string capture = dir + "/picked.folded";
  std::ofstream(capture) << "main;chosen;leaf 5\n";

  // The bus, the backend, then the portal, each in this test's environment.
  const std::string bus = dir + "/bus";
  setenv("DBUS_SESSION_BUS_ADDRESS", ("unix:path=" + bus).c_str(), 1);
  setenv("XDG_CURRENT_DESKTOP", "kilntest", 1);
  fs::create_directories(dir + "/portals");
  std::ofstream(dir + "/portals/kilntest.portal") << "[portal]\n"
                                                     "DBusName=org.freedesktop.impl.portal.desktop.kilntest\n"
                                                     "Interfaces=org.freedesktop.impl.portal.FileChooser\n"
                                                     "UseIn=kilntest\n";
  setenv("XDG_DESKTOP_PORTAL_DIR", (dir + "/portals").c_str(), 1);
  const std::string backend_log = dir + "/backend.log";
  setenv("KILN_TEST_LOG", backend_log.c_str(), 1);
  setenv("KILN_TEST_PICK", ("file://" + capture).c_str(), 1);
  testing::ScopedChild dbus(testing::SpawnChild(
      {"dbus-daemon", "--session", "--nofork", "--address=unix:path=" + bus}, testing::ChildOutput::Null(),
      testing::ChildOutput::File(dir + "/dbus.log")));
  REQUIRE(WaitFor([&] { return fs::exists(bus); }, 20));
  const std::string source = std::getenv("KILN_SOURCE_DIR") ? std::getenv("KILN_SOURCE_DIR") : ".";
  testing::ScopedChild backend(testing::SpawnChild({"/usr/bin/python3", source + "/tests/gui/portal_test_backend.py"},
                                                   testing::ChildOutput::Null(),
                                                   testing::ChildOutput::File(dir + "/backend.err")));
  REQUIRE_MESSAGE(WaitFor([&] { return ReadText(backend_log).find("ready") != std::string::npos; }, 20),
                  "the backend did not start: " << ReadText(dir + "/backend.err"));
  testing::ScopedChild portal(testing::SpawnChild({"/usr/libexec/xdg-desktop-portal", "-r"},
                                                  testing::ChildOutput::Null(),
                                                  testing::ChildOutput::File(dir + "/portal.log")));
  REQUIRE_MESSAGE(WaitFor(
                      [] {
                        FILE* p = popen(
                            "gdbus call --session --dest org.freedesktop.DBus --object-path /org/freedesktop/DBus "
                            "--method org.freedesktop.DBus.NameHasOwner org.freedesktop.portal.Desktop 2>/dev/null",
                            "r");
                        if (!p) return false;
                        char buf[64] = {};
                        const bool yes = std::fgets(buf, sizeof buf, p) && std::string(buf).find("true") != std::string::npos;
                        pclose(p);
                        return yes;
                      },
                      20),
                  "xdg-desktop-portal did not come up: " << ReadText(dir + "/portal.log"));

  const std::string store = dir + "/store";
  testing::ScopedChild kiln(StartKilnAndType(store, XK_o));
  CHECK(WaitFor([&] { return ReadText(backend_log).find("open Open a capture") != std::string::npos; }, 30));
  CHECK(WaitFor([&] { return LogHas(store, "Opened " + capture); }, 30));
  CHECK(!LogHas(store, "No desktop file chooser"));
  CHECK(kiln.Stop(SIGTERM) == 0);
  // Opened through the chooser, so it is a recent capture too.
  CHECK(ReadText(dir + "/state/kiln/state.ini").find("recent = " + capture) != std::string::npos);
  for (const char* v : {"DBUS_SESSION_BUS_ADDRESS", "XDG_CURRENT_DESKTOP", "XDG_DESKTOP_PORTAL_DIR"}) unsetenv(v);
  fs::remove_all(dir);
}

TEST_CASE("without a portal, Ctrl+O falls back to Kiln's own browser and the Log says why") {
  testing::TestDisplay::Get(KILN_TEST_NAME);
  const std::string dir = MakeTempDir();
  setenv("XDG_CONFIG_HOME", (dir + "/config").c_str(), 1);
  setenv("XDG_STATE_HOME", (dir + "/state").c_str(), 1);
  setenv("DBUS_SESSION_BUS_ADDRESS", ("unix:path=" + dir + "/no-bus-here").c_str(), 1);
  const std::string store = dir + "/store";
  testing::ScopedChild kiln(StartKilnAndType(store, XK_o));
  CHECK(WaitFor([&] { return LogHas(store, "No desktop file chooser (no D-Bus session bus"); }, 30));
  CHECK(kiln.Stop(SIGTERM) == 0);
  unsetenv("DBUS_SESSION_BUS_ADDRESS");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kiln
