// Finding kiln's window on the test display through Xlib, for GUI tests
// that talk to the window as a desktop would (drag and drop, icon, class).
// Test-only. Include after every other header: Xlib's macros (Status, None,
// True, ...) break headers that come after it.
#pragma once

#include <chrono>
#include <cstring>
#include <thread>

// clang-format off
#include <X11/Xlib.h>
#include <X11/Xatom.h>
#include <X11/Xutil.h>
#include <X11/keysym.h>
#if __has_include(<X11/extensions/XTest.h>)
#include <X11/extensions/XTest.h>  // typing into the window (link Xtst to use it)
#endif
#undef Status
// clang-format on

namespace kiln::testing {

// The window at or below `w` whose name contains `name`, or 0.
inline Window FindWindow(Display* d, Window w, const char* name) {
  char* wm_name = nullptr;
  if (XFetchName(d, w, &wm_name) && wm_name) {
    const bool match = std::strstr(wm_name, name) != nullptr;
    XFree(wm_name);
    if (match) return w;
  }
  Window root_ret, parent;
  Window* children = nullptr;
  unsigned n = 0;
  Window found = 0;
  if (XQueryTree(d, w, &root_ret, &parent, &children, &n)) {
    for (unsigned i = 0; i < n && !found; ++i) found = FindWindow(d, children[i], name);
    if (children) XFree(children);
  }
  return found;
}

// kiln's window once it is mapped (up to a minute: a cold start under a
// sanitizer is slow), or 0. Not before: XSetInputFocus on a window that
// exists but is not yet viewable is BadMatch, which Xlib's default handler
// answers by exiting the test (seen in a fresh-clone run).
inline Window WaitForKilnWindow(Display* d) {
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
       std::chrono::steady_clock::now() < deadline;) {
    const Window w = FindWindow(d, DefaultRootWindow(d), "Kiln");
    XWindowAttributes a{};
    if (w && XGetWindowAttributes(d, w, &a) && a.map_state == IsViewable) return w;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return 0;
}

#if __has_include(<X11/extensions/XTest.h>)
// Types `key` (with `modifier` held, when given) into the focused window,
// each held long enough for the window to draw a frame with it down.
inline void TypeKey(Display* d, KeySym key, KeySym modifier = NoSymbol) {
  const KeyCode k = XKeysymToKeycode(d, key);
  const KeyCode m = modifier == NoSymbol ? 0 : XKeysymToKeycode(d, modifier);
  if (m != 0) {
    XTestFakeKeyEvent(d, m, True, 0);
    XSync(d, False);
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
  }
  XTestFakeKeyEvent(d, k, True, 0);
  XSync(d, False);
  std::this_thread::sleep_for(std::chrono::milliseconds(m != 0 ? 400 : 150));
  XTestFakeKeyEvent(d, k, False, 0);
  if (m != 0) XTestFakeKeyEvent(d, m, False, 0);
  XSync(d, False);
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
}

// Clicks `button` (1 left, 3 right) `clicks` times at (x, y) of window `w`,
// quickly enough for a double-click.
inline void ClickAt(Display* d, Window w, int x, int y, int clicks = 1, unsigned button = 1) {
  int screen_x = 0, screen_y = 0;
  Window child;
  XTranslateCoordinates(d, w, DefaultRootWindow(d), x, y, &screen_x, &screen_y, &child);
  XTestFakeMotionEvent(d, -1, screen_x, screen_y, 0);
  XSync(d, False);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  for (int i = 0; i < clicks; ++i) {
    XTestFakeButtonEvent(d, button, True, 0);
    XSync(d, False);
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    XTestFakeButtonEvent(d, button, False, 0);
    XSync(d, False);
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
}
#endif

}  // namespace kiln::testing
