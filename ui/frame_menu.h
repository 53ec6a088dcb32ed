// The right-click menu every view offers on a frame (flamegraph, Top
// functions, later the call tree) and the row of transform chips above the
// views. Both edit the source's session (SessionState::tree), so the
// worker re-derives every view from the cached slice, and exports apply the
// same transforms.
#pragma once

#include <string>
#include <vector>

#include "storage/model/flame_tree.h"
#include "ui/session_state.h"

namespace kiln::ui {

// What was right-clicked.
struct FrameMenuTarget {
  storage::NodeKind kind = storage::NodeKind::kFrame;
  std::string label;       // function name, or the process/thread/group label
  std::string executable;  // the frame's executable file name, may be empty
  // From the tree's root to this node, function names only (group levels
  // left out); empty where the view has no call path (Top functions).
  std::vector<std::string> path;
  bool kernel = false;
};

// The target of a tree node: its label, kind, executable (from its frame)
// and call path (frames only, group levels left out).
FrameMenuTarget FrameMenuTargetOf(const storage::FlameTree& tree, uint32_t node);

// A pattern for "hide frames like this": the name's namespace or package
// prefix when it has one ("std::vector<int>::push_back" -> "^std::"), else
// the whole name; regex special characters escaped.
std::string HidePatternFor(const std::string& function);

// An item a view adds to the right-click menu on a function, in every
// view (View::FunctionActions): choosing it opens that view on the function
// (SessionState::OpenView).
struct FunctionAction {
  std::string view;  // the view's id
  std::string label;  // "Show in Sandwich"
  std::string tooltip;
};

// Selects `function` in every view: the flamegraph, Top functions, the
// call tree and the Stack Chart highlight it (SessionState::SelectedFunction)
// and each view with a function action (the Sandwich, Source) is set to it,
// to show when opened. An empty name clears the selection alone.
void SelectFunction(SessionState* session, const std::string& function, const std::vector<FunctionAction>* actions);

class FrameMenu {
 public:
  // Call on a right-click; the menu opens in the current window.
  void Open(FrameMenuTarget target);
  // Call every frame from the same window (ID stack) as Open(). `actions`:
  // the views' items for a function (ViewContext::function_actions).
  void Draw(SessionState* session, const std::vector<FunctionAction>* actions);

 private:
  FrameMenuTarget target_;
  bool open_requested_ = false;
  bool hide_requested_ = false;
  char hide_pattern_[512] = {};
  std::string hide_error_;
};

// The Inverted checkbox of the tree views: an invert transform at the end
// of the source's chain (so it shows as a chip and exports alike).
void DrawInvertToggle(SessionState* session);

// "Compare with: [previous period v] [x] shares": picks the session's
// baseline (ui::SessionState::Baseline) for the diff views.
void DrawBaselinePicker(SessionState* session, const std::vector<std::string>* other_sources);

// One line: the baseline picker, then the transform chips.
void DrawCompareAndTransforms(SessionState* session, const std::vector<std::string>* other_sources);

// "Transforms: [Focus: main x] [Merge: f x] ..." on one line; clicking a
// chip removes it and every later one (they were applied on top of it).
// Draws nothing when there are none.
void DrawTransformChips(SessionState* session);

}  // namespace kiln::ui
