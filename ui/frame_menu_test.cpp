#include "ui/frame_menu.h"

#include <doctest/doctest.h>

#include <re2/re2.h>

#include "storage/model/flame_tree.h"
#include "storage/model/test_fixtures.h"

namespace kiln::ui {

TEST_CASE("hide frames like this: the namespace or package, else the name, escaped") {
  CHECK(HidePatternFor("std::vector<int>::push_back") == "^std::");
  CHECK(HidePatternFor("java/util/HashMap:.get") == "^java/");
  CHECK(HidePatternFor("runtime.mallocgc") == "^runtime\\.");
  CHECK(HidePatternFor("malloc") == "^malloc$");
  CHECK(HidePatternFor("operator new(unsigned long)") == "^operator new\\(unsigned long\\)$");
  // Every pattern is valid and matches the name it came from.
  for (std::string name : {"std::vector<int>::push_back", "a.b", "x+y[0]", "f(g::h)", "*"}) {
    RE2 re(HidePatternFor(name));
    CHECK_MESSAGE(re.ok(), name);
    CHECK_MESSAGE(RE2::PartialMatch(name, re), name);
  }
}

TEST_CASE("a tree node's menu target: call path without group levels, executable") {
  auto batch = storage::testing::BatchFromFolded("main;libc.so.6+0x10 2", {.process = "app"});
  storage::FlameTree tree =
      storage::BuildFlameTree(storage::testing::WholeSlice(batch), {.group_by = storage::GroupBy::kProcess});
  uint32_t leaf = 0;
  for (uint32_t i = 0; i < tree.nodes.size(); ++i) {
    if (tree.Label(i) == "libc.so.6+0x10") leaf = i;
  }
  REQUIRE(leaf != 0);
  FrameMenuTarget t = FrameMenuTargetOf(tree, leaf);
  CHECK(t.path == std::vector<std::string>{"main", "libc.so.6+0x10"});
  CHECK(t.executable == "libc.so.6");
  CHECK(FrameMenuTargetOf(tree, 1).kind == storage::NodeKind::kProcess);
}

}  // namespace kiln::ui

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "ui/help_dialogs.h"

namespace kiln::ui {

TEST_CASE("the shortcut list is the table of keys the window acts on: Ctrl+N names the Nth view") {
  const std::vector<std::string> titles = {"Flamegraph", "Top functions", "Call tree", "Sandwich",
                                           "FlameScope", "Source",        "Executables", "Log"};
  const std::vector<WindowKey> keys = WindowKeys(titles.size());
  const std::vector<Shortcut> list = KeyboardShortcuts(titles);
  std::set<std::string> labels;
  for (const WindowKey& k : keys) {
    CAPTURE(KeyLabel(k));
    CHECK(labels.insert(KeyLabel(k)).second);  // one command a key
    // Listed with that very label; a view key with that view's title.
    auto line = std::find_if(list.begin(), list.end(), [&](const Shortcut& s) { return s.keys == KeyLabel(k); });
    REQUIRE(line != list.end());
    if (k.command == WindowCommand::kShowView) CHECK(line->action == "Show " + titles[static_cast<size_t>(k.view)]);
  }
  // Every view has its key (the list said Ctrl+1 .. Ctrl+7 for eight views).
  for (size_t i = 0; i < titles.size(); ++i) {
    CHECK(std::count_if(keys.begin(), keys.end(), [&](const WindowKey& k) {
            return k.command == WindowCommand::kShowView && k.view == static_cast<int>(i) &&
                   KeyLabel(k) == "Ctrl+" + std::to_string(i + 1);
          }) == 1);
  }
  CHECK(std::find_if(list.begin(), list.end(), [](const Shortcut& s) { return s.keys == "F1"; }) != list.end());
  // Past nine views there are no digits left: the tenth has no key.
  CHECK(WindowKeys(12).size() == WindowKeys(9).size());
}

TEST_CASE("a function selected in one view is followed by the others") {
  SessionState s;
  s.view_args["source"] = "parse";
  s.view_args["source/file"] = "/src/parse.c";
  s.view_args["sandwich"] = "main";
  const std::vector<FunctionAction> actions = {{.view = "sandwich", .label = "Show in Sandwich", .tooltip = ""},
                                               {.view = "source", .label = "Show source", .tooltip = ""}};
  SelectFunction(&s, "read", &actions);
  CHECK(s.SelectedFunction() == "read");
  CHECK(s.search_text == "=read");  // the flamegraph's exact search
  CHECK(s.ViewArg("sandwich") == "read");
  CHECK(s.ViewArg("source") == "read");
  CHECK(s.ViewArg("source/file").empty());  // that file was parse's
  CHECK(s.requested_tab.empty());           // the shown view stays
  // The same function again keeps what its views chose since.
  s.view_args["source/file"] = "/src/read_inline.h";
  SelectFunction(&s, "read", &actions);
  CHECK(s.ViewArg("source/file") == "/src/read_inline.h");
  // Nothing selected: the views keep their functions; no exact search.
  SelectFunction(&s, "", &actions);
  CHECK(s.SelectedFunction().empty());
  CHECK(s.ViewArg("sandwich") == "read");
  s.search_text = "rea";  // a substring search selects no one function
  CHECK(s.SelectedFunction().empty());
}

}  // namespace kiln::ui
