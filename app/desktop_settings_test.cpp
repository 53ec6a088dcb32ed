#include "app/desktop_settings.h"

#include <doctest/doctest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>

namespace kiln::app {
namespace {

TEST_CASE("settings round-trip through their two files") {
  DesktopSettings s;
  s.theme = Theme::kLight;
  s.ui_scale = 1.5f;
  s.flame = true;
  s.show_inline = false;
  s.demangle = false;
  s.listen = "127.0.0.1:11000";
  s.retention_size = "1GiB";  // File > Store settings
  s.retention_age = "14d";
  s.trace_url = "http://localhost:16686/trace/{trace_id}";  // the Spans view
  s.window_x = -1200;  // a monitor left of the primary one
  s.window_y = 40;
  s.window_width = 1700;
  s.window_height = 900;
  s.window_maximized = true;
  s.tab = "top";
  s.recent = {"/home/u/b.pb.gz", "/home/u/a folder/a.folded"};
  DesktopSettings back;
  CHECK(ParseSettings(PrintPreferences(s), "settings.ini", &back).empty());
  CHECK(ParseSettings(PrintState(s), "state.ini", &back).empty());
  CHECK(back == s);
  // Each file holds only its half.
  DesktopSettings only_state;
  CHECK(ParseSettings(PrintState(s), "state.ini", &only_state).empty());
  CHECK(only_state.theme == Theme::kDark);
  CHECK(only_state.tab == "top");
  CHECK(only_state.listen.empty());
  CHECK(only_state.retention_size.empty());
  DesktopSettings bad;
  CHECK(ParseSettings("kiln-settings 1\nlisten = nowhere\n", "settings.ini", &bad) ==
        std::vector<std::string>{"settings.ini:2: listen: want HOST:PORT, got \"nowhere\""});
  CHECK(ParseSettings("kiln-settings 1\ntrace_url = http://jaeger/trace/\n", "settings.ini", &bad) ==
        std::vector<std::string>{
            "settings.ini:2: trace_url: want a URL with {trace_id}, got \"http://jaeger/trace/\""});
  CHECK(bad.trace_url.empty());
}

TEST_CASE("an unset window position is not written, so the desktop places the window") {
  DesktopSettings s;
  s.window_width = 800;
  s.window_height = 600;
  const std::string text = PrintState(s);
  CHECK(text.find("window_position") == std::string::npos);
  CHECK(text.find("window_size = 800x600\n") != std::string::npos);
  CHECK(text.rfind("kiln-settings 1\n", 0) == 0);
}

TEST_CASE("bad values are named with file and line and keep their defaults") {
  DesktopSettings s;
  const auto problems = ParseSettings(
      "kiln-settings 1\n"
      "theme = blue\n"
      "ui_scale = 9\n"
      "flame = yes\n"
      "window_size = 10x10\n"
      "window_position = 3\n"
      "no equals sign\n"
      "recent = relative/path\n"
      "future_key = whatever\n"
      "# a comment\n"
      "show_inline = false\r\n",
      "settings.ini", &s);
  REQUIRE(problems.size() == 7);
  CHECK(problems[0] == "settings.ini:2: theme: want dark or light, got \"blue\"");
  CHECK(problems[1] == "settings.ini:3: ui_scale: want 0 (the monitor's) or a scale from 0.5 to 4, got \"9\"");
  CHECK(problems[2] == "settings.ini:4: flame: want true or false, got \"yes\"");
  CHECK(problems[3] == "settings.ini:5: window_size: want WIDTHxHEIGHT, at least 200x150, got \"10x10\"");
  CHECK(problems[4] == "settings.ini:6: window_position: want X,Y, got \"3\"");
  CHECK(problems[5] == "settings.ini:7: want key = value, got \"no equals sign\"");
  CHECK(problems[6] == "settings.ini:8: recent: want an absolute path, got \"relative/path\"");
  CHECK(s.theme == Theme::kDark);
  CHECK(s.ui_scale == 0.f);
  CHECK(!s.flame);
  CHECK(s.window_width == 0);
  CHECK(s.window_x == DesktopSettings::kUnset);
  CHECK(s.recent.empty());
  CHECK(!s.show_inline);  // good lines after bad ones still count (CRLF too)
}

TEST_CASE("a file of another version or without a header is ignored as a whole") {
  DesktopSettings s;
  auto problems = ParseSettings("kiln-settings 2\ntheme = light\n", "/x/settings.ini", &s);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0] == "/x/settings.ini:1: settings version 2, this kiln reads version 1; ignored");
  CHECK(s.theme == Theme::kDark);
  problems = ParseSettings("theme = light\n", "/x/settings.ini", &s);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0] == "/x/settings.ini:1: not a kiln settings file (no \"kiln-settings N\" first line); ignored");
  CHECK(s.theme == Theme::kDark);
}

TEST_CASE("recent captures: newest first, once each, at most ten") {
  DesktopSettings s;
  for (int i = 0; i < 12; ++i) AddRecentCapture(&s, "/c/" + std::to_string(i));
  AddRecentCapture(&s, "/c/5");
  REQUIRE(s.recent.size() == kMaxRecentCaptures);
  CHECK(s.recent[0] == "/c/5");
  CHECK(s.recent[1] == "/c/11");
  CHECK(s.recent[9] == "/c/2");  // 0 and 1 fell off; 5 moved up
  CHECK(std::count(s.recent.begin(), s.recent.end(), "/c/5") == 1);
}

TEST_CASE("settings live in the XDG folders on Linux and Application Support on macOS") {
  std::map<std::string, std::string> env{{"HOME", "/home/u"}};
  auto lookup = [&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  SettingsPaths p = SettingsPathsFor(lookup, false);
  CHECK(p.preferences == "/home/u/.config/kiln/settings.ini");
  CHECK(p.state == "/home/u/.local/state/kiln/state.ini");
  CHECK(p.imgui_ini == "/home/u/.local/state/kiln/imgui.ini");
  env["XDG_CONFIG_HOME"] = "/cfg";
  env["XDG_STATE_HOME"] = "relative/state";  // not absolute: ignored, as the spec says
  p = SettingsPathsFor(lookup, false);
  CHECK(p.preferences == "/cfg/kiln/settings.ini");
  CHECK(p.state == "/home/u/.local/state/kiln/state.ini");
  p = SettingsPathsFor(lookup, true);
  CHECK(p.preferences == "/home/u/Library/Application Support/kiln/settings.ini");
  CHECK(p.imgui_ini == "/home/u/Library/Application Support/kiln/imgui.ini");
}

TEST_CASE("save creates the folders and load reads back what was saved") {
  char tmpl[] = "/tmp/kiln-settings-test-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string dir = tmpl;
  SettingsPaths paths{dir + "/config/kiln/settings.ini", dir + "/state/kiln/state.ini",
                      dir + "/state/kiln/imgui.ini"};
  std::vector<std::string> problems;
  CHECK(LoadSettings(paths, &problems) == DesktopSettings{});  // first run: defaults, no complaint
  CHECK(problems.empty());
  DesktopSettings s;
  s.tab = "log";
  s.theme = Theme::kLight;
  AddRecentCapture(&s, "/tmp/x.pb.gz");
  CHECK(SaveSettings(paths, s) == "");
  CHECK(LoadSettings(paths, &problems) == s);
  CHECK(problems.empty());
  // No temporary files are left beside them.
  size_t files = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) files += e.is_regular_file();
  CHECK(files == 2);
  // A folder that cannot be made is an error message, not a crash.
  std::ofstream(dir + "/blocker") << "a file where a folder should be";
  SettingsPaths blocked{dir + "/blocker/kiln/settings.ini", dir + "/blocker/kiln/state.ini", ""};
  CHECK(SaveSettings(blocked, s).find("cannot create " + dir + "/blocker/kiln") == 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kiln::app
