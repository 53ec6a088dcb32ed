// kiln-agent stage 3b end to end: JIT frames walked and named from perf maps.
//
// Needs root, BPF, perf and node (CI has them); otherwise prints why and
// exits 77. One agent at 199 Hz sends to a test receiver while
//   1. node --perf-basic-prof --interpreted-frames-native-stack runs a known
//      chain, outer -> middle x8 -> leafWork, and `perf record -g` (frame
//      pointers, naming from the same /tmp/perf-PID.map) records it too: the
//      JavaScript functions must appear in that order under node's native
//      frames, the stack must go on below them to main, as often as perf's,
//      typed v8js with the file and line;
//   2. a node whose /tmp/perf-PID.map is garbage (written before it exec'd
//      node without --perf-basic-prof): refused with the reason, its stacks
//      still walked through the JIT frames (unnamed) to main, and the agent
//      goes on;
//   3. a Go program built stripped (-ldflags='-s -w', as Go is shipped):
//      every frame named from Go's line table, runtime.main > main.main >
//      main.middle x6 > main.leaf (go tool addr2line is the oracle for the
//      names in symbols_go_test);
//   4. a JVM (OpenJDK 17, -XX:+PreserveFramePointer) running a known chain,
//      Chain.outer -> Chain.middle x8 -> Chain.leafWork, its perf map
//      written by `jcmd PID Compiler.perfmap` once the chain is compiled,
//      and `perf record -g` recording it at the same time: the Java methods
//      in perf's order under the launcher's JavaMain, on to start_thread as
//      often as perf's walk, typed jvm, named without return type or
//      arguments.

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
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

const char* kChainJs = R"(
'use strict';
function leafWork(n) {
  let x = 0;
  for (let i = 0; i < n; i++) x = (x * 31 + i) % 1000003;
  return x;
}
function middle(depth, n) {
  if (depth === 0) return leafWork(n);
  return middle(depth - 1, n) + 1;
}
function outer(seconds) {
  let s = 0;
  const end = Date.now() + seconds * 1000;
  while (Date.now() < end) s += middle(7, 20000);
  return s;
}
console.log('pid=' + process.pid);
console.log('sum=' + outer(Number(process.argv[2])));
)";

// perf's "JS:*leafWork" (the first word of V8's perf map name) -> "leafWork";
// written apart from the agent's parser, as an oracle should be.
std::string PerfJsName(const std::string& symbol) {
  for (const char* prefix : {"JS:", "LazyCompile:", "Function:"}) {
    if (symbol.rfind(prefix, 0) != 0) continue;
    std::string name = symbol.substr(std::string(prefix).size());
    if (!name.empty() && std::string("~^+*").find(name[0]) != std::string::npos) name.erase(0, 1);
    return name;
  }
  return symbol;
}

// Of the samples in leafWork: those whose JavaScript frames, root first,
// are outer, middle (as many as the optimizer left: TurboFan inlines some
// of the recursion), leafWork, with only V8's frames between them; and of
// those, the ones that go on below node's main. `chains` counts each
// sequence of JavaScript frames seen.
struct JsChain {
  std::int64_t in_leaf = 0, whole_chain = 0, to_main = 0;
  std::map<std::string, std::int64_t> chains;
};

JsChain CountJsChain(const std::map<std::string, std::int64_t>& folded, const std::string& prefix, bool perf_names) {
  JsChain c;
  for (const auto& [stack, n] : folded) {
    if (stack.rfind(prefix + ";", 0) != 0) continue;
    std::vector<std::string> js;
    bool main_seen = false;
    for (const std::string& f : SplitFolded(stack)) {
      const std::string name = perf_names ? PerfJsName(f) : f;
      if (name == "outer" || name == "middle" || name == "leafWork") js.push_back(name);
      if (name == "__libc_start_call_main") main_seen = true;
    }
    if (js.empty() || js.back() != "leafWork") continue;
    c.in_leaf += n;
    std::string chain;
    for (const std::string& f : js) chain += (chain.empty() ? "" : ">") + f;
    c.chains[chain] += n;
    const bool shape = js.size() >= 3 && js.front() == "outer" &&
                       std::all_of(js.begin() + 1, js.end() - 1, [](const std::string& f) { return f == "middle"; });
    if (shape) {
      c.whole_chain += n;
      if (main_seen) c.to_main += n;
    }
  }
  return c;
}

const char* kChainJava = R"(
public class Chain {
  static long leafWork(long n) {
    long x = 0;
    for (long i = 0; i < n; i++) x = (x * 31 + i) % 1000003;
    return x;
  }
  static long middle(int depth, long n) {
    if (depth == 0) return leafWork(n);
    return middle(depth - 1, n) + 1;
  }
  static long outer(double seconds) {
    long s = 0;
    long end = System.currentTimeMillis() + (long) (seconds * 1000);
    while (System.currentTimeMillis() < end) s += middle(7, 20000);
    return s;
  }
  public static void main(String[] args) {
    System.out.println("pid=" + ProcessHandle.current().pid());
    System.out.println("sum=" + outer(Double.parseDouble(args[0])));
  }
}
)";

// Of a process's samples in Chain.leafWork: those whose Java frames, root
// first, are Chain.outer (when not inlined), Chain.middle at least once
// (C2 inlines some of the recursion) and Chain.leafWork; and of those, the
// ones that reach the launcher's JavaMain and start_thread below them.
// `java_name` turns a frame into "Chain.middle" or "".
template <typename JavaName>
JsChain CountJavaChain(const std::map<std::string, std::int64_t>& folded, const std::string& prefix,
                       JavaName java_name) {
  JsChain c;
  for (const auto& [stack, n] : folded) {
    if (stack.rfind(prefix + ";", 0) != 0) continue;
    std::vector<std::string> java;
    bool launcher = false, thread = false;
    for (const std::string& f : SplitFolded(stack)) {
      const std::string name = java_name(f);
      if (!name.empty()) java.push_back(name);
      if (f == "JavaMain") launcher = true;
      if (f == "start_thread") thread = true;
    }
    if (java.empty() || java.back() != "Chain.leafWork") continue;
    c.in_leaf += n;
    std::string chain;
    for (const std::string& f : java) chain += (chain.empty() ? "" : ">") + f;
    c.chains[chain] += n;
    std::size_t first_middle = java.front() == "Chain.outer" ? 1 : 0;
    const bool shape = java.size() >= first_middle + 2 &&
                       std::all_of(java.begin() + static_cast<long>(first_middle), java.end() - 1,
                                   [](const std::string& f) { return f == "Chain.middle"; });
    if (shape) {
      c.whole_chain += n;
      if (launcher && thread) c.to_main += n;
    }
  }
  return c;
}

// perf script's frames, one per line: "\t7f12... long Chain.middle(int, long)
// (/tmp/perf-1234.map)". The symbol holds spaces, so FoldPerfScript (first
// word) does not fit; folded here with the whole symbol, apart from the
// agent's parser.
std::map<std::string, std::int64_t> FoldPerfScriptWhole(const std::string& text, long long pid,
                                                        const std::string& label) {
  std::map<std::string, std::int64_t> out;
  std::istringstream in(text);
  std::vector<std::string> frames;
  bool ours = false;
  auto finish = [&] {
    if (ours && !frames.empty()) {
      std::string folded = label;
      for (auto it = frames.rbegin(); it != frames.rend(); ++it) folded += ";" + *it;
      out[folded]++;
    }
    frames.clear();
    ours = false;
  };
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) {
      finish();
      continue;
    }
    if (line[0] != '\t' && line[0] != ' ') {
      finish();
      std::istringstream head(line);
      std::string comm, pid_tid;
      head >> comm >> pid_tid;
      ours = std::atoll(pid_tid.c_str()) == pid;
      continue;
    }
    const std::size_t start = line.find_first_not_of(" \t");
    const std::size_t symbol = line.find(' ', start);
    const std::size_t dso = line.rfind(" (");
    if (symbol == std::string::npos || dso == std::string::npos || dso <= symbol) continue;
    std::string name = line.substr(symbol + 1, dso - symbol - 1);
    if (const std::size_t plus = name.rfind("+0x"); plus != std::string::npos) name.erase(plus);
    frames.push_back(name);
  }
  finish();
  return out;
}

// "long Chain.middle(int, long)" (perf, from the JVM's perf map) ->
// "Chain.middle"; the agent's frames are "Chain.middle" already.
std::string JavaMethod(const std::string& frame) {
  for (const char* m : {"Chain.outer", "Chain.middle", "Chain.leafWork"}) {
    const std::string method = m;
    if (frame == method || frame.find(" " + method + "(") != std::string::npos) return method;
  }
  return "";
}

std::string MostCommon(const std::map<std::string, std::int64_t>& counts) {
  std::string best;
  std::int64_t most = -1;
  for (const auto& [k, n] : counts)
    if (n > most) best = k, most = n;
  return best;
}

// The agent's chain against perf's on the same process: a table of both,
// then what both runtimes must show: the whole chain on to the thread's
// root in 90 % of leaf samples, as often as perf, the same frames in the
// same order.
void CompareWithPerf(const std::string& table_head, const std::string& what, const JsChain& a, const JsChain& p) {
  auto share = [](std::int64_t part, std::int64_t all) { return all ? double(part) / double(all) : 0.0; };
  std::printf("\n    | %s |\n    |---|---|---|---|\n"
              "    | kiln-agent | %lld | %s | %s |\n"
              "    | perf -g (frame pointers) | %lld | %s | %s |\n",
              table_head.c_str(), (long long)a.in_leaf, Percent(share(a.whole_chain, a.in_leaf)).c_str(),
              Percent(share(a.to_main, a.in_leaf)).c_str(), (long long)p.in_leaf,
              Percent(share(p.whole_chain, p.in_leaf)).c_str(), Percent(share(p.to_main, p.in_leaf)).c_str());
  const double a_whole = share(a.to_main, a.in_leaf), p_whole = share(p.to_main, p.in_leaf);
  Check(a_whole >= 0.9, what + " in " + Percent(a_whole) + " of leaf samples");
  Check(a_whole >= p_whole - 0.05, "as often as perf's frame-pointer walk (" + Percent(p_whole) + ")");
  const std::string a_chain = MostCommon(a.chains), p_chain = MostCommon(p.chains);
  std::printf("    most common chain: kiln-agent %s, perf %s\n", a_chain.c_str(), p_chain.c_str());
  Check(!a_chain.empty() && a_chain == p_chain, "the same frames as perf's, in the same order");
}

}  // namespace

int main() {
  if (int rc = AgentPrerequisites(); rc != 0) return rc;
  if (access("/usr/bin/perf", X_OK) != 0) return Skip("perf (linux-perf) is the oracle and is not installed");
  if (access("/usr/bin/node", X_OK) != 0) return Skip("node (nodejs) is not installed");
  const std::string dir = MakeTempDir("kiln-agent-jit-");
  std::printf("kiln-agent JIT e2e: work dir %s\n", dir.c_str());
  const std::string script = dir + "/chain.js";
  std::ofstream(script) << kChainJs;

  TestReceiver receiver;
  const std::string agent_out = dir + "/agent.out", agent_err = dir + "/agent.err";
  pid_t agent = Spawn({KILN_AGENT_PATH, "-collection-agent", receiver.address(), "-disable-tls",
                       "-samples-per-second", std::to_string(kFrequency), "-reporter-interval=1s", "-verbose"},
                      agent_out, agent_err);
  if (int rc = AwaitAgentStart(agent, agent_out, agent_err); rc != 0) return rc;

  // 1. The known chain, and perf recording it by frame pointers at once.
  const std::string node_out = dir + "/node.out";
  // In the work dir: V8 writes an isolate log into its working directory.
  pid_t node = Spawn({"env", "-C", dir, "/usr/bin/node", "--perf-basic-prof", "--interpreted-frames-native-stack",
                      script, "7"},
                     node_out, dir + "/node.err");
  // Past start-up and tier-up: the chain's code is optimized by then.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const std::string perf_data = dir + "/node.perf.data";
  pid_t perf = Spawn({"perf", "record", "-q", "-g", "-F", "99", "-e", "cpu-clock", "-p", std::to_string(node), "-o",
                      perf_data, "--", "sleep", "4"},
                     dir + "/perf.out", dir + "/perf.err");
  WaitExit(perf);
  const std::string perf_text_path = dir + "/node.perf.txt";
  pid_t script_run = Spawn({"perf", "script", "--no-inline", "-i", perf_data, "-F", "comm,pid,tid,ip,sym,dso"},
                           perf_text_path,
                           dir + "/perf-script.err");
  WaitExit(script_run);
  const int node_rc = WaitExit(node);

  // 2. Garbage where the perf map would be: the shell's pid is node's. A
  //    copy of node, so its samples fold under a name of their own.
  const std::string bad_node = dir + "/nodebad";
  std::filesystem::copy_file("/usr/bin/node", bad_node);
  std::filesystem::permissions(bad_node, std::filesystem::perms::owner_exec, std::filesystem::perm_options::add);
  const std::string bad_out = dir + "/bad.out";
  pid_t bad = Spawn({"env", "-C", dir, "sh", "-c",
                     "i=0; while [ $i -lt 200 ]; do echo \"garbage line $i\"; i=$((i+1)); done > /tmp/perf-$$.map; "
                     "exec '" + bad_node + "' '" + script + "' 3"},
                    bad_out, dir + "/bad.err");
  const int bad_rc = WaitExit(bad);

  // 3. Go as it is shipped: built here with -ldflags='-s -w' (no .symtab,
  //    no DWARF), in a private Go environment.
  const std::string go_dir = dir + "/go";
  std::filesystem::create_directories(go_dir + "/cache");
  const std::string gostripped = go_dir + "/gostripped";
  const bool have_go = access("/usr/bin/go", X_OK) == 0;
  int go_rc = -1;
  if (have_go) {
    const int built = WaitExit(Spawn({"env", "HOME=" + go_dir, "GOCACHE=" + go_dir + "/cache", "GOPROXY=off",
                                      "GO111MODULE=off", "GOFLAGS=", "/usr/bin/go", "build", "-ldflags=-s -w", "-o",
                                      gostripped, KILN_GO_CHAIN_SOURCE},
                                     go_dir + "/build.out", go_dir + "/build.err"));
    if (built == 0) go_rc = WaitExit(Spawn({gostripped, "3"}, go_dir + "/run.out", go_dir + "/run.err"));
  }

  // 4. A JVM running the Java chain, perf recording it too.
  const bool have_java = access("/usr/bin/java", X_OK) == 0 && access("/usr/bin/javac", X_OK) == 0 &&
                         access("/usr/bin/jcmd", X_OK) == 0;
  const std::string java_dir = dir + "/java";
  std::filesystem::create_directories(java_dir);
  std::ofstream(java_dir + "/Chain.java") << kChainJava;
  int java_rc = -1, jcmd_rc = -1;
  long long java_pid = 0;
  const std::string java_perf_text = java_dir + "/java.perf.txt";
  if (have_java &&
      WaitExit(Spawn({"/usr/bin/javac", "-d", java_dir, java_dir + "/Chain.java"}, java_dir + "/javac.out",
                     java_dir + "/javac.err")) == 0) {
    const std::string java_out = java_dir + "/java.out";
    pid_t java = Spawn({"/usr/bin/java", "-XX:+PreserveFramePointer", "-cp", java_dir, "Chain", "7"}, java_out,
                       java_dir + "/java.err");
    // C2 compiles the chain within a second or two; the perf map is a
    // snapshot of the code cache when jcmd asks, so ask once it is there.
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    jcmd_rc = WaitExit(Spawn({"/usr/bin/jcmd", std::to_string(java), "Compiler.perfmap"}, java_dir + "/jcmd.out",
                             java_dir + "/jcmd.err"));
    const std::string java_perf_data = java_dir + "/java.perf.data";
    WaitExit(Spawn({"perf", "record", "-q", "-g", "-F", "99", "-e", "cpu-clock", "-p", std::to_string(java), "-o",
                    java_perf_data, "--", "sleep", "3"},
                   java_dir + "/perf.out", java_dir + "/perf.err"));
    WaitExit(Spawn({"perf", "script", "--no-inline", "-i", java_perf_data, "-F", "comm,pid,tid,ip,sym,dso"},
                   java_perf_text, java_dir + "/perf-script.err"));
    java_rc = WaitExit(java);
    java_pid = ValueAfter(ReadFile(java_out), "pid");
  }

  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  kill(agent, SIGINT);
  const int agent_rc = WaitExit(agent);
  const std::string out = ReadFile(agent_out);
  std::printf("agent stdout, its JIT lines:\n");
  for (std::size_t at = 0; (at = out.find("JIT", at)) != std::string::npos;) {
    std::size_t begin = out.rfind('\n', at) + 1, end = out.find('\n', at);
    std::printf("  %s\n", out.substr(begin, end - begin).c_str());
    at = end;
  }
  for (std::size_t at = 0; (at = out.find("perf map", at)) != std::string::npos;) {
    std::size_t begin = out.rfind('\n', at) + 1, end = out.find('\n', at);
    std::printf("  %s\n", out.substr(begin, end - begin).c_str());
    at = end;
  }
  Check(agent_rc == 0, "agent exited 0 after SIGINT");
  Check(node_rc == 0, "node ran the chain: " + ReadFile(dir + "/node.err"));
  const long long node_pid = ValueAfter(ReadFile(node_out), "pid");
  const long long bad_pid = ValueAfter(ReadFile(bad_out), "pid");

  FoldedProfile profile = FoldRequests(receiver.requests());
  const auto perf_folded = FoldPerfScript(ReadFile(perf_text_path), node_pid, "node", false);
  std::map<std::string, std::int64_t> agent_node;
  for (const auto& [stack, n] : profile.stacks)
    if (stack.rfind("node;", 0) == 0) agent_node[stack] += n;

  // --- 1. the chain against perf ------------------------------------------------
  JsChain a = CountJsChain(agent_node, "node", false);
  JsChain p = CountJsChain(perf_folded, "node", true);
  PrintTop(agent_node, "node", 3);
  PrintTop(perf_folded, "node", 3);
  Check(a.in_leaf > 300 && p.in_leaf > 100, "both sampled node in leafWork");
  CompareWithPerf("node chain.js | samples in leafWork | outer>middle..>leafWork | and on to main",
                  "outer > middle.. > leafWork, then on to main,", a, p);
  bool typed = false;
  for (const auto& [pid, summary] : profile.processes)
    if (pid == node_pid) typed = summary.frame_types.count("v8js") == 1;
  Check(typed, "the JavaScript frames are typed v8js");
  Check(out.find(" named from ") != std::string::npos, "the report counts JIT frames and the names found");

  // --- 2. a garbage perf map ------------------------------------------------------
  Check(bad_rc == 0, "node with a garbage perf map ran");
  const std::string refused = "perf-" + std::to_string(bad_pid) + ".map refused: not a perf map (200 of 200 lines";
  Check(out.find(refused) != std::string::npos, "the garbage perf map is refused, with the reason");
  // Its JIT frames are walked all the same (frame pointers), unnamed.
  std::int64_t with_jit = 0, jit_to_main = 0;
  for (const auto& [stack, n] : profile.stacks) {
    if (stack.rfind("nodebad;", 0) != 0 || stack.find(";+0x") == std::string::npos) continue;
    with_jit += n;
    if (stack.find(";__libc_start_call_main;") != std::string::npos) jit_to_main += n;
  }
  PrintTop(profile.stacks, "nodebad", 2);
  const double bad_whole = with_jit ? double(jit_to_main) / double(with_jit) : 0;
  std::printf("    nodebad: %lld samples with unnamed JIT frames, %s of them on to main\n", (long long)with_jit,
              Percent(bad_whole).c_str());
  Check(with_jit > 100 && bad_whole >= 0.9, "unnamed JIT frames are walked through to main");
  bool typed_jit = false;
  for (const auto& [pid, summary] : profile.processes)
    if (pid == bad_pid) typed_jit = summary.frame_types.count("jit") == 1;
  Check(typed_jit, "unnamed JIT frames are typed jit");
  std::filesystem::remove("/tmp/perf-" + std::to_string(node_pid) + ".map");
  std::filesystem::remove("/tmp/perf-" + std::to_string(bad_pid) + ".map");

  // --- 3. stripped Go ------------------------------------------------------------
  Check(have_go, "go (golang-go) is installed to build the stripped Go program");
  Check(go_rc == 0, "the stripped Go program was built and ran: " + ReadFile(go_dir + "/build.err"));
  {
    std::int64_t in_leaf = 0, chain = 0, named = 0, total = 0;
    const std::string want = ";runtime.main;main.main;main.middle;main.middle;main.middle;main.middle;main.middle;"
                             "main.middle;main.leaf";
    for (const auto& [stack, n] : profile.stacks) {
      if (stack.rfind("gostripped;", 0) != 0) continue;
      total += n;
      if (stack.find("gostripped+0x") == std::string::npos) named += n;
      if (stack.find(";main.leaf") == std::string::npos) continue;
      in_leaf += n;
      if (stack.find(want) != std::string::npos) chain += n;
    }
    PrintTop(profile.stacks, "gostripped", 2);
    const double share = in_leaf ? double(chain) / double(in_leaf) : 0;
    std::printf("    gostripped: %lld samples, %lld with every frame named, %lld in main.leaf, %s of those "
                "runtime.main > main.main > main.middle x6 > main.leaf\n",
                (long long)total, (long long)named, (long long)in_leaf, Percent(share).c_str());
    Check(in_leaf > 200 && share >= 0.9, "stripped Go frames are named from .gopclntab, the whole chain in order");
  }

  // --- 4. the JVM against perf --------------------------------------------------
  Check(have_java, "java, javac and jcmd (openjdk-17-jdk-headless) are installed");
  Check(java_rc == 0 && jcmd_rc == 0, "the JVM ran the chain and jcmd wrote its perf map: " +
                                          ReadFile(java_dir + "/javac.err") + ReadFile(java_dir + "/java.err") +
                                          ReadFile(java_dir + "/jcmd.out"));
  if (java_rc == 0 && jcmd_rc == 0) {
    // Samples of the java process only (its pid), as perf's are.
    std::map<std::string, std::int64_t> agent_java;
    for (const auto& [stack, n] : profile.stacks_by_pid[java_pid])
      if (stack.rfind("java;", 0) == 0) agent_java[stack] += n;
    const auto perf_java = FoldPerfScriptWhole(ReadFile(java_perf_text), java_pid, "java");
    JsChain ja = CountJavaChain(agent_java, "java", [](const std::string& f) { return JavaMethod(f); });
    JsChain jp = CountJavaChain(perf_java, "java", [](const std::string& f) { return JavaMethod(f); });
    PrintTop(agent_java, "java", 2);
    PrintTop(perf_java, "java", 2);
    Check(ja.in_leaf > 200 && jp.in_leaf > 50, "both sampled the JVM in Chain.leafWork");
    CompareWithPerf("java Chain | samples in Chain.leafWork | [outer>]middle..>leafWork | and on to start_thread",
                    "Chain.middle.. > Chain.leafWork under JavaMain, on to start_thread,", ja, jp);
    bool jvm_typed = false;
    for (const auto& [pid, summary] : profile.processes)
      if (pid == java_pid) jvm_typed = summary.frame_types.count("jvm") == 1;
    Check(jvm_typed, "the Java frames are typed jvm");
    std::filesystem::remove("/tmp/perf-" + std::to_string(java_pid) + ".map");
  }

  return Verdict(dir);
}
