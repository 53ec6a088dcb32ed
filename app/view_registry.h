// The one place that lists the window's views, in tab order. Adding a view
// means writing ui/<name>_view.{h,cpp} and adding one line here.
#pragma once

#include <memory>
#include <vector>

#include "ui/view.h"

namespace kiln::app {

std::vector<std::unique_ptr<ui::View>> CreateViews();

}  // namespace kiln::app
