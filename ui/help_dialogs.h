// The Help menu's windows: Connect an agent, Keyboard shortcuts, About.
// Each draws a window while `*open` is true (its close button clears it).
// UI thread only; everything shown is passed in, nothing is looked up.
#pragma once

#include <string>
#include <vector>

#include "ui/connect_help.h"

namespace kiln::ui {

// Every keyboard shortcut of the window: the Help list and the code that
// acts on them (app/gui_app.cpp, ui/flamegraph_view.cpp) follow this table.
struct Shortcut {
  const char* keys;
  const char* action;
};
const std::vector<Shortcut>& KeyboardShortcuts();

struct AboutInfo {
  std::string version;           // kiln::kVersion
  std::string store_path;        // the live store's folder
  std::string listen_address;    // "" = not receiving
  std::string settings_path;     // settings.ini
  std::string state_path;        // state.ini
};

// `addresses`: this machine's, most useful first (app/local_addresses.h).
void DrawConnectDialog(bool* open, const std::string& listen_address,
                       const std::vector<std::string>& addresses, const ReceiverAccess& access = {});
void DrawShortcutsDialog(bool* open);
void DrawAboutDialog(bool* open, const AboutInfo& info);

}  // namespace kiln::ui
