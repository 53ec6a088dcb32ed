// Log tab: kiln's own events (listening, connections, requests, rejections
// with reasons), newest first, with a level and a text filter.
#pragma once

#include <vector>

#include "ui/view.h"

namespace kiln::ui {

class LogView : public View {
 public:
  std::string_view Id() const override { return "log"; }
  std::string_view Title() const override { return "Log"; }
  void Draw(const ViewContext& context) override;
  bool Settled() const override { return settled_; }

 private:
  int min_level_ = 1;  // storage::LogLevel::kInfo
  char filter_[256] = {};
  std::vector<uint32_t> visible_;
  bool settled_ = false;
};

}  // namespace kiln::ui
