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
