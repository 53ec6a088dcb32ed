// The interface every tab of the window implements. The app owns the views
// (registered in app/view_registry.cpp), draws the header, timeline and
// status line, and calls the active view's Draw() inside the content area
// once per frame. All calls come from the UI thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ui/frame_menu.h"
#include "ui/session_state.h"
#include "ui/snapshots.h"

struct ImFont;

namespace kiln::ui {

struct ViewContext {
  // The newest finished analysis (null until the first one) and status.
  // Valid for the duration of Draw(); keep a shared_ptr copy to hold longer.
  const AnalysisSnapshot* analysis = nullptr;
  const StatusSnapshot* status = nullptr;
  SessionState* session = nullptr;
  bool computing = false;       // a newer analysis than `analysis` is being built
  ImFont* mono_font = nullptr;  // for ids and hashes; may be null (use the default)
  // The names of the window's other sources (what a diff can compare
  // with); may be null.
  const std::vector<std::string>* other_sources = nullptr;
  // The background symbolizer of the shown source; null when there is none.
  const SymbolActivity* symbols = nullptr;
  // What a view asks of the app; the app acts on it after Draw().
  struct Requests {
    std::vector<std::string> retry_symbol_keys;  // SymbolService::Retry
    bool add_symbol_files = false;               // open the file picker for ELF files
    bool show_shortcuts = false;                 // '?': the keyboard shortcut list
    std::optional<std::string> trace_url;        // the trace backend's URL, set (and saved)
  };
  Requests* requests = nullptr;  // may be null (no actions possible)
  // Every view's items for the right-click menu on a function; may be null.
  const std::vector<FunctionAction>* function_actions = nullptr;
  // The user's trace backend, a URL with {trace_id} (--trace-url or the
  // preference); may be null or empty.
  const std::string* trace_url = nullptr;
};

class View {
 public:
  virtual ~View() = default;
  // Stable id used by --tab and cross-view requests ("flamegraph", "top", ...).
  virtual std::string_view Id() const = 0;
  virtual std::string_view Title() const = 0;
  // Draws the content area. Must not block: everything it shows comes from
  // the context's snapshots.
  virtual void Draw(const ViewContext& context) = 0;
  // True when the last Draw() showed the context's current data completely
  // (used by --screenshot to know when to capture).
  virtual bool Settled() const = 0;

  // A view that computes something of its own (beyond the shared tree and
  // tables) says what from a source's session, and how the worker builds
  // it; the result comes back as AnalysisSnapshot::ViewResult<T>(Id()).
  // Nothing outside the view's files names it: no request field, no
  // snapshot field, no worker entry.
  struct Product {
    std::string (*inputs)(const SessionState& session) = nullptr;  // "" = nothing asked now
    ViewBuild build = nullptr;
    ViewBase base = ViewBase::kStacks;
    // Asked only while the view is the one shown (a product that costs a
    // scan of the store): elsewhere its inputs are "".
    bool only_while_shown = false;
  };
  virtual Product OwnProduct() const { return {}; }

  // Command-line options of the view's own ("--sandwich FN"): what was
  // given goes to SessionState::view_args[key] of every source as it
  // appears. main.cpp never names them (app/view_registry.cpp adds them).
  struct Flag {
    std::string name;  // "--sandwich"
    std::string help;
    std::string key;   // the view_args entry it sets
    bool repeatable = false;
    // The view_args value from the values given, or an error naming the
    // bad one; null: the one value as it is.
    std::string (*encode)(const std::vector<std::string>& values, std::string* error) = nullptr;
  };
  virtual std::vector<Flag> Flags() const { return {}; }

  // What the view adds to the right-click menu on a function, in every
  // view ("Show in Sandwich"), each naming this view's Id().
  virtual std::vector<FunctionAction> FunctionActions() const { return {}; }
};

// Every view's own product for `session` into `request` (by view id), with
// `shown` the id of the view on screen: what the app (and any test driving
// the worker) adds to RequestFor's.
void AddViewProducts(const std::vector<View*>& views, const SessionState& session, std::string_view shown,
                     AnalysisRequest* request);

}  // namespace kiln::ui
