// End-to-end test of kiln-agent against a real gRPC receiver on loopback.
//
// Needs root, BPF and perf (CI has them); otherwise prints why and exits 77,
// which ctest reports as skipped. Phases, all in one run:
//   1. split_workload (frame pointers, main->run_workload->dispatch->leaf_heavy
//      / leaf_light at 3:1 CPU) under `perf record -F 397 -g -e cpu-clock`,
//      while the agent samples at 397 Hz: chains, split and counts from both;
//   2. kernel_workload (reads /dev/zero) and short_workload (exits before the
//      agent's next report) side by side;
//   3. SIGINT: the agent flushes its last batch and exits 0.
// The receiver refuses the first call with UNAVAILABLE, so the retry path runs.
// With `--kiln PATH` the receiver is the real `kiln --headless` instead, and
// the stacks come back through its store with `kiln export --format folded
// --group-by process`; checks that need the raw requests are then skipped.

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
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
#include "tests/free_port.h"

using namespace kiln::agent::testing;
using kiln::testing::FreePort;

namespace {

// High enough that the 3:1 split is measured from thousands of samples
// (binomial error ~1 %), and not a divisor of the workload's 4 ms cycle.
constexpr int kFrequency = 397;
constexpr double kSplitSeconds = 5.0;

struct StackShare {
  std::int64_t total = 0;
  std::int64_t heavy = 0;  // stacks through leaf_heavy
  std::int64_t light = 0;
  bool full_chain_heavy = false;  // main;run_workload;dispatch;leaf_heavy in order
  bool full_chain_light = false;
};

StackShare ShareOf(const std::map<std::string, std::int64_t>& folded, const std::string& prefix) {
  StackShare s;
  for (const auto& [stack, n] : folded) {
    if (stack.rfind(prefix + ";", 0) != 0) continue;
    s.total += n;
    if (stack.find(";leaf_heavy") != std::string::npos) s.heavy += n;
    if (stack.find(";leaf_light") != std::string::npos) s.light += n;
    if (stack.find(";main;run_workload;dispatch;leaf_heavy") != std::string::npos) s.full_chain_heavy = true;
    if (stack.find(";main;run_workload;dispatch;leaf_light") != std::string::npos) s.full_chain_light = true;
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  std::string kiln_path;  // empty: our own test receiver
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--kiln") kiln_path = argv[i + 1];
  const bool use_kiln = !kiln_path.empty();
  if (use_kiln && access(kiln_path.c_str(), X_OK) != 0) return Skip(kiln_path + " is not built");
  if (int rc = AgentPrerequisites(); rc != 0) return rc;
  const std::string dir = MakeTempDir("kiln-agent-e2e-");
  std::printf("kiln-agent e2e: work dir %s, receiver: %s\n", dir.c_str(),
              use_kiln ? kiln_path.c_str() : "test receiver");

  TestReceiver receiver;
  receiver.FailNextCalls(1);
  std::string target = receiver.address();
  pid_t kiln = -1;
  const std::string kiln_data = dir + "/kiln-data";
  if (use_kiln) {
    target = "127.0.0.1:" + std::to_string(FreePort());
    kiln = Spawn({kiln_path, "--headless", "--listen", target, "--data-dir", kiln_data}, dir + "/kiln.out",
                 dir + "/kiln.err");
    if (!WaitForText(dir + "/kiln.out", "listening on", 20000)) {
      kill(kiln, SIGKILL);
      WaitExit(kiln);
      std::printf("kiln --headless did not start:\n%s%s\n", ReadFile(dir + "/kiln.out").c_str(),
                  ReadFile(dir + "/kiln.err").c_str());
      return 1;
    }
  }
  const std::string agent_out = dir + "/agent.out", agent_err = dir + "/agent.err";
  pid_t agent = Spawn({KILN_AGENT_PATH, "-collection-agent", target, "-disable-tls", "-samples-per-second",
                       std::to_string(kFrequency), "-reporter-interval=2s"},
                      agent_out, agent_err);
  if (int rc = AwaitAgentStart(agent, agent_out, agent_err); rc != 0) {
    if (kiln > 0) {
      kill(kiln, SIGKILL);
      WaitExit(kiln);
    }
    return rc;
  }

  // Phase 1: the split workload under perf and the agent at once.
  const std::string perf_data = dir + "/perf.data", split_out = dir + "/split.out";
  bool have_perf = access("/usr/bin/perf", X_OK) == 0;
  pid_t split =
      have_perf ? Spawn({"perf", "record", "-q", "-F", std::to_string(kFrequency), "-g", "-e", "cpu-clock",
                         "-o", perf_data, "--", SPLIT_WORKLOAD_PATH, std::to_string(kSplitSeconds)},
                        split_out, dir + "/perf.err")
                : Spawn({SPLIT_WORKLOAD_PATH, std::to_string(kSplitSeconds)}, split_out);
  int split_rc = WaitExit(split);
  // Phase 2: kernel-heavy and short-lived processes.
  const std::string kernel_out = dir + "/kernel.out", short_out = dir + "/short.out";
  pid_t kernel_wl = Spawn({KERNEL_WORKLOAD_PATH, "2.5"}, kernel_out);
  pid_t short_wl = Spawn({SHORT_WORKLOAD_PATH, "1.0"}, short_out);
  WaitExit(short_wl);
  WaitExit(kernel_wl);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // Phase 3: stop; the agent must flush and exit 0.
  kill(agent, SIGINT);
  int agent_rc = WaitExit(agent);

  std::printf("agent stdout:\n%s\nagent stderr:\n%s\n", ReadFile(agent_out).c_str(),
              ReadFile(agent_err).c_str());
  Check(split_rc == 0, "split workload ran (rc " + std::to_string(split_rc) + ")");
  Check(agent_rc == 0, "agent exited 0 after SIGINT (rc " + std::to_string(agent_rc) + ")");

  // The stacks, from the raw requests or back out of kiln's store.
  std::map<std::string, std::int64_t> folded;
  FoldedProfile profile;
  if (use_kiln) {
    kill(kiln, SIGINT);
    Check(WaitExit(kiln) == 0, "kiln --headless exited 0 after SIGINT");
    pid_t ex = Spawn({kiln_path, "export", "--data-dir", kiln_data, "--format", "folded", "--group-by",
                      "process", "--annotate"},
                     dir + "/kiln-export.txt", dir + "/kiln-export.err");
    Check(WaitExit(ex) == 0, "kiln export --format folded --group-by process");
    folded = ParseFolded(ReadFile(dir + "/kiln-export.txt"));
    Check(!folded.empty(), "kiln stored the agent's samples (" + std::to_string(folded.size()) + " stacks)");
  } else {
    std::vector<ExportRequest> requests = receiver.requests();
    Check(!requests.empty(), "receiver got " + std::to_string(requests.size()) + " requests");
    Check(receiver.calls() > static_cast<int>(requests.size()), "agent retried after UNAVAILABLE");
    std::size_t problems = 0;
    for (const ExportRequest& r : requests)
      for (const std::string& p : CheckExportRequest(r)) {
        if (problems++ < 10) std::printf("      dictionary: %s\n", p.c_str());
      }
    Check(problems == 0, "every request obeys the dictionary rules (index 0 empty, indices in range)");
    profile = FoldRequests(requests);
    folded = profile.stacks;
    Check(profile.periods == std::set<std::int64_t>{1000000000 / kFrequency}, "period is 1e9/frequency");
  }

  // --- split workload ---------------------------------------------------------
  const std::string split_text = ReadFile(split_out);
  long long split_pid = ValueAfter(split_text, "pid");
  double split_cpu = DoubleAfter(split_text, "cpu_seconds");
  const std::string prefix = "split_workload";
  if (!use_kiln) {
    auto proc_it = profile.processes.find(split_pid);
    Check(proc_it != profile.processes.end(),
          "split_workload (pid " + std::to_string(split_pid) + ") reported");
    if (proc_it != profile.processes.end()) {
      const ProcessSummary& p = proc_it->second;
      // perf forks the workload: samples of that child before its exec are
      // perf's, under a resource of their own for the same pid.
      auto join = [](const std::set<std::string>& items) {
        std::string out;
        for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
        return out;
      };
      const std::string names = join(p.executable_names);
      const std::string paths = join(p.executable_paths);
      Check(p.executable_names.count("split_workload") == 1,
            "process.executable.name includes split_workload: " + names);
      Check(std::any_of(p.executable_paths.begin(), p.executable_paths.end(),
                        [](const std::string& path) { return path.ends_with("/split_workload"); }),
            "process.executable.path includes .../split_workload: " + paths);
      Check(!p.host_name.empty(), "host.name = " + p.host_name);
      Check(p.thread_names.count("split-aux") == 1, "thread.name split-aux seen");
      Check(p.thread_ids.size() >= 2 && p.thread_ids.count(split_pid) == 1,
            "thread.id: main thread and aux thread");
      Check(!p.htlhashes.empty() && (*p.htlhashes.begin()).size() == 32, "mappings carry a 32-hex htlhash");
    }
  }
  StackShare agent_share = ShareOf(folded, prefix);
  double expected = split_cpu * kFrequency;
  std::int64_t main_events = EventsWith(folded, prefix, ";main;run_workload");
  std::printf(
      "    agent: %lld main-thread events, expected %.0f (%.2f CPU s x %d Hz); heavy %lld light %lld\n",
      static_cast<long long>(main_events), expected, split_cpu, kFrequency,
      static_cast<long long>(agent_share.heavy), static_cast<long long>(agent_share.light));
  PrintTop(folded, prefix, 6);
  Check(agent_share.full_chain_heavy, "chain main;run_workload;dispatch;leaf_heavy");
  Check(agent_share.full_chain_light, "chain main;run_workload;dispatch;leaf_light");
  double agent_ratio = agent_share.heavy + agent_share.light > 0
                           ? double(agent_share.heavy) / double(agent_share.heavy + agent_share.light)
                           : 0;
  // Sampling error of a share p from n samples is sqrt(p(1-p)/n); allow three
  // of those, and never more than 5 points.
  auto tolerance = [](std::int64_t n) {
    return std::min(0.05, std::max(0.02, 3.0 * std::sqrt(0.1875 / double(std::max<std::int64_t>(n, 1)))));
  };
  double share_tolerance = tolerance(agent_share.heavy + agent_share.light);
  Check(std::fabs(agent_ratio - 0.75) < share_tolerance, "leaf_heavy share " + std::to_string(agent_ratio) +
                                                             " ~ 0.75 (+-" + std::to_string(share_tolerance) +
                                                             ")");
  Check(std::fabs(double(main_events) - expected) <= 0.1 * expected + 3,
        "main-thread events within 10% of frequency x CPU seconds");

  if (have_perf) {
    std::string script_out = dir + "/perf.txt";
    pid_t ps = Spawn({"perf", "script", "-i", perf_data, "-F", "comm,pid,tid,ip,sym,dso"}, script_out,
                     dir + "/perf-script.err");
    WaitExit(ps);
    auto perf_folded = FoldPerfScript(ReadFile(script_out), split_pid, prefix);
    StackShare perf_share = ShareOf(perf_folded, prefix);
    double perf_ratio = perf_share.heavy + perf_share.light > 0
                            ? double(perf_share.heavy) / double(perf_share.heavy + perf_share.light)
                            : 0;
    std::printf("    perf:  %lld events; heavy %lld light %lld (share %.3f; agent %.3f)\n",
                static_cast<long long>(perf_share.total), static_cast<long long>(perf_share.heavy),
                static_cast<long long>(perf_share.light), perf_ratio, agent_ratio);
    PrintTop(perf_folded, prefix, 6);
    Check(perf_share.full_chain_heavy, "perf sees the same chain to leaf_heavy");
    double both = std::sqrt(2.0) * tolerance(std::min(perf_share.heavy + perf_share.light,
                                                      agent_share.heavy + agent_share.light));
    Check(std::fabs(perf_ratio - agent_ratio) < std::min(0.05, both),
          "agent and perf agree on the split (+-" + std::to_string(std::min(0.05, both)) + ")");
    Check(std::fabs(double(perf_share.total) - double(agent_share.total)) <=
              0.15 * double(perf_share.total) + 5,
          "agent and perf event counts within 15% (" + std::to_string(agent_share.total) + " vs " +
              std::to_string(perf_share.total) + ")");
  }

  // --- kernel workload ---------------------------------------------------------
  long long kernel_pid = ValueAfter(ReadFile(kernel_out), "pid");
  std::int64_t kernel_total = 0, with_kernel = 0, under_syscall = 0;
  for (const auto& [stack, n] : folded) {
    if (stack.rfind("kernel_workload;", 0) != 0) continue;
    kernel_total += n;
    if (stack.find("_[k]") != std::string::npos) with_kernel += n;
    // libc's read() keeps no frame pointer, so a frame-pointer walk loses
    // its caller (read_loop), as perf's does; main must still be there.
    std::size_t entry = stack.find("entry_SYSCALL_64");
    if (entry == std::string::npos) entry = stack.find("do_syscall_64_[k]");
    std::size_t user_main = stack.find(";main;");
    if (entry != std::string::npos && stack.find("read_zero_[k]", entry) != std::string::npos &&
        user_main != std::string::npos && user_main < entry)
      under_syscall += n;
  }
  std::printf(
      "    kernel_workload (pid %lld): %lld events, %lld with kernel frames, %lld under syscall entry\n",
      kernel_pid, static_cast<long long>(kernel_total), static_cast<long long>(with_kernel),
      static_cast<long long>(under_syscall));
  PrintTop(folded, "kernel_workload", 4);
  Check(kernel_total > 0, "kernel_workload reported");
  Check(kernel_total > 0 && with_kernel * 2 > kernel_total,
        "most kernel_workload samples have kernel frames");
  Check(under_syscall * 2 > kernel_total, "read_zero under the syscall entry, under main");
  if (!use_kiln && profile.processes.count(kernel_pid))
    Check(profile.processes.at(kernel_pid).frame_types.count("kernel") == 1 &&
              profile.processes.at(kernel_pid).frame_types.count("native") == 1,
          "profile.frame.type kernel and native");

  // --- short-lived process -----------------------------------------------------
  long long short_pid = ValueAfter(ReadFile(short_out), "pid");
  std::int64_t short_events = EventsWith(folded, "short_workload", "");
  if (!use_kiln)
    Check(profile.processes.count(short_pid) == 1,
          "exited process (pid " + std::to_string(short_pid) + ") has its resource");
  bool short_chain = false;
  for (const auto& [stack, n] : folded)
    if (stack.rfind("short_workload;", 0) == 0 && stack.find("main;short_leaf") != std::string::npos)
      short_chain = true;
  Check(short_events >= kFrequency / 2,
        "exited process still reported (" + std::to_string(short_events) + " events)");
  Check(short_chain, "exited process has its user frames (main;short_leaf)");

  return Verdict(dir);  // perf.data and logs are only worth keeping on failure
}
