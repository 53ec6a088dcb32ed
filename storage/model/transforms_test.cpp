#include "storage/model/transforms.h"

#include <doctest/doctest.h>

#include "storage/model/flame_tree.h"
#include "storage/model/folded.h"
#include "storage/model/test_fixtures.h"

namespace kiln::storage {
namespace {

// The folded lines of `folded` after `specs` (ParseTransform text), frames
// directly under the root.
std::string Transformed(std::string_view folded, std::vector<std::string> specs) {
  FlameTreeOptions options{.group_by = GroupBy::kNone};
  for (const std::string& spec : specs) {
    absl::StatusOr<Transform> t = ParseTransform(spec);
    REQUIRE_MESSAGE(t.ok(), spec);
    options.transforms.push_back(*t);
  }
  std::string out;
  for (const std::string& line :
       FoldedLines(BuildFlameTree(testing::WholeSlice(testing::BatchFromFolded(folded)), options), {})) {
    out += line + "\n";
  }
  return out;
}

constexpr std::string_view kProgram = R"(
main;parse;lex 3
main;parse;alloc 2
main;run;eval;eval;alloc 4
main;run;eval;call;eval;alloc 1
main;run;eval 2
main 1
)";

}  // namespace

TEST_CASE("invert: each stack leaf first, identical results merge") {
  CHECK(Transformed(kProgram, {"invert"}) ==
        "alloc;eval;call;eval;run;main 1\n"
        "alloc;eval;eval;run;main 4\n"
        "alloc;parse;main 2\n"
        "eval;run;main 2\n"
        "lex;parse;main 3\n"
        "main 1\n");
}

TEST_CASE("focus on a function: stacks through it from its outermost call") {
  CHECK(Transformed(kProgram, {"focus=eval"}) ==
        "eval 2\n"
        "eval;call;eval;alloc 1\n"
        "eval;eval;alloc 4\n");
  CHECK(Transformed(kProgram, {"callees-of=eval"}) == Transformed(kProgram, {"focus=eval"}));
  CHECK(Transformed(kProgram, {"focus=nothing"}).empty());
}

TEST_CASE("focus on a subtree: one call path") {
  CHECK(Transformed(kProgram, {"focus-subtree=main;run;eval;eval"}) == "eval;alloc 4\n");
  CHECK(Transformed(kProgram, {"focus-subtree=main;parse"}) ==
        "parse;alloc 2\n"
        "parse;lex 3\n");
}

TEST_CASE("callers of: from the innermost call up to the root, merged") {
  CHECK(Transformed(kProgram, {"callers-of=alloc"}) ==
        "alloc;eval;call;eval;run;main 1\n"
        "alloc;eval;eval;run;main 4\n"
        "alloc;parse;main 2\n");
  // Recursion: the innermost eval, so each sample counts once.
  CHECK(Transformed(kProgram, {"callers-of=eval"}) ==
        "eval;call;eval;run;main 1\n"
        "eval;eval;run;main 4\n"
        "eval;run;main 2\n");
}

TEST_CASE("merge: the function's self weight goes to its caller") {
  CHECK(Transformed(kProgram, {"merge=eval"}) ==
        "main 1\n"
        "main;parse;alloc 2\n"
        "main;parse;lex 3\n"
        "main;run 2\n"
        "main;run;alloc 4\n"
        "main;run;call;alloc 1\n");
}

TEST_CASE("hide: frames matching a pattern go, the weight stays") {
  CHECK(Transformed(kProgram, {"hide=^(ev|ca)"}) ==
        "main 1\n"
        "main;parse;alloc 2\n"
        "main;parse;lex 3\n"
        "main;run 2\n"
        "main;run;alloc 5\n");
  CHECK(!ParseTransform("hide=(unclosed").ok());
}

TEST_CASE("collapse recursion: direct repeats, or everything inside a recursive call") {
  // Every function's direct repeats (the command line's --collapse-recursion).
  CHECK(Transformed(kProgram, {"collapse-recursion"}) ==
        "main 1\n"
        "main;parse;alloc 2\n"
        "main;parse;lex 3\n"
        "main;run;eval 2\n"
        "main;run;eval;alloc 4\n"
        "main;run;eval;call;eval;alloc 1\n");
  // One function, indirect too: eval -> call -> eval becomes one eval.
  CHECK(Transformed(kProgram, {"collapse-recursion=eval"}) ==
        "main 1\n"
        "main;parse;alloc 2\n"
        "main;parse;lex 3\n"
        "main;run;eval 2\n"
        "main;run;eval;alloc 5\n");
  CHECK(Transformed(kProgram, {"collapse-direct-recursion=eval"}) == Transformed(kProgram, {"collapse-recursion"}));
  CHECK(Transformed("a;b;a;b;c 1", {"collapse-recursion=a"}) == "a;b;c 1\n");
  CHECK(Transformed("a;b;c;b;d 1", {"collapse-recursion=a"}) == "a;b;c;b;d 1\n");
}

TEST_CASE("collapse a library into one frame per run of its frames") {
  CHECK(Transformed("main;libc.so.6+0x10;libc.so.6+0x20;cb;libc.so.6+0x30 2\nmain;libc.so.6+0x40 1",
                    {"collapse-library=libc.so.6"}) ==
        "main;libc.so.6 1\n"
        "main;libc.so.6;cb;libc.so.6 2\n");
}

TEST_CASE("drop kernel frames") {
  CHECK(Transformed("main;write;sys_write@k;vfs_write@k 3\nmain 1", {"drop-kernel"}) ==
        "main 1\n"
        "main;write 3\n");
}

TEST_CASE("transforms apply in order") {
  CHECK(Transformed(kProgram, {"focus=eval", "invert"}) ==
        "alloc;eval;call;eval 1\n"
        "alloc;eval;eval 4\n"
        "eval 2\n");
  CHECK(Transformed(kProgram, {"invert", "focus=eval"}) ==
        "eval;call;eval;run;main 1\n"
        "eval;eval;run;main 4\n"
        "eval;run;main 2\n");
}

TEST_CASE("transform specs round trip and bad ones are refused with the reason") {
  for (std::string spec : {"invert", "focus=a::b", "focus-subtree=main;run", "callers-of=x", "merge=y",
                           "hide=^std::", "collapse-recursion", "collapse-recursion=f",
                           "collapse-direct-recursion=f", "collapse-library=libc.so.6", "drop-kernel"}) {
    absl::StatusOr<Transform> t = ParseTransform(spec);
    REQUIRE_MESSAGE(t.ok(), spec);
    CHECK(TransformSpec(*t) == spec);
  }
  CHECK(ParseTransform("focus").status().message() == "transform focus needs a value (focus=...)");
  CHECK(ParseTransform("invert=x").status().message() == "transform invert takes no value");
  CHECK(ParseTransform("zoom=x").status().message() == "unknown transform \"zoom\"");
  CHECK(TransformLabel(*ParseTransform("focus=main")) == "Focus: main");
  CHECK(TransformLabel(*ParseTransform("invert")) == "Inverted");
}

}  // namespace kiln::storage

namespace kiln::storage {

TEST_CASE("sandwich: callers from outside the recursion, callees once per sample") {
  Stacks stacks = StacksOf(testing::WholeSlice(testing::BatchFromFolded(kProgram)));
  Sandwich s = BuildSandwich(stacks, "eval");
  CHECK(PrintFlameTree(s.callers) ==
        "all 7\n"
        "  eval 7\n"
        "    run 7\n"
        "      main 7 self=7\n");
  CHECK(PrintFlameTree(s.callees) ==
        "all 7\n"
        "  eval 7 self=2\n"
        "    alloc 5 self=5\n");
  // A function no stack holds: empty sides.
  CHECK(BuildSandwich(stacks, "nothing").callers.nodes[0].total == 0);
}

}  // namespace kiln::storage
