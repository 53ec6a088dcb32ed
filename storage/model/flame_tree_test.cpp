#include "storage/model/flame_tree.h"

#include <doctest/doctest.h>

#include <map>
#include <random>

#include "storage/model/folded.h"
#include "storage/model/test_fixtures.h"

namespace kiln::storage {
namespace {

std::string Tree(const ProfileBatch& batch, FlameTreeOptions options = {}) {
  return PrintFlameTree(BuildFlameTree(testing::WholeSlice(batch), options));
}

}  // namespace

TEST_CASE("flame tree merges common prefixes and sorts children by label") {
  auto batch = testing::BatchFromFolded(R"(
main;work;leaf_b 1
main;work;leaf_a 3
main;idle 2
main 1
)", {.process = "app"});
  CHECK(Tree(batch) ==
        "all 7\n"
        "  app 7\n"
        "    main 7 self=1\n"
        "      idle 2 self=2\n"
        "      work 4\n"
        "        leaf_a 3 self=3\n"
        "        leaf_b 1 self=1\n");
}

TEST_CASE("group by none, process and thread") {
  auto batch = testing::BatchFromFolded("main;f 2", {.process = "app", .thread = "worker-1"});
  testing::AppendBatch(&batch, testing::BatchFromFolded("main;g 1", {.process = "db", .thread = "io"}));
  CHECK(Tree(batch, {.group_by = GroupBy::kNone}) ==
        "all 3\n"
        "  main 3\n"
        "    f 2 self=2\n"
        "    g 1 self=1\n");
  CHECK(Tree(batch, {.group_by = GroupBy::kThread}) ==
        "all 3\n"
        "  app 2\n"
        "    worker-1 2\n"
        "      main 2\n"
        "        f 2 self=2\n"
        "  db 1\n"
        "    io 1\n"
        "      main 1\n"
        "        g 1 self=1\n");
}

TEST_CASE("processes of one name stay apart by instance; this Kiln's own process is marked") {
  using Attrs = std::vector<std::pair<std::string, std::string>>;
  // Two python3 scripts, kiln itself on this host (pid 7 on "laptop"),
  // and a pid 7 on another host, which is not this Kiln.
  auto batch = testing::BatchFromFolded("main;a 2", {.process = "python3", .thread = "MainThread",
                                                     .attributes = Attrs{{"process.pid", "100"}}});
  testing::AppendBatch(&batch, testing::BatchFromFolded("main;b 1", {.process = "python3", .thread = "MainThread",
                                                                     .attributes = Attrs{{"process.pid", "200"}}}));
  testing::AppendBatch(&batch, testing::BatchFromFolded(
                                   "draw 4", {.process = "kiln", .attributes = Attrs{{"process.pid", "7"},
                                                                                    {"host.name", "laptop"}}}));
  testing::AppendBatch(&batch, testing::BatchFromFolded(
                                   "serve 1", {.process = "kiln", .attributes = Attrs{{"process.pid", "7"},
                                                                                     {"host.name", "server"}}}));
  const OwnProcess own{.pid = "7", .host = "laptop"};
  const FlameTreeOptions by_name{.group_by = GroupBy::kProcess, .own = own};
  const FlameTreeOptions by_instance{.group_by = GroupBy::kInstanceThread, .own = own};
  CHECK(Tree(batch, by_name) ==
        "all 8\n"
        "  kiln 5\n"
        "    draw 4 self=4\n"
        "    serve 1 self=1\n"
        "  python3 3\n"
        "    main 3\n"
        "      a 2 self=2\n"
        "      b 1 self=1\n");
  CHECK(Tree(batch, by_instance) ==
        "all 8\n"
        "  kiln [7] 1\n"
        "    unknown thread 1\n"
        "      serve 1 self=1\n"
        "  kiln [7] (this Kiln) 4\n"
        "    unknown thread 4\n"
        "      draw 4 self=4\n"
        "  python3 [100] 2\n"
        "    MainThread 2\n"
        "      main 2\n"
        "        a 2 self=2\n"
        "  python3 [200] 1\n"
        "    MainThread 1\n"
        "      main 1\n"
        "        b 1 self=1\n");
  // Nothing is marked without an own process (exports, other tools).
  CHECK(Tree(batch, {.group_by = GroupBy::kInstance}).find("this Kiln") == std::string::npos);
  CHECK(InstancePid("python3 [100]") == "100");
  CHECK(InstancePid("kiln [7] (this Kiln)") == "7");
  CHECK(InstancePid("weird [name] x") == "");
  CHECK(InstancePid("pid 42") == "");

  // No host.name: this host when a loopback sender sent it.
  ProfileDictionary d;
  const auto set = [&d](std::string_view sender) {
    return d.AddAttributeSet({{d.AddString("process.executable.name"), d.AddString("kiln")},
                              {d.AddString("process.pid"), d.AddString("7")},
                              {d.AddString("kiln.sender"), d.AddString(sender)}});
  };
  CHECK(ProcessInstanceLabel(d, set("127.0.0.1"), own) == "kiln [7] (this Kiln)");
  CHECK(ProcessInstanceLabel(d, set("10.0.0.5"), own) == "kiln [7]");
  const uint32_t pid_only = d.AddAttributeSet({{d.AddString("process.pid"), d.AddString("9")}});
  CHECK(ProcessInstanceLabel(d, pid_only, own) == "pid 9");
  FlameTreeOptions parsed;
  CHECK(ParseGroupBy("instance-thread", &parsed));
  CHECK(parsed.group_by == GroupBy::kInstanceThread);
}

TEST_CASE("process label falls back from name to path to service to pid") {
  ProfileDictionary d;
  uint32_t s1 = d.AddAttributeSet({{d.AddString("process.executable.path"), d.AddString("/usr/bin/python3")}});
  uint32_t s2 = d.AddAttributeSet({{d.AddString("service.name"), d.AddString("checkout")}});
  uint32_t s3 = d.AddAttributeSet({{d.AddString("process.pid"), d.AddString("42")}});
  CHECK(ProcessLabel(d, s1) == "python3");
  CHECK(ProcessLabel(d, s2) == "checkout");
  CHECK(ProcessLabel(d, s3) == "pid 42");
  CHECK(ProcessLabel(d, 0) == "unknown");
  CHECK(ThreadLabel(d, 0) == "unknown thread");
}

TEST_CASE("inline frames can be hidden; the outer function keeps the weight") {
  auto batch = testing::BatchFromFolded("main;parse@i;read 2\nmain;parse@i 1");
  CHECK(Tree(batch, {.group_by = GroupBy::kNone, .show_inline = false}) ==
        "all 3\n"
        "  main 3 self=1\n"
        "    read 2 self=2\n");
}

TEST_CASE("weights are values, not event counts (off-CPU nanoseconds)") {
  auto batch = testing::BatchFromFolded("main;sleep 2\nmain;read 1",
                                        {.sample_type = {OffCpuTime()}, .value = 1500});
  CHECK(Tree(batch, {.group_by = GroupBy::kNone}) ==
        "all 4500\n"
        "  main 4500\n"
        "    read 1500 self=1500\n"
        "    sleep 3000 self=3000\n");
}

TEST_CASE("folded lines: root first, sorted, self weights, annotations") {
  auto batch = testing::BatchFromFolded(R"(
main;read;sys_read@k 4
main;libc.so.6+0x1f2a 2
main 1
)", {.process = "app"});
  FlameTree tree = BuildFlameTree(testing::WholeSlice(batch), {});
  CHECK(FoldedLines(tree, {}) == std::vector<std::string>{
                                     "app;main 1",
                                     "app;main;libc.so.6+0x1f2a 2",
                                     "app;main;read;sys_read 4",
                                 });
  CHECK(FoldedLines(tree, {.annotate = true})[2] == "app;main;read;sys_read_[k] 4");
}

TEST_CASE("deep recursion builds without stack overflow") {
  std::string line;
  for (int i = 0; i < 5000; ++i) line += "recurse;";
  line += "leaf 1";
  FlameTree tree = BuildFlameTree(testing::WholeSlice(testing::BatchFromFolded(line)), {.group_by = GroupBy::kNone});
  CHECK(tree.nodes.size() == 5002);
  CHECK(tree.max_depth == 5001);
  CHECK(FoldedLines(tree, {}).size() == 1);
}

TEST_CASE("children are contiguous and parents are consistent") {
  auto batch = testing::BatchFromFolded("a;b;c 1\na;b;d 2\na;e 3\nf 4\nf;g 5");
  FlameTree tree = BuildFlameTree(testing::WholeSlice(batch), {.group_by = GroupBy::kNone});
  for (uint32_t i = 0; i < tree.nodes.size(); ++i) {
    const FlameNode& n = tree.nodes[i];
    int64_t child_total = 0;
    for (uint32_t c = n.first_child; c < n.first_child + n.child_count; ++c) {
      CHECK(tree.nodes[c].parent == i);
      CHECK(tree.nodes[c].depth == n.depth + 1);
      child_total += tree.nodes[c].total;
    }
    CHECK(n.total == n.self + child_total);
  }
}

TEST_CASE("group levels no sample has information for are left out") {
  // No process or thread names at all (a folded file, most pprof files):
  // no "unknown" / "unknown thread" rows on top of every stack.
  auto bare = testing::BatchFromFolded("main;work 2\nmain 1");
  CHECK(Tree(bare, {.group_by = GroupBy::kThread}) ==
        "all 3\n"
        "  main 3 self=1\n"
        "    work 2 self=2\n");
  // Threads named, processes not: only the thread level.
  auto threads = testing::BatchFromFolded("main;work 2", {.thread = "t1"});
  FlameTree tree = BuildFlameTree(testing::WholeSlice(threads), {.group_by = GroupBy::kThread});
  CHECK(PrintFlameTree(tree) ==
        "all 2\n"
        "  t1 2\n"
        "    main 2\n"
        "      work 2 self=2\n");
  CHECK(tree.nodes[1].kind == NodeKind::kThread);
  // Some samples named, some not: "unknown" now tells them apart, so it stays.
  auto mixed = bare;
  testing::AppendBatch(&mixed, testing::BatchFromFolded("main;other 1", {.process = "app"}));
  CHECK(Tree(mixed, {.group_by = GroupBy::kProcess}) ==
        "all 4\n"
        "  app 1\n"
        "    main 1\n"
        "      other 1 self=1\n"
        "  unknown 3\n"
        "    main 3 self=1\n"
        "      work 2 self=2\n");
}

}  // namespace kiln::storage

namespace kiln::storage {

TEST_CASE("a tree of 50 k stacks (built in parallel halves) holds exactly the folded input") {
  // Random stacks sharing prefixes, some repeated; the expected folded
  // lines are the input summed per stack by a map, not by the builder.
  std::mt19937 rng(7);
  std::map<std::string, int64_t> expected;
  std::string text;
  for (int i = 0; i < 50000; ++i) {
    std::string stack = "main";
    const int depth = 2 + static_cast<int>(rng() % 10);
    for (int d = 0; d < depth; ++d) stack += ";f" + std::to_string(rng() % (d < 2 ? 4 : 60));
    const int64_t count = 1 + static_cast<int64_t>(rng() % 5);
    expected[stack] += count;
    text += stack + " " + std::to_string(count) + "\n";
  }
  REQUIRE(expected.size() > (1u << 15));  // enough for the parallel sort
  const FlameTree tree = BuildFlameTree(testing::WholeSlice(testing::BatchFromFolded(text)), {.group_by = GroupBy::kNone});
  std::vector<std::string> want;
  for (const auto& [stack, count] : expected) want.push_back(stack + " " + std::to_string(count));
  std::sort(want.begin(), want.end());
  CHECK(FoldedLines(tree, {}) == want);
  // Every parent's children are contiguous, sorted, and sum below it.
  for (const FlameNode& n : tree.nodes) {
    int64_t children = 0;
    for (uint32_t c = n.first_child; c < n.first_child + n.child_count; ++c) {
      children += tree.nodes[c].total;
      if (c > n.first_child) CHECK(tree.labels[tree.nodes[c - 1].label] < tree.labels[tree.nodes[c].label]);
    }
    CHECK(n.total == n.self + children);
  }
}

}  // namespace kiln::storage
