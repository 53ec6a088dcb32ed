// The desktop window: entry point used by main() when kiln runs with a
// display. Called on the main thread; returns when the window closes (or
// after the screenshot is written in --screenshot mode).
#pragma once

#include <string>
#include <vector>

#include "storage/model/transforms.h"

namespace kiln::storage {
class Store;
}
namespace kiln::app {
class ReceiverControl;

struct GuiOptions {
  std::string data_dir;  // shown in the status line
  std::string tab;       // initial tab: flamegraph|top|executables|log ("" = the last run's)
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
  std::string sandwich_function;  // --sandwich FN: the Sandwich view's function
  std::string source_function;    // --source FN: the Source view's function
  std::vector<std::pair<std::string, std::string>> source_path_map;  // --source-map FROM=TO
  // --compare previous|SOURCE: every source starts compared with the period
  // before its range, or with the source of that name (a capture's file name).
  std::string compare;
  // Where "Require a token" saves the token it generates
  // (SavedTokenFile(settings.ini)); a later start picks it up.
  std::string saved_token_file;
};

// Returns the process exit code. `receiver` may be null or not started (no
// listener, e.g. offline captures); the window restarts it when the user
// requires a token or loopback only. Both outlive the call.
int RunGui(storage::Store& store, ReceiverControl* receiver, const GuiOptions& options);

}  // namespace kiln::app
