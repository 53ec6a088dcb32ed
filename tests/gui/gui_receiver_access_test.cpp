// The status line's way out of "open to the network, no token", clicked in
// the real window as a user would (XTest), the result checked where it
// matters: the token file on disk (mode 0600), the receiver really
// refusing a sender without the token and accepting one with it, or the
// listen address saved for the next start. kiln listens on all interfaces
// on a free port, so the red button shows.
//
// Buttons are found by their colours in the window's pixels (read back
// from the X server): the red alarm button in the status line, then the
// popup's buttons as the button-coloured areas that were not there before
// it opened, top to bottom.
//
// Needs a display (its own Xvfb when DISPLAY is unset); without one it
// exits 77.
#include <doctest/doctest.h>
#include <grpcpp/grpcpp.h>
#include <imgui.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.grpc.pb.h"
#include "tests/free_port.h"
#include "ui/theme.h"

#define KILN_TEST_NAME "gui_receiver_access_test"
#include "tests/gui/screenshot_checks.h"
// Xlib last (its macros break the headers above).
#include "tests/gui/x11_window.h"

namespace kiln {
namespace {

using Clock = std::chrono::steady_clock;
namespace collector = opentelemetry::proto::collector::profiles::v1development;

int IgnoreXError(Display*, XErrorEvent*) { return 0; }

// The window's pixels now; empty while it is not viewable.
Image Grab(Display* d, Window w) {
  Image out;
  XWindowAttributes a{};
  if (!XGetWindowAttributes(d, w, &a) || a.map_state != IsViewable) return out;
  XErrorHandler previous = XSetErrorHandler(IgnoreXError);
  XImage* image = XGetImage(d, w, 0, 0, a.width, a.height, AllPlanes, ZPixmap);
  XSync(d, False);
  XSetErrorHandler(previous);
  if (image == nullptr) return out;
  out.width = a.width;
  out.height = a.height;
  out.pixels.resize(static_cast<size_t>(a.width) * a.height);
  for (int y = 0; y < a.height; ++y) {
    for (int x = 0; x < a.width; ++x) {
      const unsigned long p = XGetPixel(image, x, y);
      out.pixels[static_cast<size_t>(y) * a.width + x] =
          ui::PackRgba((p >> 16) & 0xff, (p >> 8) & 0xff, p & 0xff);
    }
  }
  XDestroyImage(image);
  return out;
}

struct Box {
  int x0 = 1 << 30, y0 = 1 << 30, x1 = -1, y1 = -1;
  bool empty() const { return x1 < 0; }
  int cx() const { return (x0 + x1) / 2; }
  int cy() const { return (y0 + y1) / 2; }
  void Add(int x, int y) {
    x0 = std::min(x0, x), y0 = std::min(y0, y), x1 = std::max(x1, x), y1 = std::max(y1, y);
  }
};

// The bounding box of `color` in `now` where `before` (when given) had
// another colour, limited to rows [row0, row1].
Box Find(const Image& now, ui::Rgba color, const Image* before = nullptr, int row0 = 0, int row1 = 1 << 30) {
  Box box;
  for (int y = std::max(0, row0); y < now.height && y <= row1; ++y) {
    for (int x = 0; x < now.width; ++x) {
      const size_t i = static_cast<size_t>(y) * now.width + x;
      if (now.pixels[i] != color) continue;
      if (before && before->width == now.width && before->pixels[i] == color) continue;
      box.Add(x, y);
    }
  }
  return box;
}

// The first button-coloured area from the top that was not there before
// (its rows run on until a row without such pixels).
Box FirstNewArea(const Image& now, const Image& before, ui::Rgba color) {
  const Box all = Find(now, color, &before);
  if (all.empty()) return all;
  int y = all.y0;
  while (y + 1 <= all.y1 && !Find(now, color, &before, y + 1, y + 1).empty()) ++y;
  return Find(now, color, &before, all.y0, y);
}

// Waits until `found(picture)` gives a non-empty box.
template <typename F>
Box WaitFor(Display* d, Window w, F found, Image* picture = nullptr) {
  for (auto deadline = Clock::now() + std::chrono::seconds(20);;) {
    Image now = Grab(d, w);
    Box box = now.width ? found(now) : Box{};
    if (!box.empty() || Clock::now() > deadline) {
      if (picture) *picture = std::move(now);
      return box;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

// A left click at window coordinates, slow enough for the window to see
// the pointer arrive (hover) before the press.
void Click(Display* d, Window w, int x, int y) {
  int rx = 0, ry = 0;
  Window child;
  XTranslateCoordinates(d, w, DefaultRootWindow(d), x, y, &rx, &ry, &child);
  XTestFakeMotionEvent(d, -1, rx, ry, CurrentTime);
  XSync(d, False);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  XTestFakeButtonEvent(d, 1, True, CurrentTime);
  XSync(d, False);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  XTestFakeButtonEvent(d, 1, False, CurrentTime);
  XSync(d, False);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
}

// ImGui's float colours as the window draws them (IM_F32_TO_INT8_SAT).
ui::Rgba Drawn(const ImVec4& c) {
  auto b = [](float v) { return static_cast<int>(std::clamp(v, 0.f, 1.f) * 255.f + 0.5f); };
  return ui::PackRgba(b(c.x), b(c.y), b(c.z));
}

// The dark theme's alarm and button colours, from the theme itself.
struct Colors {
  ui::Rgba alarm, alarm_hovered, button;
};
Colors ThemeColors() {
  ImGui::CreateContext();
  ui::ApplyTheme(1.f, false);
  Colors c{Drawn(ui::CurrentPalette().alarm_button), Drawn(ui::CurrentPalette().alarm_button_hovered),
           Drawn(ImGui::GetStyle().Colors[ImGuiCol_Button])};
  ImGui::DestroyContext();
  return c;
}

grpc::Status Send(int port, const std::string& token) {
  auto stub = collector::ProfilesService::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
  collector::ExportProfilesServiceRequest request;
  collector::ExportProfilesServiceResponse response;
  return stub->Export(&context, request, &response);
}

// kiln open to the network on a free port, in its own XDG folders; clicks
// the red status-line button, then the popup's `choice`-th button (0 is
// "Require a token", 1 "Listen on loopback only"). Leaves the window up.
struct AccessWindow {
  explicit AccessWindow(int choice) : dir(MakeTempDir()), port(testing::FreePort()) {
    testing::TestDisplay::Get(KILN_TEST_NAME);
    unsetenv("KILN_AUTH_TOKEN");
    unsetenv("DEBUGINFOD_URLS");
    setenv("XDG_CONFIG_HOME", (dir + "/config").c_str(), 1);
    setenv("XDG_STATE_HOME", (dir + "/state").c_str(), 1);
    REQUIRE(port != 0);
    const Colors colors = ThemeColors();
    kiln.emplace(testing::SpawnChild({KILN_BIN, "--listen", "0.0.0.0:" + std::to_string(port), "--data-dir",
                                      dir + "/store", "--size", "1100x650"}));
    d = XOpenDisplay(nullptr);
    REQUIRE(d != nullptr);
    for (auto deadline = Clock::now() + std::chrono::seconds(60); !w && Clock::now() < deadline;) {
      w = testing::FindWindow(d, DefaultRootWindow(d), "Kiln");
      if (!w) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    REQUIRE_MESSAGE(w != 0, "no kiln window appeared");

    // The red "open to the network, no token" button, low in the window.
    Image before;
    const Box alarm = WaitFor(
        d, w, [&](const Image& im) { return Find(im, colors.alarm); }, &before);
    REQUIRE_MESSAGE(!alarm.empty(), "no red access button in the window");
    CHECK(alarm.y0 > before.height * 3 / 4);
    CHECK(Send(port, "").ok());  // open indeed
    Click(d, w, alarm.cx(), alarm.cy());
    // The popup: its buttons are the new button-coloured areas.
    Image popup;
    const Box first = WaitFor(
        d, w, [&](const Image& im) { return FirstNewArea(im, before, colors.button); }, &popup);
    REQUIRE_MESSAGE(!first.empty(), "the click opened no popup with buttons");
    Box target = first;
    if (choice == 1) {
      // The next area below the first.
      const Box rest = Find(popup, colors.button, &before, first.y1 + 2);
      REQUIRE(!rest.empty());
      target = Find(popup, colors.button, &before, rest.y0, rest.y0 + (first.y1 - first.y0));
    }
    Click(d, w, target.cx(), target.cy());
    // The red button goes once the receiver has restarted the chosen way.
    const Box gone = WaitFor(d, w, [&](const Image& im) {
      Box b = Find(im, colors.alarm);
      Box h = Find(im, colors.alarm_hovered);
      return b.empty() && h.empty() ? Box{0, 0, 0, 0} : Box{};
    });
    CHECK_MESSAGE(!gone.empty(), "the status line is still red after the choice");
  }
  ~AccessWindow() {
    if (d) XCloseDisplay(d);
    if (kiln) CHECK(kiln->Stop(SIGTERM) == 0);
    for (const char* v : {"XDG_CONFIG_HOME", "XDG_STATE_HOME"}) unsetenv(v);
    fs::remove_all(dir);
  }
  std::string dir;
  int port;
  std::optional<testing::ScopedChild> kiln;
  Display* d = nullptr;
  Window w = 0;
};

TEST_CASE("Require a token, clicked in the status line: a 0600 token file, and senders without it refused") {
  AccessWindow window(0);
  const std::string token_file = window.dir + "/config/kiln/auth-token";
  REQUIRE(fs::exists(token_file));
  struct stat st {};
  REQUIRE(stat(token_file.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  std::string token = ReadText(token_file);
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
  CHECK(token.size() >= 32);
  const grpc::Status without = Send(window.port, "");
  CHECK(without.error_code() == grpc::StatusCode::UNAUTHENTICATED);
  CHECK(without.error_message().find("authorization: Bearer") != std::string::npos);
  CHECK(Send(window.port, "not-the-token").error_code() == grpc::StatusCode::UNAUTHENTICATED);
  const grpc::Status with = Send(window.port, token);
  CHECK_MESSAGE(with.ok(), with.error_message());
}

TEST_CASE(
    "Listen on loopback only, clicked in the status line: saved for the next start, still served here") {
  AccessWindow window(1);
  const std::string settings = ReadText(window.dir + "/config/kiln/settings.ini");
  CHECK(settings.find("listen = 127.0.0.1:" + std::to_string(window.port)) != std::string::npos);
  CHECK(Send(window.port, "").ok());  // loopback senders, no token asked
  CHECK_FALSE(fs::exists(window.dir + "/config/kiln/auth-token"));
}

}  // namespace
}  // namespace kiln
