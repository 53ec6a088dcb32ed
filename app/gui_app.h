// The desktop window: entry point used by main() when kiln runs with a
// display. Called on the main thread; returns when the window closes (or
// after the screenshot is written in --screenshot mode).
#pragma once

#include <deque>
#include <map>
#include <string>
#include <vector>

#include "storage/model/transforms.h"

namespace CLI {
class App;
}
namespace kiln::storage {
class Store;
}
namespace kiln::app {
class ReceiverControl;
class SymbolizerSlot;

struct GuiOptions {
  std::string data_dir;  // shown in the status line
  std::string tab;       // initial tab, a view's id ("" = the last run's)
  int width = 1600;      // initial window size in screen coordinates
  int height = 1000;
  bool size_given = false;  // --size: wins over the size remembered from the last run
  std::string screenshot_path;  // non-empty: wait until the view is drawn, write PNG, exit
  bool demo = false;            // the store was filled with the built-in synthetic profile
  // --retention-age, --retention-size given: each wins over the limit
  // saved by File > Store settings.
  bool retention_age_given = false, retention_size_given = false;
  // Capture files opened at start (`kiln FILE...`, `--open FILE`), each as a
  // source of its own beside the store, selected as it finishes loading;
  // --screenshot waits for all of them.
  std::vector<std::string> open_files;
  // Symbol sources besides the profile's paths and /usr/lib/debug
  // (--debug-dir, --debuginfod-urls; "" = $DEBUGINFOD_URLS). The window
  // symbolizes its stores in the background (app/symbol_service.h).
  std::vector<std::string> debug_dirs;
  std::string debuginfod_urls;
  // --transform SPEC...: transforms (storage/model/transforms.h) every
  // source starts with, as if chosen from the frame menu.
  std::vector<storage::Transform> transforms;
  // The views' own options (--sandwich FN, --source FN, --source-map
  // FROM=TO): SessionState::view_args every source starts with.
  std::map<std::string, std::string> view_args;
  // --compare previous|SOURCE: every source starts compared with the period
  // before its range, or with the source of that name (a capture's file name).
  std::string compare;
  // --trace-url: the trace backend for this run (over the saved preference).
  std::string trace_url;
  // Where "Require a token" saves the token it generates
  // (SavedTokenFile(settings.ini)); a later start picks it up.
  std::string saved_token_file;
  // --metrics-listen: where the window puts its store's symbolizer for the
  // scrapes (app/symbol_service.h), from when it starts until the window
  // goes. Null: no metrics.
  SymbolizerSlot* metrics_symbolizer = nullptr;
};

// Returns the process exit code. `receiver` may be null or not started (no
// listener, e.g. offline captures); the window restarts it when the user
// requires a token or loopback only. Both outlive the call.
int RunGui(storage::Store& store, ReceiverControl* receiver, const GuiOptions& options);

// The window's options that come from its views (app/view_registry.cpp):
// --tab with every view's id, and each view's own flags (View::Flags).
// main.cpp names none of them, so a new view adds its options itself.
class WindowFlags {
 public:
  // Adds them to `cli`; --tab's value goes to options->tab.
  WindowFlags(CLI::App& cli, GuiOptions* options);
  // After parsing: the values given into the options' view_args. False,
  // with the reason, when a view refuses a value.
  bool Apply(std::string* error);

 private:
  struct Given {
    std::string key;  // View::Flag's
    std::string (*encode)(const std::vector<std::string>& values, std::string* error) = nullptr;
    std::vector<std::string> values;
  };
  GuiOptions* options_;
  std::deque<Given> given_;  // a deque: CLI11 keeps pointers to the values
};

}  // namespace kiln::app
