#include "app/view_registry.h"

#include <CLI/CLI.hpp>

#include "app/gui_app.h"

#include "ui/call_tree_view.h"
#include "ui/executables_view.h"
#include "ui/flamegraph_view.h"
#include "ui/heatmap_view.h"
#include "ui/sandwich_view.h"
#include "ui/source_view.h"
#include "ui/spans_view.h"
#include "ui/stack_chart_view.h"
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
  views.push_back(std::make_unique<ui::StackChartView>());
  views.push_back(std::make_unique<ui::SpansView>());
  views.push_back(std::make_unique<ui::SourceView>());
  views.push_back(std::make_unique<ui::ExecutablesView>());
  views.push_back(std::make_unique<ui::LogView>());
  return views;
}

WindowFlags::WindowFlags(CLI::App& cli, GuiOptions* options) : options_(options) {
  std::vector<std::string> ids;
  std::string list;
  const std::vector<std::unique_ptr<ui::View>> views = CreateViews();
  for (const auto& view : views) {
    ids.emplace_back(view->Id());
    list += (list.empty() ? "" : ", ") + ids.back();
  }
  cli.add_option("--tab", options->tab, "Initial view: " + list)->check(CLI::IsMember(ids));
  cli.add_option("--trace-url", options->trace_url,
                 "Your trace backend, where the Spans view opens a span's trace: a URL with {trace_id}, e.g. "
                 "'http://localhost:16686/trace/{trace_id}' (kept as a preference when set in the window)")
      ->check([](const std::string& url) {
        return url.find("{trace_id}") == std::string::npos ? std::string("the URL needs {trace_id}") : std::string();
      });
  for (const auto& view : views) {
    for (ui::View::Flag& flag : view->Flags()) {
      Given& given = given_.emplace_back(Given{flag.key, flag.encode, {}});
      CLI::Option* option = cli.add_option(flag.name, given.values, flag.help);
      if (flag.repeatable) {
        option->allow_extra_args(false);
      } else {
        option->expected(1);
      }
    }
  }
}

bool WindowFlags::Apply(std::string* error) {
  for (const Given& given : given_) {
    if (given.values.empty()) continue;
    std::string value = given.encode ? given.encode(given.values, error) : given.values.back();
    if (!error->empty()) return false;
    options_->view_args[given.key] = std::move(value);
  }
  return true;
}

}  // namespace kiln::app
