// An expandable tree table over a FlameTree: the Call tree view (top-down,
// or bottom-up with the Inverted toggle) and both halves of the Sandwich
// view. Children are listed heaviest first, as call trees list them; the
// expanded rows survive a new tree (live data, a new transform) by their
// label paths. Arrows move and open or close rows (Dear ImGui's keyboard
// navigation); right-click offers the transforms.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "storage/model/flame_tree.h"
#include "ui/frame_menu.h"
#include "ui/session_state.h"

namespace kiln::ui {

class CallTreeTable {
 public:
  // Draws `tree` in a child region of `height` pixels (0: the rest of the
  // window). `type`: the unit of every number.
  // `actions`: the views' items for its right-click menu on a function.
  void Draw(const char* id, const std::shared_ptr<const storage::FlameTree>& tree, const storage::SampleType& type,
            SessionState* session, const std::vector<FunctionAction>* actions, float height = 0);
  // The nodes shown, in order, with their indentation (for tests and
  // benchmarks), as the last change left them.
  const std::vector<uint32_t>& rows() const {
    if (rows_dirty_) RebuildRows();
    return rows_;
  }
  // Takes a new tree; expands the heaviest path when nothing was expanded.
  void Adopt(const std::shared_ptr<const storage::FlameTree>& tree);
  void Toggle(uint32_t node);
  // Opens the path to `function`'s heaviest node (a frame whose label is
  // the name) and selects it, scrolled to at the next Draw. False when no
  // frame of the tree has that name (nothing changes).
  bool Reveal(const std::string& function);
  static constexpr uint32_t kNone = UINT32_MAX;
  uint32_t selected() const { return selected_; }  // kNone: no row (a new tree selects none)
  // The Call tree view follows the function selected in another view
  // (SessionState::SelectedFunction): each new selection is revealed.
  void FollowSelection() { follow_ = true; }

 private:
  std::string PathKey(uint32_t node) const;
  void RebuildRows() const;

  std::shared_ptr<const storage::FlameTree> tree_;
  std::vector<uint8_t> expanded_;                   // per node of tree_
  std::unordered_set<std::string> expanded_paths_;  // PathKey of expanded nodes
  mutable std::vector<uint32_t> rows_;  // rebuilt when read after a change
  mutable bool rows_dirty_ = true;
  uint32_t selected_ = kNone;
  bool scroll_to_selected_ = false;
  bool follow_ = false;
  std::string followed_;  // the selection last revealed
  FrameMenu menu_;
};

}  // namespace kiln::ui
