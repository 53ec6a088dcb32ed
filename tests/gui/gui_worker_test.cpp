// The analysis worker's products (app/gui_worker.cpp): each is rebuilt only
// when a request field it depends on changed, so a transform or grouping
// change re-derives the tree from the cached slice without a store query,
// and new data or a new range does query again. Also the views' own
// command-line options (app/view_registry.cpp). No display needed.
#include "app/gui_worker.h"

#include <CLI/CLI.hpp>
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "app/gui_app.h"
#include "app/view_registry.h"
#include "storage/model/folded.h"
#include "storage/model/test_fixtures.h"
#include "storage/store.h"
#include "ui/executables_view.h"
#include "ui/heatmap_view.h"
#include "ui/source_view.h"
#include "ui/view.h"

namespace kiln::app {
namespace {

struct TempStore {
  std::string dir;
  std::unique_ptr<storage::Store> store;
  TempStore() {
    std::string t = (std::filesystem::temp_directory_path() / "kiln-worker-test-XXXXXX").string();
    dir = mkdtemp(t.data());
    store = *storage::Store::Open(dir, storage::Store::Mode::kReadWrite);
  }
  ~TempStore() {
    store.reset();
    std::filesystem::remove_all(dir);
  }
};

std::shared_ptr<const ui::AnalysisSnapshot> Answer(GuiWorker& worker, const ui::AnalysisRequest& request) {
  const uint64_t generation = worker.Submit(request);
  for (int i = 0; i < 2000; ++i) {
    auto s = worker.LatestAnalysis();
    if (s && s->generation == generation) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  FAIL("the worker did not answer in 10 s");
  return nullptr;
}

}  // namespace

TEST_CASE("the worker rebuilds only the products whose inputs changed") {
  TempStore t;
  REQUIRE(t.store->Write(storage::testing::BatchFromFolded("main;a;b 3\nmain;c 1", {.process = "app"})).ok());
  GuiWorker worker(*t.store, nullptr, t.dir, {});
  ui::AnalysisRequest r;
  r.timeline_window = {1'700'000'000'000'000'000, 1'700'000'000'010'000'000};
  // The Executables view's own product rides along: built from the slice
  // alone, so a transform keeps it.
  ui::ExecutablesView executables_view;
  ui::AddViewProducts({&executables_view}, ui::SessionState{}, "", &r);
  const auto rows = [](const std::shared_ptr<const ui::AnalysisSnapshot>& s) {
    return s->ViewResult<std::vector<storage::ExecutableRow>>("executables");
  };
  auto first = Answer(worker, r);
  REQUIRE(rows(first));
  REQUIRE(first->error.empty());
  REQUIRE(first->tree);
  CHECK(first->slice->total_events == 4);

  // A transform: the same slice, timeline, executables; a new tree.
  ui::AnalysisRequest inverted = r;
  inverted.tree_options.transforms.push_back(*storage::ParseTransform("invert"));
  auto second = Answer(worker, inverted);
  CHECK(second->slice == first->slice);
  CHECK(second->timeline == first->timeline);
  CHECK(rows(second) == rows(first));
  CHECK(second->tree != first->tree);
  CHECK(storage::FoldedLines(*second->tree, {}) == std::vector<std::string>{"app;b;a;main 3", "app;c;main 1"});

  // The timeline's window alone: only the timeline.
  ui::AnalysisRequest wider = inverted;
  wider.timeline_window.to_ns += 1'000'000'000;
  auto third = Answer(worker, wider);
  CHECK(third->slice == second->slice);
  CHECK(third->tree == second->tree);
  CHECK(third->timeline != second->timeline);

  // A selection inside the window: a new slice and tree, the same
  // timeline (it shows the window, not the selection).
  ui::AnalysisRequest selected = wider;
  selected.query.from_ns = 1'700'000'000'001'000'000;
  auto selection = Answer(worker, selected);
  CHECK(selection->slice != third->slice);
  CHECK(selection->slice->total_events == 3);
  CHECK(selection->tree != third->tree);
  CHECK(selection->timeline == third->timeline);

  // New data (the data version): everything again.
  REQUIRE(t.store->Write(storage::testing::BatchFromFolded(
                              "main;c 2", {.first_time_ns = 1'700'000'000'020'000'000, .process = "app"}))
              .ok());
  ui::AnalysisRequest newer = wider;
  newer.data_version += 1;
  auto fourth = Answer(worker, newer);
  CHECK(fourth->slice != third->slice);
  CHECK(fourth->slice->total_events == 6);
  CHECK(fourth->tree != third->tree);
  CHECK(rows(fourth) != rows(third));

  // A baseline: its slice and the diff; a transform then re-derives the
  // diff from both cached slices.
  ui::AnalysisRequest diff = newer;
  diff.baseline = ui::BaselineRequest{};
  diff.baseline->query.to_ns = 1'700'000'000'004'000'000;  // the first write's samples
  auto fifth = Answer(worker, diff);
  REQUIRE(fifth->diff);
  CHECK(fifth->baseline_slice->total_events == 4);
  CHECK(fifth->diff->base_events == 4);
  CHECK(fifth->diff->target_events == 6);
  CHECK(fifth->slice == fourth->slice);
  ui::AnalysisRequest diff_plain = diff;
  diff_plain.tree_options.transforms.clear();
  auto sixth = Answer(worker, diff_plain);
  CHECK(sixth->baseline_slice == fifth->baseline_slice);
  CHECK(sixth->diff != fifth->diff);
  CHECK(sixth->diff_functions);
}


// A view that exists only in this file: the weight of the stacks that go
// through its argument. It names nothing outside itself (no request or
// snapshot field, no worker entry), as a new view in its own files would.
class ThroughView : public ui::View {
 public:
  std::string_view Id() const override { return "through"; }
  std::string_view Title() const override { return "Through"; }
  void Draw(const ui::ViewContext&) override {}
  bool Settled() const override { return true; }
  Product OwnProduct() const override {
    return {.inputs = [](const ui::SessionState& s) { return s.ViewArg("through"); },
            .build = [](const storage::Store&, const ui::AnalysisSnapshot& snapshot,
                        const std::string& function) -> std::shared_ptr<const void> {
              int64_t weight = 0;
              const storage::Stacks& stacks = *snapshot.stacks;
              for (size_t e = 0; e < stacks.size(); ++e) {
                for (uint32_t i = stacks.offsets[e]; i < stacks.offsets[e + 1]; ++i) {
                  if ((*stacks.functions)[stacks.elements[i]].name == function) {
                    weight += stacks.weights[e];
                    break;
                  }
                }
              }
              return std::make_shared<const int64_t>(weight);
            }};
  }
};

TEST_CASE("a view's own product: built by the worker from its inputs, kept while they hold, rebuilt after") {
  TempStore t;
  REQUIRE(t.store->Write(storage::testing::BatchFromFolded("main;a;b 3\nmain;c 1", {.process = "app"})).ok());
  GuiWorker worker(*t.store, nullptr, t.dir, {});
  ThroughView view;
  const std::vector<ui::View*> views = {&view};
  ui::SessionState session;
  const auto request = [&] {
    ui::AnalysisRequest r;
    r.timeline_window = {1'700'000'000'000'000'000, 1'700'000'000'010'000'000};
    r.tree_options = session.tree;
    ui::AddViewProducts(views, session, "", &r);
    return r;
  };
  // Nothing asked: no result.
  auto none = Answer(worker, request());
  CHECK(none->ViewResult<int64_t>("through") == nullptr);

  session.OpenView("through", "a");
  CHECK(session.requested_tab == "through");
  auto a = Answer(worker, request());
  REQUIRE(a->ViewResult<int64_t>("through"));
  CHECK(*a->ViewResult<int64_t>("through") == 3);
  CHECK(a->ViewInputs("through") == "a");

  // Another shared input (a transform): the slice is kept, the view's
  // product built again from the new stacks.
  session.tree.transforms.push_back(*storage::ParseTransform("merge=a"));
  auto merged = Answer(worker, request());
  CHECK(merged->slice == a->slice);
  REQUIRE(merged->ViewResult<int64_t>("through"));
  CHECK(*merged->ViewResult<int64_t>("through") == 0);  // a merged into main
  // Nothing changed: the very same result object.
  ui::AnalysisRequest same = request();
  same.timeline_buckets += 1;  // only the timeline changes
  auto again = Answer(worker, same);
  CHECK(again->ViewResult<int64_t>("through") == merged->ViewResult<int64_t>("through"));
  // Its own input: built again.
  session.tree.transforms.clear();
  session.view_args["through"] = "c";
  auto c = Answer(worker, request());
  CHECK(*c->ViewResult<int64_t>("through") == 1);
}

TEST_CASE("FlameScope's own product: a scan of the window only while it is shown, kept across selections") {
  TempStore t;
  // 20 samples 1 ms apart from 1'700'000'000'000'000'000 (the fixture's).
  REQUIRE(t.store->Write(storage::testing::BatchFromFolded("main;a 20", {.process = "app"})).ok());
  GuiWorker worker(*t.store, nullptr, t.dir, {});
  ui::HeatmapView heatmap;
  const std::vector<ui::View*> views = {&heatmap};
  ui::SessionState session;
  session.window = {1'700'000'000'000'000'000, 1'700'000'000'010'000'000};
  const auto request = [&](std::string_view shown) {
    ui::AnalysisRequest r = ui::RequestFor(session);
    ui::AddViewProducts(views, session, shown, &r);
    return r;
  };
  // Another view on screen: no scan, no result.
  auto elsewhere = Answer(worker, request("flamegraph"));
  CHECK(elsewhere->view_results.count("heatmap") == 0);
  // Shown: the window's samples, every one in some cell.
  auto shown = Answer(worker, request("heatmap"));
  REQUIRE(shown->view_results.count("heatmap") == 1);
  const std::shared_ptr<const void> first = shown->view_results.at("heatmap");
  // A selection (a drag on the map): the same result, not a new scan.
  session.selection = {1'700'000'000'002'000'000, 1'700'000'000'004'000'000};
  auto selected = Answer(worker, request("heatmap"));
  CHECK(selected->slice != shown->slice);  // the other views follow the selection
  REQUIRE(selected->view_results.count("heatmap") == 1);
  CHECK(selected->view_results.at("heatmap") == first);
  // The window moves: scanned again.
  session.window.to_ns += 5'000'000'000;
  auto moved = Answer(worker, request("heatmap"));
  REQUIRE(moved->view_results.count("heatmap") == 1);
  CHECK(moved->view_results.at("heatmap") != first);
}

}  // namespace kiln::app

namespace {

// Parses `args` as kiln's command line with only the window's view options.
bool ParseWindowFlags(std::vector<std::string> args, kiln::app::GuiOptions* options, std::string* error) {
  CLI::App cli("kiln");
  kiln::app::WindowFlags flags(cli, options);
  std::reverse(args.begin(), args.end());  // CLI11's vector form is last-first
  try {
    cli.parse(args);
  } catch (const CLI::ParseError& e) {
    *error = e.what();
    return false;
  }
  return flags.Apply(error);
}

}  // namespace

TEST_CASE("the views' own command-line options come from the registry and reach every source") {
  SUBCASE("--tab takes every registered view's id, and nothing else") {
    for (const auto& view : kiln::app::CreateViews()) {
      kiln::app::GuiOptions options;
      std::string error;
      CHECK_MESSAGE(ParseWindowFlags({"--tab", std::string(view->Id())}, &options, &error), error);
      CHECK(options.tab == view->Id());
    }
    kiln::app::GuiOptions options;
    std::string error;
    CHECK(!ParseWindowFlags({"--tab", "nope"}, &options, &error));
  }
  SUBCASE("Sandwich's and Source's flags set their view_args, which ApplyStartupChoices copies") {
    kiln::app::GuiOptions options;
    std::string error;
    REQUIRE_MESSAGE(ParseWindowFlags({"--sandwich", "main", "--source", "leaf", "--source-map", "/build=/src",
                                      "--source-map", "/opt=/home/me"},
                                     &options, &error),
                    error);
    CHECK(options.view_args["sandwich"] == "main");
    CHECK(options.view_args["source"] == "leaf");
    CHECK(kiln::ui::DecodeSourcePathMap(options.view_args["source map"]) ==
          kiln::ui::SourcePathMap{{"/build", "/src"}, {"/opt", "/home/me"}});
  }
  SUBCASE("a value a view refuses is an error naming the option") {
    kiln::app::GuiOptions options;
    std::string error;
    CHECK(!ParseWindowFlags({"--source-map", "no-equals-sign"}, &options, &error));
    CHECK(error == "--source-map wants FROM=TO, got \"no-equals-sign\"");
    CHECK(options.view_args.empty());
  }
  SUBCASE("main.cpp and the frame menu name no view's option or id: a new view adds its own") {
    const char* src = std::getenv("KILN_SOURCE_DIR");
    REQUIRE(src != nullptr);
    for (const char* file : {"/app/main.cpp", "/ui/frame_menu.cpp"}) {
      CAPTURE(file);
      std::ifstream in(std::string(src) + file);
      std::stringstream text;
      text << in.rdbuf();
      REQUIRE(text.str().size() > 1000);
      for (const auto& view : kiln::app::CreateViews()) {
        CHECK_MESSAGE(text.str().find('"' + std::string(view->Id()) + '"') == std::string::npos, view->Id());
        for (const kiln::ui::View::Flag& flag : view->Flags())
          CHECK_MESSAGE(text.str().find('"' + flag.name) == std::string::npos, flag.name);
        for (const kiln::ui::FunctionAction& action : view->FunctionActions()) {
          CHECK(action.view == view->Id());  // an action opens its own view
          CHECK_MESSAGE(text.str().find('"' + action.label + '"') == std::string::npos, action.label);
        }
      }
    }
  }
}
