// Source tab: a function's source file read from disk with the self and
// total weight of each line beside it, scrolled to the hottest line (as
// pprof's `list`, Hotspot and Tracy show it). A file that is not where the
// profile says gets a clear "not found at PATH" and a prefix map (built in
// /build/src, found in /home/me/src).
#pragma once

#include "ui/view.h"

namespace kiln::ui {

class SourceView : public View {
 public:
  std::string_view Id() const override { return "source"; }
  std::string_view Title() const override { return "Source"; }
  void Draw(const ViewContext& context) override;
  bool Settled() const override { return settled_; }

 private:
  std::shared_ptr<const SourceListing> listing_;
  bool scroll_to_hottest_ = false;
  char map_from_[512] = {};
  char map_to_[512] = {};
  bool settled_ = false;
};

}  // namespace kiln::ui
