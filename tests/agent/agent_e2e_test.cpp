// End-to-end test of kiln-agent against a real gRPC receiver on loopback.
//
// Needs root, BPF and perf (CI has them); otherwise prints why and exits 77,
// which ctest reports as skipped. Phases, all in one run:
//   1. split_workload (frame pointers, main->run_workload->dispatch->leaf_heavy
//      / leaf_light at 3:1 CPU) under `perf record -F 99 -g -e cpu-clock`,
//      while the agent samples at 99 Hz: chains, split and counts from both;
//   2. kernel_workload (reads /dev/zero) and short_workload (exits before the
//      agent's next report) side by side;
//   3. SIGINT: the agent flushes its last batch and exits 0.
// The receiver refuses the first call with UNAVAILABLE, so the retry path runs.
// With KILN_E2E_RECEIVER=kiln the receiver is `kiln --headless` instead and the
// folded stacks come from `kiln export` (see agent_kiln_e2e in CMakeLists).

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "otlp_inspect.h"
#include "process_runner.h"
#include "test_receiver.h"

using namespace kiln::agent::testing;

namespace {

constexpr int kFrequency = 99;
constexpr double kSplitSeconds = 5.0;

int g_failures = 0;

void Check(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "  ok  " : "  FAIL", what.c_str());
  if (!ok) ++g_failures;
}

int Skip(const std::string& why) {
  std::printf("SKIP: %s\n", why.c_str());
  return 77;
}

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

// `perf script` text -> "comm;root;...;leaf" -> count, for one pid.
std::map<std::string, std::int64_t> FoldPerfScript(const std::string& text, long long pid,
                                                   const std::string& comm_label) {
  std::map<std::string, std::int64_t> out;
  std::istringstream in(text);
  std::string line;
  bool in_sample = false, ours = false;
  std::vector<std::string> frames;
  auto finish = [&] {
    if (in_sample && ours) {
      std::string folded = comm_label;
      for (auto it = frames.rbegin(); it != frames.rend(); ++it) folded += ";" + *it;
      out[folded]++;
    }
    in_sample = false;
    frames.clear();
  };
  while (std::getline(in, line)) {
    if (line.empty()) {
      finish();
      continue;
    }
    if (line[0] != '\t' && line[0] != ' ') {
      finish();
      in_sample = true;
      std::size_t slash = line.find('/');
      std::size_t start = line.rfind(' ', slash);
      ours = slash != std::string::npos && std::atoll(line.c_str() + start + 1) == pid;
      continue;
    }
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    if (line[0] == ' ' && !in_sample) continue;
    // "\t    7f12 leaf_heavy (/path)": skip the address, keep the symbol.
    std::istringstream f(line);
    std::string address, symbol, dso;
    f >> address >> symbol;
    std::getline(f, dso);
    if (symbol.find('+') != std::string::npos) symbol = symbol.substr(0, symbol.find('+'));
    if (dso.find("kernel.kallsyms") != std::string::npos) symbol += "_[k]";
    frames.push_back(symbol);
  }
  finish();
  return out;
}

void PrintTop(const std::map<std::string, std::int64_t>& folded, const std::string& prefix, int limit) {
  std::vector<std::pair<std::int64_t, std::string>> rows;
  for (const auto& [s, n] : folded)
    if (s.rfind(prefix, 0) == 0) rows.push_back({n, s});
  std::sort(rows.rbegin(), rows.rend());
  for (int i = 0; i < limit && i < static_cast<int>(rows.size()); ++i)
    std::printf("      %6lld %s\n", static_cast<long long>(rows[static_cast<std::size_t>(i)].first),
                rows[static_cast<std::size_t>(i)].second.c_str());
}

}  // namespace

int main() {
  if (geteuid() != 0) return Skip("needs root (BPF programs and perf events)");
  if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) return Skip("kernel has no BTF");
  const std::string dir = MakeTempDir("kiln-agent-e2e-");
  std::printf("kiln-agent e2e: work dir %s\n", dir.c_str());

  TestReceiver receiver;
  receiver.FailNextCalls(1);
  const std::string agent_out = dir + "/agent.out", agent_err = dir + "/agent.err";
  pid_t agent = Spawn({KILN_AGENT_PATH, "-collection-agent", receiver.address(), "-disable-tls",
                       "-samples-per-second", std::to_string(kFrequency), "-reporter-interval=2s"},
                      agent_out, agent_err);
  if (!WaitForText(agent_out, "sampling CPUs", 15000)) {
    kill(agent, SIGKILL);
    WaitExit(agent);
    std::string err = ReadFile(agent_err);
    if (err.find("needs root") != std::string::npos || err.find("BTF") != std::string::npos ||
        err.find("refused") != std::string::npos || err.find("perf_event_open") != std::string::npos)
      return Skip("kiln-agent cannot sample here: " + err);
    std::printf("kiln-agent did not start:\n%s\n", err.c_str());
    return 1;
  }

  // Phase 1: the split workload under perf and the agent at once.
  const std::string perf_data = dir + "/perf.data", split_out = dir + "/split.out";
  bool have_perf = access("/usr/bin/perf", X_OK) == 0;
  pid_t split = have_perf ? Spawn({"perf", "record", "-q", "-F", std::to_string(kFrequency), "-g", "-e",
                                   "cpu-clock", "-o", perf_data, "--", SPLIT_WORKLOAD_PATH,
                                   std::to_string(kSplitSeconds)},
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

  std::printf("agent stdout:\n%s\nagent stderr:\n%s\n", ReadFile(agent_out).c_str(), ReadFile(agent_err).c_str());
  Check(split_rc == 0, "split workload ran (rc " + std::to_string(split_rc) + ")");
  Check(agent_rc == 0, "agent exited 0 after SIGINT (rc " + std::to_string(agent_rc) + ")");

  std::vector<ExportRequest> requests = receiver.requests();
  Check(!requests.empty(), "receiver got " + std::to_string(requests.size()) + " requests");
  Check(receiver.calls() > static_cast<int>(requests.size()), "agent retried after UNAVAILABLE");
  std::size_t problems = 0;
  for (const ExportRequest& r : requests)
    for (const std::string& p : CheckExportRequest(r)) {
      if (problems++ < 10) std::printf("      dictionary: %s\n", p.c_str());
    }
  Check(problems == 0, "every request obeys the dictionary rules (index 0 empty, indices in range)");

  FoldedProfile profile = FoldRequests(requests);
  Check(profile.periods == std::set<std::int64_t>{1000000000 / kFrequency}, "period is 1e9/frequency");

  // --- split workload ---------------------------------------------------------
  const std::string split_text = ReadFile(split_out);
  long long split_pid = ValueAfter(split_text, "pid");
  double split_cpu = DoubleAfter(split_text, "cpu_seconds");
  auto proc_it = profile.processes.find(split_pid);
  Check(proc_it != profile.processes.end(), "split_workload (pid " + std::to_string(split_pid) + ") reported");
  if (proc_it != profile.processes.end()) {
    const ProcessSummary& p = proc_it->second;
    Check(p.executable_name == "split_workload", "process.executable.name = " + p.executable_name);
    Check(p.executable_path.ends_with("/split_workload"), "process.executable.path = " + p.executable_path);
    Check(!p.host_name.empty(), "host.name = " + p.host_name);
    Check(p.thread_names.count("split-aux") == 1, "thread.name split-aux seen");
    Check(p.thread_ids.size() >= 2 && p.thread_ids.count(split_pid) == 1, "thread.id: main thread and aux thread");
    Check(!p.htlhashes.empty() && (*p.htlhashes.begin()).size() == 32, "mappings carry a 32-hex htlhash");
    std::string prefix = "split_workload";
    StackShare agent_share = ShareOf(profile.stacks, prefix);
    double expected = split_cpu * kFrequency;
    std::int64_t main_events = p.events_by_thread_name.count("split_workload") ? p.events_by_thread_name.at("split_workload") : 0;
    std::printf("    agent: %lld main-thread events, expected %.0f (%.2f CPU s x %d Hz); heavy %lld light %lld\n",
                static_cast<long long>(main_events), expected, split_cpu, kFrequency,
                static_cast<long long>(agent_share.heavy), static_cast<long long>(agent_share.light));
    PrintTop(profile.stacks, prefix, 6);
    Check(agent_share.full_chain_heavy, "chain main;run_workload;dispatch;leaf_heavy");
    Check(agent_share.full_chain_light, "chain main;run_workload;dispatch;leaf_light");
    double agent_ratio = agent_share.heavy + agent_share.light > 0
                             ? double(agent_share.heavy) / double(agent_share.heavy + agent_share.light) : 0;
    Check(std::fabs(agent_ratio - 0.75) < 0.05, "leaf_heavy share " + std::to_string(agent_ratio) + " ~ 0.75");
    Check(std::fabs(main_events - expected) <= 0.1 * expected + 3,
          "main-thread events within 10% of frequency x CPU seconds");

    if (have_perf) {
      std::string script_out = dir + "/perf.txt";
      pid_t ps = Spawn({"perf", "script", "-i", perf_data, "-F", "comm,pid,tid,ip,sym,dso"}, script_out,
                       dir + "/perf-script.err");
      WaitExit(ps);
      auto perf_folded = FoldPerfScript(ReadFile(script_out), split_pid, prefix);
      StackShare perf_share = ShareOf(perf_folded, prefix);
      double perf_ratio = perf_share.heavy + perf_share.light > 0
                              ? double(perf_share.heavy) / double(perf_share.heavy + perf_share.light) : 0;
      std::printf("    perf:  %lld events; heavy %lld light %lld (share %.3f; agent %.3f)\n",
                  static_cast<long long>(perf_share.total), static_cast<long long>(perf_share.heavy),
                  static_cast<long long>(perf_share.light), perf_ratio, agent_ratio);
      PrintTop(perf_folded, prefix, 6);
      Check(perf_share.full_chain_heavy, "perf sees the same chain to leaf_heavy");
      Check(std::fabs(perf_ratio - agent_ratio) < 0.05, "agent and perf agree on the split within 5 points");
      Check(std::fabs(double(perf_share.total) - double(agent_share.total)) <= 0.15 * double(perf_share.total) + 5,
            "agent and perf event counts within 15% (" + std::to_string(agent_share.total) + " vs " +
                std::to_string(perf_share.total) + ")");
    }
  }

  // --- kernel workload ---------------------------------------------------------
  long long kernel_pid = ValueAfter(ReadFile(kernel_out), "pid");
  std::int64_t kernel_total = 0, with_kernel = 0, under_syscall = 0;
  for (const auto& [stack, n] : profile.stacks) {
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
  std::printf("    kernel_workload (pid %lld): %lld events, %lld with kernel frames, %lld under syscall entry\n",
              kernel_pid, static_cast<long long>(kernel_total), static_cast<long long>(with_kernel),
              static_cast<long long>(under_syscall));
  PrintTop(profile.stacks, "kernel_workload", 4);
  Check(profile.processes.count(kernel_pid) == 1, "kernel_workload reported");
  Check(kernel_total > 0 && with_kernel * 2 > kernel_total, "most kernel_workload samples have kernel frames");
  Check(under_syscall * 2 > kernel_total, "read_zero under the syscall entry, under main");
  if (profile.processes.count(kernel_pid))
    Check(profile.processes.at(kernel_pid).frame_types.count("kernel") == 1 &&
              profile.processes.at(kernel_pid).frame_types.count("native") == 1,
          "profile.frame.type kernel and native");

  // --- short-lived process -----------------------------------------------------
  long long short_pid = ValueAfter(ReadFile(short_out), "pid");
  auto short_it = profile.processes.find(short_pid);
  std::int64_t short_events = short_it == profile.processes.end() ? 0 : short_it->second.events;
  bool short_chain = false;
  for (const auto& [stack, n] : profile.stacks)
    if (stack.rfind("short_workload;", 0) == 0 && stack.find("main;short_leaf") != std::string::npos) short_chain = true;
  Check(short_events >= kFrequency / 2, "exited process still reported (" + std::to_string(short_events) + " events)");
  Check(short_chain, "exited process has its user frames (main;short_leaf)");

  std::printf("%s (%d failed checks); files in %s\n", g_failures == 0 ? "PASS" : "FAIL", g_failures, dir.c_str());
  return g_failures == 0 ? 0 : 1;
}
