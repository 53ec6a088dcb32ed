// Sandwich tab: one function's callers (merged across its call sites,
// inverted) above its callees, for a function picked from any view's
// right-click menu (SessionState::OpenView("sandwich", function)). The
// first view that is a unit of its own: its argument, its part of the
// analysis (OwnProduct) and its result live here, nowhere else.
#pragma once

#include "ui/call_tree.h"
#include "ui/view.h"

namespace kiln::ui {

class SandwichView : public View {
 public:
  std::string_view Id() const override { return "sandwich"; }
  std::string_view Title() const override { return "Sandwich"; }
  void Draw(const ViewContext& context) override;
  bool Settled() const override { return settled_; }
  Product OwnProduct() const override;
  std::vector<Flag> Flags() const override;
  std::vector<FunctionAction> FunctionActions() const override;

 private:
  CallTreeTable callers_, callees_;
  char function_[512] = {};
  bool settled_ = false;
};

}  // namespace kiln::ui
