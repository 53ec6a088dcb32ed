// Call tree tab: the flamegraph's tree (same grouping, inline frames and
// transforms) as an expandable table with total and self columns in the
// sample type's unit; the Inverted toggle makes it bottom-up.
#pragma once

#include "ui/call_tree.h"
#include "ui/view.h"

namespace kiln::ui {

class CallTreeView : public View {
 public:
  CallTreeView() { table_.FollowSelection(); }
  std::string_view Id() const override { return "calltree"; }
  std::string_view Title() const override { return "Call tree"; }
  void Draw(const ViewContext& context) override;
  bool Settled() const override { return settled_; }

 private:
  CallTreeTable table_;
  bool settled_ = false;
};

}  // namespace kiln::ui
