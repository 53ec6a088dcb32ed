// Executables tab: every executable seen in native frames of the selection,
// with its ids, samples and symbol status; the background symbolizer's
// progress; actions to add symbols from files, retry, and list the frames
// that are still unsymbolized. The pure parts live in executables_model.h.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ui/executables_model.h"
#include "ui/view.h"

namespace kiln::ui {

class ExecutablesView : public View {
 public:
  std::string_view Id() const override { return "executables"; }
  std::string_view Title() const override { return "Executables"; }
  void Draw(const ViewContext& context) override;
  bool Settled() const override { return settled_; }
  // Its rows (storage::BuildExecutableTable), from the slice alone.
  Product OwnProduct() const override;

 private:
  void DrawToolbar(const ViewContext& context, const storage::ExecutableRow* selected);
  void DrawUnsymbolized(const ViewContext& context, const storage::ExecutableRow& row);

  std::shared_ptr<const std::vector<storage::ExecutableRow>> rows_;
  std::shared_ptr<const SymbolStatusMap> statuses_;
  std::vector<uint32_t> order_;
  char filter_[256] = {};
  bool order_dirty_ = true;
  bool settled_ = false;
  // The unsymbolized listing, cached per (slice, selection).
  const storage::ProfileSlice* listed_slice_ = nullptr;
  std::string listed_key_;
  std::vector<UnsymbolizedAddress> unsymbolized_;
};

}  // namespace kiln::ui
