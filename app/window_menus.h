// The window's menu bar (File, View, Help and the source switcher) and its
// keyboard shortcuts: drawn from facts App gives, answered as the user's
// choices, which App carries out. App holds no menu drawing and no key
// codes; a new menu item is a field here and a line where App applies it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "app/desktop_settings.h"
#include "ui/help_dialogs.h"

namespace kiln::app {

// What the menus show as enabled, checked or listed this frame.
struct MenuFacts {
  bool can_export = false;  // the view has a slice to export
  bool demo = false;        // the demo's temporary store: its limits are not the user's
  struct SourceItem {
    std::string name;
    std::string path;  // a capture's file; "" for the live store
  };
  std::vector<SourceItem> sources;
  size_t selected = 0;
  // The selected source is an opened capture.
  bool capture() const { return selected < sources.size() && !sources[selected].path.empty(); }
};

// What the user picked this frame (at most a few are set).
struct MenuChoices {
  bool open = false, add_symbols = false, store_settings = false, import_into_store = false;
  bool export_view = false, save_png = false, close_capture = false, quit = false;
  std::string open_recent;        // a path from File > Open Recent
  std::optional<size_t> source;   // picked in the source switcher
  bool connect = false, data_quality = false, shortcuts = false, about = false;
  bool restyle = false;  // the theme or the scale changed in `settings`: rebuild fonts between frames
};

// Draws the menu bar inside the current window (which has
// ImGuiWindowFlags_MenuBar). The View menu's choices and File > Open
// Recent's "Clear list" change `settings` directly.
MenuChoices DrawMenuBar(const MenuFacts& facts, DesktopSettings* settings);

// The keys of `keys` (ui::WindowKeys, the table the shortcut list shows)
// pressed this frame, in table order.
std::vector<ui::WindowKey> PressedWindowKeys(const std::vector<ui::WindowKey>& keys);

}  // namespace kiln::app
