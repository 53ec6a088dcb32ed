#include "app/view_registry.h"

#include "ui/call_tree_view.h"
#include "ui/executables_view.h"
#include "ui/flamegraph_view.h"
#include "ui/heatmap_view.h"
#include "ui/sandwich_view.h"
#include "ui/source_view.h"
#include "ui/log_view.h"
#include "ui/top_functions_view.h"

namespace kiln::app {

std::vector<std::unique_ptr<ui::View>> CreateViews() {
  std::vector<std::unique_ptr<ui::View>> views;
  views.push_back(std::make_unique<ui::FlamegraphView>());
  views.push_back(std::make_unique<ui::TopFunctionsView>());
  views.push_back(std::make_unique<ui::CallTreeView>());
  views.push_back(std::make_unique<ui::SandwichView>());
  views.push_back(std::make_unique<ui::HeatmapView>());
  views.push_back(std::make_unique<ui::SourceView>());
  views.push_back(std::make_unique<ui::ExecutablesView>());
  views.push_back(std::make_unique<ui::LogView>());
  return views;
}

}  // namespace kiln::app
