// kiln-agent stage 3a end to end: Python frames, interleaved with native ones.
//
// Needs root, BPF and Debian 12's python3.11 (CI has them); otherwise prints
// why and exits 77. One agent at 199 Hz sends to a test receiver while
//   1. python3.11 runs a known chain, outer -> middle x21 -> leaf_a or leaf_b
//      (3:1), and, in a thread started 2 s late, late_worker -> via_sorted ->
//      sorted (C) -> key_fn -> leaf_c: the chain in order under the
//      interpreter's native frames (Py_RunMain ... main), the split, every
//      frame's file and line where the script has them (the script itself
//      marks the lines: the interpreter runs exactly those), a C frame
//      between via_sorted and key_fn, and the late thread named;
//      sid's 3.13 runs it once more with -X perf (each call also through a
//      perf-map trampoline): still each call once;
//   2. the same interpreter under a name of a version kiln-agent has no
//      layout for (python3.9): reported once with the reason, its samples
//      keep their native frames, and the agent goes on.

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "e2e_checks.h"
#include "otlp_inspect.h"
#include "process_runner.h"
#include "test_receiver.h"

using namespace kiln::agent::testing;

namespace {

constexpr int kFrequency = 199;

// Lines the interpreter runs in the hot paths end in "# @NAME" markers.
const char* kChainPy = R"(import sys, threading, time

def leaf_a(n):
    x = 0
    for i in range(n):  # @leaf_a_for
        x = (x * 31 + i) % 1000003  # @leaf_a_body
    return x  # @leaf_a_return

def leaf_b(n):
    x = 0
    for i in range(n):  # @leaf_b_for
        x = (x * 17 + i) % 1000033  # @leaf_b_body
    return x  # @leaf_b_return

def middle(depth, n, which):
    if depth == 0:
        return leaf_a(n) if which else leaf_b(n)  # @middle_leaf
    return middle(depth - 1, n, which) + 1  # @middle_recurse

def outer(seconds):
    end = time.time() + seconds
    i = s = 0
    while time.time() < end:
        s += middle(20, 3000, i % 4 != 3)  # @outer_call
        i += 1
    return s

def leaf_c(v):
    x = v
    for i in range(300):  # @leaf_c_for
        x = (x * 13 + i) % 1000037  # @leaf_c_body
    return x  # @leaf_c_return

def key_fn(v):
    return leaf_c(v)  # @key_fn_call

def via_sorted(seconds):
    end = time.time() + seconds
    while time.time() < end:
        sorted(range(500), key=key_fn)  # @via_sorted_call

def late_worker(seconds):
    via_sorted(seconds)  # @late_call

print("pid=%d" % __import__("os").getpid(), flush=True)
seconds = float(sys.argv[1])
# Busy before the chain: the agent loads the process and its tables on its
# first samples, which are walked without them.
warm_up = time.time() + 1
while time.time() < warm_up:
    pass
late = threading.Timer(2.0, late_worker, args=(seconds - 2.5,))
late.start()
outer(seconds)
late.join()
)";

// The functions of the script's chain (the others run in other samples).
const std::set<std::string> kChainFunctions = {"<module>", "outer", "middle", "leaf_a", "leaf_b",
                                               "leaf_c", "key_fn", "via_sorted", "late_worker"};

// Hostile memory: Debian's 3.11 turns its own frame chain into a loop for
// 2 s (spin's caller's `previous` pointed back at spin, through ctypes:
// PyFrameObject.f_frame at 24, _PyInterpreterFrame.previous at 48), then
// mends it and exits normally.
const char* kLoopPy = R"(import ctypes, os, sys, time
def warm(seconds):
    end = time.time() + seconds
    while time.time() < end:
        pass
def spin(seconds):
    me = sys._getframe()
    caller = me.f_back
    mine = ctypes.c_void_p.from_address(id(me) + 24).value
    theirs = ctypes.c_void_p.from_address(id(caller) + 24).value
    previous = ctypes.c_void_p.from_address(theirs + 48)
    saved = previous.value
    previous.value = mine
    end = time.time() + seconds
    while time.time() < end:
        pass
    previous.value = saved
def mid(seconds):
    spin(seconds)
print("pid=%d" % os.getpid(), flush=True)
warm(1.5)
mid(2.0)
print("mended", flush=True)
)";

std::map<std::string, int> Markers(const std::string& script) {
  std::map<std::string, int> lines;
  std::istringstream in(script);
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    auto at = line.find("# @");
    if (at != std::string::npos) lines[line.substr(at + 3)] = n;
  }
  return lines;
}

// The lines of `function`'s body in the script: from its def to its last
// indented line.
std::pair<int, int> FunctionLines(const std::string& script, const std::string& function) {
  std::istringstream in(script);
  int n = 0, first = 0, last = 0;
  for (std::string text; std::getline(in, text);) {
    ++n;
    if (first == 0) {
      if (text.rfind("def " + function + "(", 0) == 0) first = last = n;
    } else if (!text.empty() && text[0] == ' ') {
      last = n;
    } else if (!text.empty()) {
      break;  // the next top-level statement
    }
  }
  return {first, last};
}

// One interpreter to run the chain under: how to start it, and where it
// sees the script.
struct Interpreter {
  std::string label;  // its executable's name, as the samples are folded
  std::vector<std::string> argv;
  std::string script;  // the script's path as the process sees it
  bool required = true;
  // Run with -X perf: where the interpreter's frames were not read (a
  // thread's first samples, before its state is known) the perf map's
  // trampolines name the calls, without lines.
  bool trampolines = false;
};

struct ChainResult {
  int exit_code = -1;
  std::string err;
};

// The chain's checks for one interpreter's samples.
void CheckChain(const FoldedProfile& profile, const Interpreter& in, const std::map<std::string, int>& line) {
  std::printf("\n  --- %s (%s)\n", in.label.c_str(), in.argv.front().c_str());
  std::map<std::string, std::int64_t> cut_short;  // leaf samples not down to Py_RunMain
  std::int64_t total = 0, in_leaf = 0, chain = 0, to_main = 0, leaf_a = 0, leaf_b = 0, sorted_samples = 0,
               c_between = 0, late = 0;
  for (const auto& [stack, n] : profile.stacks) {
    if (stack.rfind(in.label + ";", 0) != 0) continue;
    total += n;
    std::vector<std::string> f = SplitFolded(stack);
    auto at = [&](const std::string& name) {
      return static_cast<std::size_t>(std::find(f.begin(), f.end(), name) - f.begin());
    };
    const std::size_t a = at("leaf_a"), b = at("leaf_b");
    if (a < f.size() || b < f.size()) {
      in_leaf += n;
      (a < f.size() ? leaf_a : leaf_b) += n;
      // Root first, the script's frames are exactly <module>, outer, middle
      // x21 and the leaf. 3.10 calls each Python function through C
      // (_PyEval_Vector), so native frames may sit between them.
      std::vector<std::string> py;
      for (const std::string& name : f)
        if (kChainFunctions.count(name)) py.push_back(name);
      bool ok = py.size() == 24 && py[0] == "<module>" && py[1] == "outer" && (py[23] == "leaf_a" || py[23] == "leaf_b");
      for (std::size_t i = 2; ok && i < 23; ++i) ok = py[i] == "middle";
      if (ok) chain += n;
      const std::size_t m = at("<module>");
      if (ok && std::find(f.begin(), f.begin() + static_cast<long>(m), "Py_RunMain") != f.begin() + static_cast<long>(m))
        to_main += n;
      else
        cut_short[stack] += n;
    }
    const std::size_t vs = at("via_sorted"), kf = at("key_fn");
    if (vs < f.size() && kf < f.size() && vs < kf) {
      sorted_samples += n;
      // sorted() is C: the interpreter's native frames sit between them.
      if (kf > vs + 1) c_between += n;
    }
    if (at("late_worker") < f.size()) late += n;
  }
  const double whole = in_leaf ? double(chain) / double(in_leaf) : 0;
  std::printf("    %lld samples, %lld in leaf_a/leaf_b (%lld:%lld), %s of those <module> > outer > middle x21 > leaf, "
              "%lld of them below Py_RunMain; %lld via sorted (%lld with C frames between via_sorted and key_fn); "
              "%lld in the late thread\n",
              (long long)total, (long long)in_leaf, (long long)leaf_a, (long long)leaf_b, Percent(whole).c_str(),
              (long long)to_main, (long long)sorted_samples, (long long)c_between, (long long)late);
  PrintTop(profile.stacks, in.label, 2);
  if (!cut_short.empty()) {
    std::printf("    leaf samples not down to Py_RunMain, the most common:\n");
    PrintTop(cut_short, in.label, 2);
  }
  const std::string v = in.label + ": ";
  Check(in_leaf > 250, v + "sampled in its leaves");
  Check(whole >= 0.95, v + "<module> > outer > middle x21 > leaf in order in " + Percent(whole) + " of leaf samples");
  Check(in_leaf > 0 && double(to_main) / double(in_leaf) >= 0.9,
        v + "the Python frames sit on the interpreter's native frames, down to Py_RunMain");
  const double split = leaf_b ? double(leaf_a) / double(leaf_b) : 0;
  Check(split > 2.0 && split < 4.5, v + "leaf_a:leaf_b is 3:1 (" + std::to_string(split) + ")");
  Check(late > 50, v + "the thread started late is read (late_worker)");
  // Not every one: a sample taken while sorted() enters or leaves the
  // key function can catch the interpreter between its two frame records
  // (1 of 338 such samples in one run of python3.13m, 2026-11-29).
  Check(sorted_samples > 50 && c_between * 100 >= sorted_samples * 99,
        v + "Python > sorted (C) > Python: native frames between via_sorted and key_fn in 99 % of such samples");
  // Files and lines: every place a function was seen at is a line of its
  // body in the script, and the line a caller waits on (the call) or the
  // loop's body is among them.
  auto places_ok = [&](const std::string& function, const std::string& marker) {
    const auto [first, last] = FunctionLines(kChainPy, function);
    const auto it = profile.places.find(in.label + ";" + function);
    bool ok = it != profile.places.end() && first > 0;
    std::string seen;
    if (ok)
      for (const std::string& p : it->second) {
        seen += " " + p;
        const auto colon = p.rfind(':');
        const int n = std::atoi(p.c_str() + colon + 1);
        if (in.trampolines && n == 0 && p.substr(0, colon) == in.script) continue;
        if (p.substr(0, colon) != in.script || n < first || n > last) ok = false;
      }
    ok = ok && it->second.count(in.script + ":" + std::to_string(line.at(marker))) == 1;
    Check(ok, v + function + " at lines of its own in the script, line " + std::to_string(line.at(marker)) +
                  " among them:" + seen);
  };
  places_ok("leaf_a", "leaf_a_body");
  places_ok("leaf_b", "leaf_b_body");
  places_ok("middle", "middle_recurse");
  places_ok("outer", "outer_call");
  places_ok("key_fn", "key_fn_call");
  places_ok("via_sorted", "via_sorted_call");
  bool typed = false;
  for (const auto& [pid, summary] : profile.processes)
    if (summary.executable_names.count(in.label)) typed = typed || summary.frame_types.count("cpython") == 1;
  Check(typed, v + "the Python frames are typed cpython");
}

}  // namespace

int main() {
  if (int rc = AgentPrerequisites(); rc != 0) return rc;
  const std::string python = "/usr/bin/python3.11";
  if (access(python.c_str(), X_OK) != 0) return Skip("python3.11 (Debian 12's python3) is not installed");
  const std::string dir = MakeTempDir("kiln-agent-python-");
  std::printf("kiln-agent Python e2e: work dir %s\n", dir.c_str());
  const std::string script = dir + "/chain.py";
  std::ofstream(script) << kChainPy;
  const std::map<std::string, int> line = Markers(kChainPy);

  // The interpreters: Debian 12's 3.11; sid's 3.13, 3.14 and 3.15 in a
  // root of their own, started in new mount and pid namespaces (a
  // container: files through /proc/PID/root, thread ids of its own); and,
  // where pyenv put them, 3.10 and 3.12 (a shared libpython).
  std::vector<Interpreter> interpreters = {{"python3.11", {python, script, "6"}, script}};
  const std::string sid = KILN_SID_ROOT;
  const bool have_sid = access((sid + "/.complete").c_str(), F_OK) == 0;
  Check(have_sid, "the sid root with python3.13-3.15 is there (" + sid + ", built by the sid_root fixture)");
  if (have_sid) {
    std::ofstream(sid + "/tmp/kiln-chain.py") << kChainPy;
    for (const char* v : {"3.13", "3.14", "3.15"})
      interpreters.push_back({std::string("python") + v,
                              {"unshare", "--mount", "--pid", "--fork", "chroot", sid, std::string("/usr/bin/python") + v,
                               "/tmp/kiln-chain.py", "6"},
                              "/tmp/kiln-chain.py"});
    // 3.13 again with -X perf: each Python call also goes through a
    // trampoline named in /tmp/perf-1.map (pid 1 in its namespace). The
    // chain must still be each call once. A copy under a name of its own
    // (the suffix is the old ABI mark, same version) folds its samples apart.
    std::filesystem::copy_file(sid + "/usr/bin/python3.13", sid + "/usr/local/bin/python3.13m",
                               std::filesystem::copy_options::overwrite_existing);
    interpreters.push_back({"python3.13m",
                            {"unshare", "--mount", "--pid", "--fork", "chroot", sid, "/usr/local/bin/python3.13m", "-X",
                             "perf", "/tmp/kiln-chain.py", "6"},
                            "/tmp/kiln-chain.py", true, true});
  }
  for (const char* v : {"3.10.13", "3.12.1"}) {
    std::string exe = std::string("/root/.pyenv/versions/") + v + "/bin/python" + std::string(v).substr(0, 4);
    if (access(exe.c_str(), X_OK) == 0)
      interpreters.push_back({"python" + std::string(v).substr(0, 4), {exe, script, "6"}, script, false});
    else
      std::printf("  (pyenv's %s is not on this machine: not run)\n", v);
  }

  TestReceiver receiver;
  const std::string agent_out = dir + "/agent.out", agent_err = dir + "/agent.err";
  pid_t agent = Spawn({KILN_AGENT_PATH, "-collection-agent", receiver.address(), "-disable-tls",
                       "-samples-per-second", std::to_string(kFrequency), "-reporter-interval=1s"},
                      agent_out, agent_err);
  if (int rc = AwaitAgentStart(agent, agent_out, agent_err); rc != 0) return rc;

  // 1. The chain and the late thread, one interpreter after the other.
  std::vector<ChainResult> results;
  for (const Interpreter& in : interpreters) {
    const std::string err = dir + "/" + in.label + ".err";
    ChainResult r;
    r.exit_code = WaitExit(Spawn(in.argv, dir + "/" + in.label + ".out", err));
    r.err = ReadFile(err);
    results.push_back(r);
  }
  // 3. A frame chain that loops (Debian's 3.11; its samples told apart by
  //    pid).
  const std::string looper = python;
  const std::string loop_script = dir + "/loop.py";
  std::ofstream(loop_script) << kLoopPy;
  const int loop_rc = WaitExit(Spawn({looper, loop_script}, dir + "/loop.out", dir + "/loop.err"));
  // 2. A version without a layout: 3.11's interpreter under another name.
  const std::string old = dir + "/python3.9";
  std::filesystem::copy_file(python, old);
  std::filesystem::permissions(old, std::filesystem::perms::owner_exec, std::filesystem::perm_options::add);
  const int old_rc = WaitExit(Spawn({old, script, "4"}, dir + "/old.out", dir + "/old.err"));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  kill(agent, SIGINT);
  const int agent_rc = WaitExit(agent);
  const std::string out = ReadFile(agent_out);
  std::printf("agent stdout, its last Python lines:\n");
  std::vector<std::string> python_lines;
  for (std::size_t at = 0; (at = out.find("Python", at)) != std::string::npos;) {
    std::size_t begin = out.rfind('\n', at) + 1, end = out.find('\n', at);
    python_lines.push_back(out.substr(begin, end - begin));
    at = end;
  }
  for (std::size_t i = python_lines.size() > 3 ? python_lines.size() - 3 : 0; i < python_lines.size(); ++i)
    std::printf("  %s\n", python_lines[i].c_str());
  Check(agent_rc == 0, "agent exited 0 after SIGINT");
  Check(old_rc == 0, "the renamed interpreter ran: " + ReadFile(dir + "/old.err"));

  FoldedProfile profile = FoldRequests(receiver.requests());
  for (std::size_t i = 0; i < interpreters.size(); ++i) {
    Check(results[i].exit_code == 0, interpreters[i].label + " ran the chain: " + results[i].err);
    CheckChain(profile, interpreters[i], line);
  }
  if (have_sid) {
    // The -X perf run's trampolines were found in its perf map (through
    // /proc/PID/root, under its namespace's pid) and left out as the same
    // calls: CheckChain saw each call once.
    Check(out.find("Python -X perf trampolines left out") != std::string::npos,
          "python3.13m -X perf: its perf map's trampolines are merged with the interpreter's frames");
    for (const auto& e : std::filesystem::directory_iterator(sid + "/tmp"))
      if (e.path().filename().string().rfind("perf-", 0) == 0) std::filesystem::remove(e.path());
  }

  // Every interpreter exits with samples not yet named, and tears down (its
  // code objects freed, their memory reused) before it is gone: those
  // samples keep the names their code objects were read with. Before, 1.3-2.3 %
  // of frames were left bare addresses (4 % of one run's <module> frames).
  {
    const std::size_t at = out.rfind(" named, ");
    const long long named = at == std::string::npos ? 0 : std::atoll(out.c_str() + out.rfind(' ', at - 1) + 1);
    const long long earlier = at == std::string::npos ? 0 : std::atoll(out.c_str() + at + 8);
    const std::size_t u = out.find("from an earlier read", at);
    const std::size_t u_at = u == std::string::npos ? u : out.find("), ", u);
    const long long unreadable = u_at == std::string::npos ? -1 : std::atoll(out.c_str() + u_at + 3);
    std::printf("    Python frames named %lld, %lld of them from an earlier read; %lld code objects unreadable\n", named,
                earlier, unreadable);
    Check(earlier > 0 && unreadable >= 0 && unreadable * 200 < named,
          "samples named after their process tore down keep their names (under 0.5 % of frames unreadable)");
  }

  // --- 2. a version without a layout ---------------------------------------------
  std::printf("\n  --- python3.9 (3.11's interpreter renamed)\n");
  Check(out.find("Python not read in") != std::string::npos &&
            out.find("python3.9 (3.9): CPython 3.9: no layout known for this version") != std::string::npos,
        "python3.9 is reported with the reason");
  std::int64_t old_total = 0, old_native = 0, old_python = 0;
  for (const auto& [stack, n] : profile.stacks) {
    if (stack.rfind("python3.9;", 0) != 0) continue;
    old_total += n;
    if (stack.find(";_PyEval_EvalFrameDefault") != std::string::npos) old_native += n;
    if (stack.find(";leaf_") != std::string::npos) old_python += n;
  }
  std::printf("    %lld samples, %lld with the native eval loop, %lld with Python frames\n", (long long)old_total,
              (long long)old_native, (long long)old_python);
  Check(old_total > 200 && old_native > old_total / 2 && old_python == 0,
        "its samples keep their native frames, and no Python frames are made up");

  // --- 3. a frame chain that loops --------------------------------------------------
  std::printf("\n  --- python3.11 with its frame chain made a loop for 2 s\n");
  const std::string loop_out = ReadFile(dir + "/loop.out");
  Check(loop_rc == 0 && loop_out.find("mended") != std::string::npos,
        "the interpreter looped its chain, mended it and exited: " + ReadFile(dir + "/loop.err"));
  Check(out.find("python3.11 (3.11): its frame chain loops") != std::string::npos,
        "the process is refused, with the reason, in the report");
  long long loops = 0;
  if (std::size_t at = out.rfind(" frame chains that loop"); at != std::string::npos) {
    std::size_t begin = out.rfind(' ', at - 1);
    loops = std::atoll(out.c_str() + begin + 1);
  }
  Check(loops > 0, "the report counts frame chains that loop (" + std::to_string(loops) + ")");
  std::int64_t warm = 0, looped = 0, after = 0;
  const auto by_pid = profile.stacks_by_pid.find(ValueAfter(loop_out, "pid"));
  if (by_pid != profile.stacks_by_pid.end())
    for (const auto& [stack, n] : by_pid->second) {
      if (stack.find(";warm") != std::string::npos)
        warm += n;
      else if (stack.find(";spin") != std::string::npos || stack.find(";mid") != std::string::npos)
        looped += n;
      else
        after += n;
    }
  std::printf("    %lld samples in warm (Python frames read), %lld in the loop with Python frames (before the "
              "refusal took effect), %lld with native frames only\n",
              (long long)warm, (long long)looped, (long long)after);
  Check(warm > 100, "before the loop its Python frames were read");
  Check(after > 200 && looped * 10 < after, "after the refusal its samples keep their native frames");
  return Verdict(dir);
}
