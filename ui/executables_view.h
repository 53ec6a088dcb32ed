// Executables tab: every executable seen in native frames of the selection,
// with its ids, weight and symbol status.
#pragma once

#include <memory>
#include <vector>

#include "ui/view.h"

namespace kiln::ui {

class ExecutablesView : public View {
 public:
  std::string_view Id() const override { return "executables"; }
  std::string_view Title() const override { return "Executables"; }
  void Draw(const ViewContext& context) override;
  bool Settled() const override { return settled_; }

 private:
  std::shared_ptr<const std::vector<storage::ExecutableRow>> rows_;
  std::vector<uint32_t> order_;
  char filter_[256] = {};
  bool order_dirty_ = true;
  bool settled_ = false;
};

// "symbolized", "no symbols", "3 of 10 frames unsymbolized": what the
// Symbols column says for a row. Pure, for tests.
std::string SymbolStatus(const storage::ExecutableRow& row);

}  // namespace kiln::ui
