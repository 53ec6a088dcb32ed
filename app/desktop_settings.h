// What the window remembers between runs, and where it keeps it. Parsing,
// printing and the folder rules are pure functions (desktop_settings_test);
// Load/Save touch the files. Called on the UI thread only.
//
// Where (never the current folder):
//   Linux   preferences  $XDG_CONFIG_HOME/kiln/settings.ini  (~/.config/kiln)
//           window state $XDG_STATE_HOME/kiln/state.ini      (~/.local/state/kiln)
//           ImGui's ini  $XDG_STATE_HOME/kiln/imgui.ini
//   macOS   all three in ~/Library/Application Support/kiln/
// Preferences are what a user chose (theme, scale, flame/icicle, inline);
// state is what the window was doing (geometry, tab, recent captures), which
// the XDG spec puts apart so preferences can be copied between machines.
//
// Format, both files: a first line "kiln-settings 1" (the version), then
// "key = value" lines; '#' starts a comment. Unknown keys are ignored
// (a newer kiln's file still loads), a bad value is reported and left at
// its default, and a file of another version is ignored as a whole, with a
// message naming both versions.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::app {

inline constexpr int kSettingsVersion = 1;
inline constexpr size_t kMaxRecentCaptures = 10;

enum class Theme { kDark, kLight };

struct DesktopSettings {
  // Preferences (settings.ini).
  Theme theme = Theme::kDark;
  float ui_scale = 0.f;  // 0 = the monitor's content scale; else 0.5 .. 4
  bool flame = false;    // roots at the bottom (flame) instead of the top (icicle)
  bool show_inline = true;
  // Captures opened from now on: C++/Rust names in perf script and folded
  // files demangled (capture::ImportOptions::demangle), or kept as written.
  bool demangle = true;
  // Where the window's receiver listens when --listen is not given ("" =
  // 0.0.0.0:11000); "Listen on loopback only" sets 127.0.0.1:PORT.
  std::string listen;
  // Retention set in File > Store settings ("" = the command line's or
  // the default), as written there: "4GiB", "14d", "0" (app/retention_limits.h).
  std::string retention_size;
  std::string retention_age;
  // The user's trace backend, a URL with {trace_id} (the Spans view opens a
  // span's trace there; --trace-url for one run); "" = none.
  std::string trace_url;
  // State (state.ini). A window position of kUnset lets the desktop place it.
  static constexpr int kUnset = INT32_MIN;
  int window_x = kUnset, window_y = kUnset;
  int window_width = 0, window_height = 0;  // 0 = the built-in default
  bool window_maximized = false;
  std::string tab;                  // last view id ("" = the first)
  std::vector<std::string> recent;  // opened captures, newest first, absolute paths

  bool operator==(const DesktopSettings&) const = default;
};

// Puts `path` first in `recent`, once, keeping at most kMaxRecentCaptures.
void AddRecentCapture(DesktopSettings* settings, const std::string& path);

// Parses settings.ini and state.ini text into `settings` (fields a text does
// not mention keep their values). Returns one message per problem, each
// naming `file_name` and the line ("settings.ini:3: theme: want dark or
// light, got \"blue\"").
std::vector<std::string> ParseSettings(std::string_view text, std::string_view file_name,
                                       DesktopSettings* settings);
std::string PrintPreferences(const DesktopSettings& settings);  // settings.ini
std::string PrintState(const DesktopSettings& settings);        // state.ini

struct SettingsPaths {
  std::string preferences;  // settings.ini
  std::string state;        // state.ini
  std::string imgui_ini;
};
// The paths for this platform from an environment lookup (`getenv` returns
// null for unset variables); XDG variables that are empty or relative are
// ignored, as the spec says.
SettingsPaths SettingsPathsFor(const std::function<const char*(const char*)>& getenv, bool macos);
SettingsPaths DefaultSettingsPaths();  // from the process environment

// Reads both files; missing files are not an error (first run). Problems
// are returned for the Log.
DesktopSettings LoadSettings(const SettingsPaths& paths, std::vector<std::string>* problems);
// Writes both files (creating the folders), each through a temporary file
// and rename, so a crash never leaves half a file. Returns "" or the error.
std::string SaveSettings(const SettingsPaths& paths, const DesktopSettings& settings);

}  // namespace kiln::app
