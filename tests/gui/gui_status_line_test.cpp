// The status line's alarms and the dialogs behind them, driven in the real
// window as a user would (XTest clicks and keys), each result checked
// where it matters rather than on the screen alone:
// - "open to the network, no token": Require a token (the token file on
//   disk, mode 0600, and the receiver really refusing a sender without it)
//   or Listen on loopback only (saved for the next start);
// - "N refused or cut": the Data quality panel, with the reason marked;
// - Store settings (File > Store settings by keyboard; a click on the
//   status line's store size opens the same dialog): a retention age typed
//   in deletes the old samples from the store at once and is saved.
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

#include "ingest/otlp_request_builder.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.grpc.pb.h"
#include "storage/store.h"
#include "tests/free_port.h"
#include "ui/theme.h"

#define KILN_TEST_NAME "gui_status_line_test"
#include "tests/gui/screenshot_checks.h"
// Xlib last (its macros break the headers above).
#include "tests/gui/x11_window.h"
// After both: Image and Xlib.
#include "tests/gui/window_pixels.h"

namespace kiln {
namespace {

using Clock = std::chrono::steady_clock;
using testing::Box;
using testing::Find;
using testing::WaitFor;
namespace collector = opentelemetry::proto::collector::profiles::v1development;

// The dark theme's colours that mark things, from the theme itself.
struct Colors {
  ui::Rgba alarm, alarm_hovered, button, error_text, window;
};
Colors ThemeColors() {
  ImGui::CreateContext();
  ui::ApplyTheme(1.f, false);
  const ui::Palette& p = ui::CurrentPalette();
  Colors c{testing::Drawn(p.alarm_button), testing::Drawn(p.alarm_button_hovered),
           testing::Drawn(ImGui::GetStyle().Colors[ImGuiCol_Button]), testing::Drawn(p.error_text),
           testing::Drawn(ImGui::GetStyle().Colors[ImGuiCol_WindowBg])};
  ImGui::DestroyContext();
  return c;
}

grpc::Status Send(int port, const std::string& token, collector::ExportProfilesServiceRequest request = {},
                  collector::ExportProfilesServiceResponse* response = nullptr) {
  auto stub = collector::ProfilesService::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
  collector::ExportProfilesServiceResponse ignored;
  return stub->Export(&context, request, response ? response : &ignored);
}

// kiln on a free port of `host`, in its own XDG folders and store, its
// window found. Stopped (and checked to exit cleanly) at the end.
struct KilnWindow {
  explicit KilnWindow(const std::string& host, std::vector<std::string> more_args = {})
      : dir(MakeTempDir()), port(testing::FreePort()) {
    testing::TestDisplay::Get(KILN_TEST_NAME);
    unsetenv("KILN_AUTH_TOKEN");
    unsetenv("DEBUGINFOD_URLS");
    setenv("XDG_CONFIG_HOME", (dir + "/config").c_str(), 1);
    setenv("XDG_STATE_HOME", (dir + "/state").c_str(), 1);
    REQUIRE(port != 0);
    std::vector<std::string> argv{KILN_BIN, "--listen", host + ":" + std::to_string(port), "--data-dir",
                                  dir + "/store", "--size", "1100x650"};
    argv.insert(argv.end(), more_args.begin(), more_args.end());
    kiln.emplace(testing::SpawnChild(argv));
    d = XOpenDisplay(nullptr);
    REQUIRE(d != nullptr);
    w = testing::WaitForKilnWindow(d);
    REQUIRE_MESSAGE(w != 0, "no kiln window appeared");
  }
  ~KilnWindow() {
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

// kiln open to the network; clicks the red status-line button, then the
// popup's `choice`-th button (0 is "Require a token", 1 "Listen on
// loopback only"). Leaves the window up.
struct AccessWindow : KilnWindow {
  explicit AccessWindow(int choice) : KilnWindow("0.0.0.0") {
    const Colors colors = ThemeColors();
    // The red "open to the network, no token" button, low in the window.
    Image before;
    const Box alarm = testing::WaitForSteady(
        d, w, [&](const Image& im) { return Find(im, colors.alarm); }, &before);
    REQUIRE_MESSAGE(!alarm.empty(), "no red access button in the window");
    CHECK(alarm.y0 > before.height * 3 / 4);
    CHECK(Send(port, "").ok());  // open indeed
    testing::Click(d, w, alarm.cx(), alarm.cy());
    // The popup: its buttons are the new button-coloured areas.
    Image popup;
    const Box first = WaitFor(
        d, w, [&](const Image& im) { return testing::FirstNewArea(im, before, colors.button); }, &popup);
    REQUIRE_MESSAGE(!first.empty(), "the click opened no popup with buttons");
    Box target = first;
    if (choice == 1) {
      // The next area below the first.
      const Box rest = Find(popup, colors.button, &before, first.y1 + 2);
      REQUIRE(!rest.empty());
      target = Find(popup, colors.button, &before, rest.y0, rest.y0 + (first.y1 - first.y0));
    }
    testing::Click(d, w, target.cx(), target.cy());
    // The red button goes once the receiver has restarted the chosen way.
    const Box gone = WaitFor(d, w, [&](const Image& im) {
      Box b = Find(im, colors.alarm);
      Box h = Find(im, colors.alarm_hovered);
      return b.empty() && h.empty() ? Box{0, 0, 0, 0} : Box{};
    });
    CHECK_MESSAGE(!gone.empty(), "the status line is still red after the choice");
  }
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

// One on-CPU sample of one stack at each of `times`; with a second,
// broken profile when asked.
collector::ExportProfilesServiceRequest Samples(const std::vector<uint64_t>& times, bool with_bad_profile) {
  ingest::OtlpRequestBuilder b;
  const int32_t exe = b.Mapping("/usr/bin/app");
  const int32_t stack = b.Stack({b.Location(exe, 0x10, {{"main"}})});
  auto* rp = b.Resource({{"process.pid", "42"}, {"process.executable.name", "app"}});
  auto* p = b.AddProfile(rp);
  for (uint64_t t : times) ingest::OtlpRequestBuilder::AddSample(p, stack, {}, {t});
  if (with_bad_profile) {
    // A stack index past the stack table: the receiver drops this profile
    // (profile_rejected, an error) and keeps the good one.
    ingest::OtlpRequestBuilder::AddSample(b.AddProfile(rp), 4711, {}, {times.front()});
  }
  return std::move(b.request);
}

TEST_CASE("a refused profile turns the status line red; a click opens Data quality with its reason marked") {
  KilnWindow window("127.0.0.1");
  const Colors colors = ThemeColors();
  // Loopback, no token, nothing refused yet: nothing red.
  Image quiet;
  REQUIRE(!WaitFor(
               window.d, window.w, [&](const Image& im) { return Find(im, colors.button); }, &quiet)
               .empty());  // drawn
  CHECK(Find(quiet, colors.alarm).empty());
  const auto red_text = testing::TextIn(colors.error_text, colors.window);
  CHECK(testing::FindIf(quiet, red_text).empty());

  collector::ExportProfilesServiceResponse response;
  const grpc::Status sent =
      Send(window.port, "", Samples({static_cast<uint64_t>(storage::UnixNowNs())}, true), &response);
  REQUIRE_MESSAGE(sent.ok(), sent.error_message());
  CHECK(response.partial_success().rejected_profiles() == 1);

  // The badge: red, in the status line.
  Image before;
  const Box badge = testing::WaitForSteady(
      window.d, window.w, [&](const Image& im) { return Find(im, colors.alarm); }, &before);
  REQUIRE_MESSAGE(!badge.empty(), "no red badge after a refused profile");
  CHECK(badge.y0 > before.height * 3 / 4);
  testing::Click(window.d, window.w, badge.cx(), badge.cy());
  // The panel lists every reason; the severity of the one with a count
  // ("error", profile_rejected) is drawn red, the others are not: one line
  // of red text above the status line.
  Image panel;
  const Box marked = WaitFor(
      window.d, window.w,
      [&](const Image& im) { return testing::FindIf(im, red_text, &before, 0, badge.y0 - 4); }, &panel);
  REQUIRE_MESSAGE(
      !marked.empty(),
      "the click opened no Data quality panel with a reason marked; the window: " << testing::SavePpm(
          panel, (fs::temp_directory_path() / "gui_status_line_test-data-quality.ppm").string()));
  CHECK(marked.y1 - marked.y0 <= badge.y1 - badge.y0);  // one line of text (the badge's), not several
}

TEST_CASE("a forwarding destination that is down turns the status line red while requests wait; up, they go") {
  // The destination: a free port nothing listens on yet.
  const int destination = testing::FreePort();
  REQUIRE(destination != 0);
  const std::string target = "127.0.0.1:" + std::to_string(destination);
  KilnWindow window("127.0.0.1", {"--forward", target});
  const Colors colors = ThemeColors();
  Image quiet;
  REQUIRE(!WaitFor(
               window.d, window.w, [&](const Image& im) { return Find(im, colors.button); }, &quiet)
               .empty());
  CHECK_MESSAGE(Find(quiet, colors.alarm).empty(), "red before anything was owed");

  const uint64_t now = static_cast<uint64_t>(storage::UnixNowNs());
  const grpc::Status sent = Send(window.port, "", Samples({now, now + 1000, now + 2000}, false));
  REQUIRE_MESSAGE(sent.ok(), sent.error_message());
  // The forwarder's first attempt fails: the request waits, the line is red.
  Image down;
  const Box badge = WaitFor(
      window.d, window.w, [&](const Image& im) { return Find(im, colors.alarm); }, &down);
  REQUIRE_MESSAGE(!badge.empty(), "no red forwarding badge while the destination is down");
  CHECK(badge.y0 > down.height * 3 / 4);

  // The destination comes up (another kiln): the backlog is delivered at
  // the forwarder's next attempt and the red goes.
  const std::string b_dir = window.dir + "/destination";
  testing::ScopedChild b(testing::SpawnChild({KILN_BIN, "--headless", "--listen", target, "--data-dir", b_dir},
                                             testing::ChildOutput::File(window.dir + "/destination.log")));
  const Box gone = WaitFor(
      window.d, window.w,
      [&](const Image& im) {
        return Find(im, colors.alarm).empty() && Find(im, colors.alarm_hovered).empty() ? Box{0, 0, 0, 0} : Box{};
      },
      nullptr, std::chrono::seconds(45));
  CHECK_MESSAGE(!gone.empty(), "the status line is still red with the destination up");
  auto store = storage::Store::Open(b_dir, storage::Store::Mode::kReadOnly);
  REQUIRE_MESSAGE(store.ok(), store.status().message());
  CHECK((*store)->Stats().samples == 3);
  CHECK(b.Stop(SIGTERM) == 0);
}

TEST_CASE("Store settings by keyboard: an age typed in deletes older samples at once and is saved") {
  KilnWindow window("127.0.0.1");
  // Ten samples from two hours ago and ten from now, in the store before
  // any limit is set (kiln keeps every age by default).
  const uint64_t now = static_cast<uint64_t>(storage::UnixNowNs()), hours2 = 2 * 3'600'000'000'000ull;
  std::vector<uint64_t> times;
  for (int i = 0; i < 10; ++i) times.push_back(now - hours2 + i * 1'000'000ull);
  for (int i = 0; i < 10; ++i) times.push_back(now + i * 1'000'000ull);
  const grpc::Status sent = Send(window.port, "", Samples(times, false));
  REQUIRE_MESSAGE(sent.ok(), sent.error_message());
  // What the store holds, read beside the running kiln.
  auto stored = [&](uint64_t from_ns) -> int64_t {
    auto reader = storage::Store::Open(window.dir + "/store", storage::Store::Mode::kReadOnly);
    if (!reader.ok()) return -1;
    storage::Query q;
    q.from_ns = static_cast<int64_t>(from_ns);
    auto slice = (*reader)->Run(q);
    return slice.ok() ? static_cast<int64_t>((*slice)->total_events) : -1;
  };
  REQUIRE(stored(0) == 20);

  // File > Store settings... by keyboard: Alt reaches the menu bar, Down
  // opens File on Open..., then Add symbols (Open Recent is disabled in a
  // fresh profile and skipped), then Store settings; Space chooses it.
  // The dialog opens with its first field (size) focused: Down to the age,
  // Enter to edit, select all, type 1h, Enter, Down to Apply, Space.
  const ui::Rgba button = ThemeColors().button;
  REQUIRE(!WaitFor(window.d, window.w, [&](const Image& im) {
             return Find(im, button);
           }).empty());  // drawn, so the keys reach a window that handles them
  XSetInputFocus(window.d, window.w, RevertToParent, CurrentTime);
  XSync(window.d, False);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (KeySym k : {XK_Alt_L, XK_Down, XK_Down, XK_Down, XK_space}) testing::TypeKey(window.d, k);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  for (KeySym k : {XK_Down, XK_Return}) testing::TypeKey(window.d, k);
  testing::TypeKey(window.d, XK_a, XK_Control_L);
  for (KeySym k : {XK_1, XK_h, XK_Return, XK_Down, XK_space}) testing::TypeKey(window.d, k);

  // Applied: retention deletes the two-hour-old samples within seconds and
  // keeps the recent ones.
  int64_t all = -1, recent = -1;
  for (auto deadline = Clock::now() + std::chrono::seconds(30); Clock::now() < deadline;) {
    all = stored(0);
    recent = stored(now - 60'000'000'000ull);
    if (all == 10) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  CHECK_MESSAGE(all == 10, "samples left after setting a 1h age: " << all);
  CHECK(recent == 10);
  // Saved as typed, for the next start.
  CHECK(ReadText(window.dir + "/config/kiln/settings.ini").find("retention_age = 1h") != std::string::npos);
}

}  // namespace
}  // namespace kiln
