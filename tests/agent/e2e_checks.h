#pragma once
// What the agent's end-to-end tests share: pass/fail lines, folding `perf
// script` output (the oracle) and `kiln export` text, and stack measures.
// Test-only.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln::agent::testing {

extern int g_failures;

// Prints "  ok  what" or "  FAIL what" (and counts the failure).
void Check(bool ok, const std::string& what);
// Prints "SKIP: why" and returns 77 (ctest's skip code).
int Skip(const std::string& why);

// 0 when this host can run kiln-agent (root, the kernel's BTF), else
// Skip's 77 saying what is missing.
int AgentPrerequisites();

// The end of an agent test: "PASS" and `dir` removed, or "FAIL (N failed
// checks)" and `dir` kept for a look; the test's exit code.
int Verdict(const std::string& dir);

// Waits for kiln-agent (`agent`, its stdout in `out_path`, stderr in
// `err_path`) to say it samples: 0 when it does. Otherwise it is killed and
// the test's exit code comes back: 77 (skipped, saying why) when this host
// cannot sample (no root, no BTF, perf events refused), else 1.
int AwaitAgentStart(int agent, const std::string& out_path, const std::string& err_path);

// `perf script -F comm,pid,tid,ip,sym,dso` text -> "label;root;...;leaf" ->
// count, for one pid. Kernel frames end in "_[k]"; a frame's inlined
// functions are folded into it (the agent reports real frames only).
// With `inline_lines` false (for `perf script --no-inline` output) frames
// with the same address stay apart: a recursion's return addresses repeat.
std::map<std::string, std::int64_t> FoldPerfScript(const std::string& text, long long pid,
                                                   const std::string& comm_label, bool inline_lines = true);
// "a;b;c 12" lines -> map.
std::map<std::string, std::int64_t> ParseFolded(const std::string& text);
std::int64_t EventsWith(const std::map<std::string, std::int64_t>& folded, const std::string& prefix,
                        const std::string& needle);
void PrintTop(const std::map<std::string, std::int64_t>& folded, const std::string& prefix, int limit);

// A folded stack's frames, "exe" first: "a;b;c" -> {a, b, c}.
std::vector<std::string> SplitFolded(const std::string& folded_stack);
// "12.3%" for 0.123.
std::string Percent(double share);

// Frames after the label ("exe;") that are not kernel frames ("_[k]").
int UserFrames(const std::string& folded_stack);

// How complete the user stacks of `prefix`'s folded samples are: the share
// that contain `root_frame` (";name;" somewhere), and the median number of
// user (non-"_[k]") frames below the label.
struct StackDepth {
  std::int64_t samples = 0;
  double reaching_root = 0;
  double median_user_depth = 0;
};
StackDepth MeasureDepth(const std::map<std::string, std::int64_t>& folded, const std::string& prefix,
                        const std::string& root_frame);

}  // namespace kiln::agent::testing
