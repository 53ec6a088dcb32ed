#include "ui/call_tree.h"

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "ui/test_trees.h"

namespace kiln::ui {

namespace {

std::vector<std::string> Rows(const CallTreeTable& table, const storage::FlameTree& tree) {
  std::vector<std::string> out;
  for (uint32_t node : table.rows()) out.push_back(std::string(tree.nodes[node].depth * 2, ' ') + tree.Label(node));
  return out;
}

}  // namespace

TEST_CASE("the call tree reveals a function selected elsewhere: its heaviest node, opened to") {
  auto tree = std::make_shared<const storage::FlameTree>(
      testing::TreeFromFolded("main;run;parse;read 5\nmain;run;write 40\nmain;load;read 20\nmain;idle 35\n"));
  CallTreeTable table;
  CHECK_FALSE(table.Reveal("read"));  // no tree yet
  table.Adopt(tree);
  CHECK(table.selected() == CallTreeTable::kNone);  // not the root: nothing is chosen yet
  // First sight opens the heaviest path; read is in no open row.
  CHECK(Rows(table, *tree) ==
        std::vector<std::string>{"all", "  main", "    run", "      write", "      parse", "    idle", "    load"});
  REQUIRE(table.Reveal("read"));
  const uint32_t selected = table.selected();
  CHECK(tree->Label(selected) == "read");
  CHECK(tree->nodes[selected].total == 20);  // under load, not parse's 5
  CHECK(Rows(table, *tree) == std::vector<std::string>{"all", "  main", "    run", "      write", "      parse",
                                                       "    idle", "    load", "      read"});
  // A name no frame has changes nothing.
  CHECK_FALSE(table.Reveal("no such function"));
  CHECK(table.selected() == selected);
  // Group labels are not functions.
  CHECK_FALSE(table.Reveal("all"));
}

}  // namespace kiln::ui
