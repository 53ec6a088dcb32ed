// File > Store settings: the live store's retention limits, typed as the
// --retention-age and --retention-size flags take them, applied to the
// store at once and saved in settings.ini for the next start. A small
// class of its own so the window's App only opens and draws it.
#pragma once

#include <functional>
#include <string>

#include "app/desktop_settings.h"
#include "storage/store.h"
#include "ui/snapshots.h"

namespace kiln::app {

// The retention saved in `settings` applied to `store`, except a limit the
// command line gave (it takes precedence). An error names the setting
// that does not parse; nothing is changed then.
absl::Status ApplySavedRetention(storage::Store* store, const DesktopSettings& settings, bool age_given,
                                 bool size_given);

class StoreSettingsDialog {
 public:
  // What the dialog changes and tells: the store, the settings and where
  // they are saved, and the window's notices (error or not, text).
  struct Target {
    storage::Store* store = nullptr;
    std::string data_dir;
    DesktopSettings* settings = nullptr;
    const SettingsPaths* paths = nullptr;
    std::function<void(bool error, const std::string& text)> notify;
  };
  explicit StoreSettingsDialog(Target target) : target_(std::move(target)) {}

  // Fresh from the store's current limits (never the text of an earlier
  // visit), in front.
  void Open();
  // Each frame: the window while it is open. `status`: the store's facts
  // as the worker last read them (may be null).
  void Draw(const ui::StatusSnapshot* status);
  bool is_open() const { return open_; }

 private:
  void Apply();

  Target target_;
  bool open_ = false;
  char age_text_[32] = {}, size_text_[32] = {};
  std::string error_;  // why Apply refused what was typed
};

}  // namespace kiln::app
