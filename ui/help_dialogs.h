// The Help menu's windows: Connect an agent, Keyboard shortcuts, About.
// Each draws a window while `*open` is true (its close button clears it).
// UI thread only; everything shown is passed in, nothing is looked up.
#pragma once

#include <string>
#include <vector>

#include "ui/connect_help.h"

namespace kiln::ui {

// The window's own keys, one table that the app acts on (app/gui_app.cpp,
// HandleShortcuts) and the shortcut list shows: the list said Ctrl+6 was
// Executables after the Source tab had taken it.
enum class WindowCommand : uint8_t { kShortcuts, kOpen, kExport, kQuit, kSearch, kShowView };
struct WindowKey {
  char key = 0;          // 'A'..'Z' or '0'..'9'; 0 = the function key below
  int function_key = 0;  // 1 = F1
  bool ctrl = false;
  WindowCommand command = WindowCommand::kShortcuts;
  int view = -1;  // kShowView: the view's index in tab order
};
// Ctrl+1 .. Ctrl+9 show the first `view_count` views (at most 9).
std::vector<WindowKey> WindowKeys(size_t view_count);
std::string KeyLabel(const WindowKey& key);  // "Ctrl+O", "F1"

// One line of the shortcut list.
struct Shortcut {
  std::string keys;
  std::string action;
};
// The list: the window's keys (WindowKeys, with the views' titles in tab
// order), then the views' own keys and the mouse.
std::vector<Shortcut> KeyboardShortcuts(const std::vector<std::string>& view_titles);

struct AboutInfo {
  std::string version;           // kiln::kVersion
  std::string store_path;        // the live store's folder
  std::string listen_address;    // "" = not receiving
  std::string settings_path;     // settings.ini
  std::string state_path;        // state.ini
};

// `addresses`: this machine's, most useful first (app/local_addresses.h);
// `local_agent`: how this machine runs kiln-agent (LocalAgentCommand).
void DrawConnectDialog(bool* open, const std::string& listen_address, const std::vector<std::string>& addresses,
                       const ReceiverAccess& access, const std::string& local_agent);
void DrawShortcutsDialog(bool* open, const std::vector<std::string>& view_titles);
void DrawAboutDialog(bool* open, const AboutInfo& info);

}  // namespace kiln::ui
