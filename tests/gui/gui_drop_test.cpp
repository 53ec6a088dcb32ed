// Dropping files on the kiln window, the way a file manager does it (the X11
// drag-and-drop protocol, XDND): a good capture is opened and a bad one
// gives an error naming the file; a dropped ELF debug file adds symbols to
// the executable it matches and another ELF file says it matches nothing;
// all recorded in the live store's Log; then SIGTERM closes the window
// cleanly.
//
// Needs a display (its own Xvfb when DISPLAY is unset); without one it
// prints why and exits 77 (ctest: skipped).
#include <doctest/doctest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "storage/model/test_fixtures.h"
#include "storage/store.h"
#include "tests/child_process.h"
#include "tests/gui/test_display.h"

// Xlib last: its macros (Status, None, True, ...) would break the headers
// above.
#include "tests/gui/x11_window.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string MakeTempDir() {
  std::string tmpl = (fs::temp_directory_path() / "kiln-drop-test-XXXXXX").string();
  REQUIRE(mkdtemp(tmpl.data()) != nullptr);
  return tmpl;
}

using testing::FindWindow;

void SendXdnd(Display* d, Window target, const char* type, const long (&data)[5]) {
  XEvent e{};
  e.xclient.type = ClientMessage;
  e.xclient.display = d;
  e.xclient.window = target;
  e.xclient.message_type = XInternAtom(d, type, False);
  e.xclient.format = 32;
  for (int i = 0; i < 5; ++i) e.xclient.data.l[i] = data[i];
  XSendEvent(d, target, False, NoEventMask, &e);
  XFlush(d);
}

#ifdef KILN_VICTIM_DEBUG
// A native frame of the test program as a profile from another host names
// it: path missing here, GNU build id (from readelf) known.
void StoreVictimFrame(const std::string& dir) {
  FILE* p = popen("readelf -n '" KILN_VICTIM_DEBUG "' | sed -n 's/.*Build ID: *//p'", "r");
  REQUIRE(p != nullptr);
  char id[128] = {};
  REQUIRE(std::fgets(id, sizeof id, p) != nullptr);
  pclose(p);
  std::string build_id(id);
  while (!build_id.empty() && (build_id.back() == '\n' || build_id.back() == ' ')) build_id.pop_back();
  const storage::ProfileBatch b = storage::testing::OneNativeSample({"/nonexistent/victim", "", build_id});
  auto store = storage::Store::Open(dir, storage::Store::Mode::kReadWrite);
  REQUIRE(store.ok());
  REQUIRE((*store)->Write(b).ok());
}
#endif

// Drops `files` on `target` as a file manager would; true when the target
// said it finished (XdndFinished).
bool DropFiles(Display* d, Window target, const std::vector<std::string>& files) {
  const Window source = XCreateSimpleWindow(d, DefaultRootWindow(d), 0, 0, 1, 1, 0, 0, 0);
  const Atom selection = XInternAtom(d, "XdndSelection", False);
  const Atom uri_list = XInternAtom(d, "text/uri-list", False);
  XSetSelectionOwner(d, selection, source, CurrentTime);
  std::string uris;
  for (const auto& f : files) uris += "file://" + f + "\r\n";

  SendXdnd(d, target, "XdndEnter", {static_cast<long>(source), 5L << 24, static_cast<long>(uri_list), 0, 0});
  SendXdnd(d, target, "XdndPosition",
           {static_cast<long>(source), 0, (100L << 16) | 100L, CurrentTime,
            static_cast<long>(XInternAtom(d, "XdndActionCopy", False))});
  const Atom status = XInternAtom(d, "XdndStatus", False);
  const Atom finished = XInternAtom(d, "XdndFinished", False);
  bool dropped = false;
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (Clock::now() < deadline) {
    while (XPending(d)) {
      XEvent e;
      XNextEvent(d, &e);
      if (e.type == ClientMessage && e.xclient.message_type == status && !dropped) {
        SendXdnd(d, target, "XdndDrop", {static_cast<long>(source), 0, CurrentTime, 0, 0});
        dropped = true;
      } else if (e.type == SelectionRequest) {
        // The target asks for the dropped data: hand it the URI list.
        const XSelectionRequestEvent& r = e.xselectionrequest;
        XChangeProperty(d, r.requestor, r.property, r.target, 8, PropModeReplace,
                        reinterpret_cast<const unsigned char*>(uris.data()), static_cast<int>(uris.size()));
        XEvent notify{};
        notify.xselection.type = SelectionNotify;
        notify.xselection.requestor = r.requestor;
        notify.xselection.selection = r.selection;
        notify.xselection.target = r.target;
        notify.xselection.property = r.property;
        notify.xselection.time = r.time;
        XSendEvent(d, r.requestor, False, NoEventMask, &notify);
        XFlush(d);
      } else if (e.type == ClientMessage && e.xclient.message_type == finished) {
        XDestroyWindow(d, source);
        return true;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  XDestroyWindow(d, source);
  return false;
}

// The live store's log (read-only: kiln holds the store open).
std::vector<storage::LogEntry> ReadLog(const std::string& dir) {
  auto store = storage::Store::Open(dir, storage::Store::Mode::kReadOnly);
  if (!store.ok()) return {};
  return (*store)->ReadLog(100);
}

bool Logged(const std::vector<storage::LogEntry>& log, storage::LogLevel level, const std::string& needle) {
  for (const auto& e : log) {
    if (e.level == level && e.message.find(needle) != std::string::npos) return true;
  }
  return false;
}

TEST_CASE("files dropped on the window open as captures or add symbols; bad ones show their errors") {
  testing::TestDisplay::Get("gui_drop_test");
  unsetenv("DEBUGINFOD_URLS");  // no internet lookups for the dropped files' executables
  const std::string dir = MakeTempDir();
  const std::string store_dir = dir + "/store";
  const std::string good = dir + "/stacks.folded";
  const std::string bad = dir + "/broken.pb";
  std::ofstream(good) << "main;work;leaf 3\nmain;idle 1\n";
  std::ofstream(bad, std::ios::binary) << std::string("\x0a\xff\xff\xff\xff\x0f", 6);
  std::vector<std::string> drop{good, bad};
#ifdef KILN_VICTIM_DEBUG
  // ELF files go to the symbolizer instead: a debug file that matches the
  // stored executable, and another program that matches nothing.
  StoreVictimFrame(store_dir);
  drop.push_back(KILN_VICTIM_DEBUG);
  drop.push_back(KILN_VICTIM_OTHER);
#endif

  testing::ScopedChild kiln(
      testing::SpawnChild({KILN_BIN, "--listen", "127.0.0.1:0", "--data-dir", store_dir, "--size", "800x600"}));
  Display* d = XOpenDisplay(nullptr);
  REQUIRE(d != nullptr);
  // The window, once GLFW has made it a drop target.
  const Atom aware = XInternAtom(d, "XdndAware", False);
  Window target = 0;
  for (auto deadline = Clock::now() + std::chrono::seconds(60); Clock::now() < deadline;) {
    target = FindWindow(d, DefaultRootWindow(d), "Kiln");
    if (target) {
      Atom type;
      int format;
      unsigned long items, after;
      unsigned char* prop = nullptr;
      const bool has = XGetWindowProperty(d, target, aware, 0, 1, False, AnyPropertyType, &type, &format,
                                          &items, &after, &prop) == Success &&
                       prop != nullptr;
      if (prop) XFree(prop);
      if (has) break;
    }
    target = 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE_MESSAGE(target != 0, "no kiln window appeared");
  CHECK(DropFiles(d, target, drop));

  // Both outcomes land in the live store's Log.
  bool opened = false, failed = false;
#ifdef KILN_VICTIM_DEBUG
  bool symbols = false, unmatched = false;
#else
  bool symbols = true, unmatched = true;
#endif
  for (auto deadline = Clock::now() + std::chrono::seconds(60);
       Clock::now() < deadline && !(opened && failed && symbols && unmatched);) {
    const auto log = ReadLog(store_dir);
    opened = Logged(log, storage::LogLevel::kInfo, "Opened " + good);
    failed = Logged(log, storage::LogLevel::kError, "Cannot open " + bad + ": byte ");
#ifdef KILN_VICTIM_DEBUG
    symbols = Logged(log, storage::LogLevel::kInfo,
                     std::string("Symbols from ") + KILN_VICTIM_DEBUG + ": matched /nonexistent/victim");
    unmatched = Logged(log, storage::LogLevel::kError,
                       std::string("Symbols from ") + KILN_VICTIM_OTHER + ": matches no executable in ");
#endif
    if (!(opened && failed && symbols && unmatched)) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  CHECK(opened);
  CHECK(failed);
  CHECK(symbols);
  CHECK(unmatched);
  XCloseDisplay(d);

  // SIGTERM closes the window like its close button.
  CHECK(kiln.Stop(SIGTERM) == 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kiln
