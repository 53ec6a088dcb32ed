#include "app/desktop_settings.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace kiln::app {
namespace {

namespace fs = std::filesystem;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool ParseInt(std::string_view text, int* out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && ptr == end;
}

bool ParseBool(std::string_view text, bool* out) {
  if (text == "true") return *out = true, true;
  if (text == "false") return *out = false, true;
  return false;
}

const char* BoolText(bool b) { return b ? "true" : "false"; }

std::string Header() { return "kiln-settings " + std::to_string(kSettingsVersion) + "\n"; }

}  // namespace

void AddRecentCapture(DesktopSettings* settings, const std::string& path) {
  auto& r = settings->recent;
  r.erase(std::remove(r.begin(), r.end(), path), r.end());
  r.insert(r.begin(), path);
  if (r.size() > kMaxRecentCaptures) r.resize(kMaxRecentCaptures);
}

std::vector<std::string> ParseSettings(std::string_view text, std::string_view file_name,
                                       DesktopSettings* settings) {
  std::vector<std::string> problems;
  const std::string file(file_name);
  int line_number = 0;
  bool recent_seen = false;  // the first `recent` line replaces the list
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view line = Trim(text.substr(at, end - at));
    at = end + 1;
    ++line_number;
    const std::string where = file + ":" + std::to_string(line_number) + ": ";
    if (line_number == 1) {
      int version = 0;
      if (line.substr(0, 14) != "kiln-settings " || !ParseInt(line.substr(14), &version)) {
        problems.push_back(where + "not a kiln settings file (no \"kiln-settings N\" first line); ignored");
        return problems;
      }
      if (version != kSettingsVersion) {
        problems.push_back(where + "settings version " + std::to_string(version) + ", this kiln reads version " +
                           std::to_string(kSettingsVersion) + "; ignored");
        return problems;
      }
      continue;
    }
    if (line.empty() || line.front() == '#') continue;
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      problems.push_back(where + "want key = value, got \"" + std::string(line) + "\"");
      continue;
    }
    const std::string_view key = Trim(line.substr(0, eq));
    const std::string_view value = Trim(line.substr(eq + 1));
    auto bad = [&](const char* want) {
      problems.push_back(where + std::string(key) + ": want " + want + ", got \"" + std::string(value) + "\"");
    };
    if (key == "theme") {
      if (value == "dark") settings->theme = Theme::kDark;
      else if (value == "light") settings->theme = Theme::kLight;
      else bad("dark or light");
    } else if (key == "ui_scale") {
      // kiln never calls setlocale, so strtof reads "1.5" the way the printer wrote it.
      char* stop = nullptr;
      const std::string v(value);
      const float scale = std::strtof(v.c_str(), &stop);
      if (v.empty() || *stop != '\0' || !(scale == 0.f || (scale >= 0.5f && scale <= 4.f))) {
        bad("0 (the monitor's) or a scale from 0.5 to 4");
      } else {
        settings->ui_scale = scale;
      }
    } else if (key == "flame") {
      if (!ParseBool(value, &settings->flame)) bad("true or false");
    } else if (key == "show_inline") {
      if (!ParseBool(value, &settings->show_inline)) bad("true or false");
    } else if (key == "demangle") {
      if (!ParseBool(value, &settings->demangle)) bad("true or false");
    } else if (key == "listen") {
      if (!value.empty() && value.rfind(':') == std::string_view::npos) {
        bad("HOST:PORT");
      } else {
        settings->listen = std::string(value);
      }
    } else if (key == "trace_url") {
      if (!value.empty() && value.find("{trace_id}") == std::string_view::npos) {
        bad("a URL with {trace_id}");
      } else {
        settings->trace_url = std::string(value);
      }
    } else if (key == "retention_size" || key == "retention_age") {
      // Checked where they are applied (app/retention_limits.h), which names
      // the problem in the window.
      (key == "retention_size" ? settings->retention_size : settings->retention_age) = std::string(value);
    } else if (key == "window_position") {
      const size_t comma = value.find(',');
      int x = 0, y = 0;
      if (comma == std::string_view::npos || !ParseInt(Trim(value.substr(0, comma)), &x) ||
          !ParseInt(Trim(value.substr(comma + 1)), &y)) {
        bad("X,Y");
      } else {
        settings->window_x = x;
        settings->window_y = y;
      }
    } else if (key == "window_size") {
      const size_t x = value.find('x');
      int w = 0, h = 0;
      if (x == std::string_view::npos || !ParseInt(value.substr(0, x), &w) || !ParseInt(value.substr(x + 1), &h) ||
          w < 200 || h < 150 || w > 32768 || h > 32768) {
        bad("WIDTHxHEIGHT, at least 200x150");
      } else {
        settings->window_width = w;
        settings->window_height = h;
      }
    } else if (key == "window_maximized") {
      if (!ParseBool(value, &settings->window_maximized)) bad("true or false");
    } else if (key == "tab") {
      settings->tab = std::string(value);
    } else if (key == "recent") {
      if (!recent_seen) settings->recent.clear();
      recent_seen = true;
      if (value.empty() || value.front() != '/') {
        bad("an absolute path");
      } else if (settings->recent.size() < kMaxRecentCaptures) {
        settings->recent.emplace_back(value);
      }
    }
    // Other keys: written by a newer kiln; kept out without a complaint.
  }
  return problems;
}

std::string PrintPreferences(const DesktopSettings& s) {
  std::ostringstream out;
  out << Header() << "# Kiln's preferences; kiln rewrites this file when it closes.\n"
      << "theme = " << (s.theme == Theme::kLight ? "light" : "dark") << "\n"
      << "ui_scale = " << s.ui_scale << "\n"
      << "flame = " << BoolText(s.flame) << "\n"
      << "show_inline = " << BoolText(s.show_inline) << "\n"
      << "demangle = " << BoolText(s.demangle) << "\n";
  if (!s.listen.empty()) out << "listen = " << s.listen << "\n";
  if (!s.retention_size.empty()) out << "retention_size = " << s.retention_size << "\n";
  if (!s.retention_age.empty()) out << "retention_age = " << s.retention_age << "\n";
  if (!s.trace_url.empty()) out << "trace_url = " << s.trace_url << "\n";
  return out.str();
}

std::string PrintState(const DesktopSettings& s) {
  std::ostringstream out;
  out << Header() << "# What Kiln's window was doing when it closed; rewritten at every close.\n";
  if (s.window_x != DesktopSettings::kUnset && s.window_y != DesktopSettings::kUnset)
    out << "window_position = " << s.window_x << "," << s.window_y << "\n";
  if (s.window_width > 0 && s.window_height > 0)
    out << "window_size = " << s.window_width << "x" << s.window_height << "\n";
  out << "window_maximized = " << BoolText(s.window_maximized) << "\n";
  if (!s.tab.empty()) out << "tab = " << s.tab << "\n";
  for (const std::string& path : s.recent) {
    if (path.find('\n') == std::string::npos) out << "recent = " << path << "\n";
  }
  return out.str();
}

SettingsPaths SettingsPathsFor(const std::function<const char*(const char*)>& getenv, bool macos) {
  const char* home_env = getenv("HOME");
  const std::string home = home_env && *home_env ? home_env : "/tmp";
  SettingsPaths p;
  if (macos) {
    const std::string dir = home + "/Library/Application Support/kiln";
    p.preferences = dir + "/settings.ini";
    p.state = dir + "/state.ini";
    p.imgui_ini = dir + "/imgui.ini";
    return p;
  }
  // XDG Base Directory: a variable must hold an absolute path to count.
  auto xdg = [&](const char* name, const char* fallback) {
    const char* v = getenv(name);
    if (v && v[0] == '/') return std::string(v) + "/kiln";
    return home + fallback + "/kiln";
  };
  const std::string config = xdg("XDG_CONFIG_HOME", "/.config");
  const std::string state = xdg("XDG_STATE_HOME", "/.local/state");
  p.preferences = config + "/settings.ini";
  p.state = state + "/state.ini";
  p.imgui_ini = state + "/imgui.ini";
  return p;
}

SettingsPaths DefaultSettingsPaths() {
#ifdef __APPLE__
  constexpr bool kMac = true;
#else
  constexpr bool kMac = false;
#endif
  return SettingsPathsFor([](const char* name) { return std::getenv(name); }, kMac);
}

DesktopSettings LoadSettings(const SettingsPaths& paths, std::vector<std::string>* problems) {
  DesktopSettings settings;
  for (const std::string& path : {paths.preferences, paths.state}) {
    std::ifstream in(path, std::ios::binary);
    if (!in) continue;  // first run
    std::ostringstream text;
    text << in.rdbuf();
    auto found = ParseSettings(text.str(), path, &settings);
    problems->insert(problems->end(), found.begin(), found.end());
  }
  return settings;
}

std::string SaveSettings(const SettingsPaths& paths, const DesktopSettings& settings) {
  for (const auto& [path, text] : {std::pair{paths.preferences, PrintPreferences(settings)},
                                   std::pair{paths.state, PrintState(settings)}}) {
    std::error_code ec;
    fs::create_directories(fs::path(path).parent_path(), ec);
    if (ec) return "cannot create " + fs::path(path).parent_path().string() + ": " + ec.message();
    const std::string temporary = path + ".tmp" + std::to_string(getpid());
    {
      std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
      out << text;
      out.flush();
      if (!out) {
        std::remove(temporary.c_str());
        return "cannot write " + temporary + ": " + std::strerror(errno);
      }
    }
    fs::rename(temporary, path, ec);
    if (ec) {
      std::remove(temporary.c_str());
      return "cannot replace " + path + ": " + ec.message();
    }
  }
  return "";
}

}  // namespace kiln::app
