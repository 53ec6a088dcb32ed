// kiln-agent stage 3b end to end: a host that maps more code than the unwind
// table holds.
//
// Needs root and BPF (CI has them); otherwise prints why and exits 77. The
// agent runs with a table of 700,000 rows, half of it taken by the code
// the agent and the test themselves run (gRPC, OpenSSL, protobuf: 350,000
// rows). Eight distinct copies of python3.11 (65,000 rows each, 520,000
// together) each run for 0.5 s in turn and then sleep, mapped; then two
// more copies run busy for 5 s, one of the sleepers wakes up for 3 s; last,
// a ninth copy maps libLLVM (1.3 M rows, more than the whole table). What a
// user relies on:
//   - the busy processes get whole stacks (to main) as python3.11 does on a
//     quiet host (99 %): the rows of the sleepers' tables go to them;
//   - the sleeper that wakes gets whole stacks again (its table is built
//     again);
//   - the report says what was evicted, what was built again and what was
//     refused, and why (libLLVM: larger than the whole table).
// Before, the table filled with the sleepers' rows, the busy copies were
// refused ("unwind_rows full", only with -verbose) and their stacks ended
// at the first frame without rows.

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "e2e_checks.h"
#include "otlp_inspect.h"
#include "process_runner.h"
#include "test_receiver.h"

using namespace kiln::agent::testing;

namespace {

constexpr int kSleepers = 8;
constexpr const char* kLibLLVM = "/usr/lib/llvm-22/lib/libLLVM.so.1";

// argv: role seconds_busy wake_after_s. Busy in a recursive
// function (the interpreter's C frames, many deep), asleep, and once more
// busy for `role` wake.
const char* kScript = R"(
import ctypes, sys, time
role, busy, wake_after = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
def run(seconds):
    end = time.time() + seconds
    while time.time() < end:
        fib(18)
start = time.time()
run(busy)
if role == 'sleeper' or role == 'wake':
    time.sleep(max(0.0, start + wake_after - time.time()))
    if role == 'wake':
        # The thread's name says which samples are the second run.
        ctypes.CDLL(None).prctl(15, b'woken', 0, 0, 0)
        run(3)
    else:
        time.sleep(3)
)";

}  // namespace

int main() {
  if (int rc = AgentPrerequisites(); rc != 0) return rc;
  if (access("/usr/bin/python3.11", X_OK) != 0) return Skip("python3.11 is not installed");
  const std::string dir = MakeTempDir("kiln-agent-busy-");
  std::printf("kiln-agent busy host e2e: work dir %s\n", dir.c_str());
  const std::string script = dir + "/work.py";
  {
    FILE* f = std::fopen(script.c_str(), "w");
    std::fputs(kScript, f);
    std::fclose(f);
  }
  // Distinct files (their own htlhash, so their own table each).
  auto copy = [&](const std::string& name) {
    const std::string path = dir + "/" + name;
    std::filesystem::copy_file("/usr/bin/python3.11", path);
    // Files are known by their htlhash (head, tail, size): a plain copy
    // would share python3.11's table; a few bytes more at the end make it
    // a file of its own.
    FILE* f = std::fopen(path.c_str(), "ab");
    std::fputs(name.c_str(), f);
    std::fclose(f);
    return path;
  };

  TestReceiver receiver;
  const std::string agent_out = dir + "/agent.out", agent_err = dir + "/agent.err";
  pid_t agent = Spawn({KILN_AGENT_PATH, "-collection-agent", receiver.address(), "-disable-tls",
                       "-samples-per-second", "199", "-reporter-interval=1s", "-unwind-table-rows", "700000"},
                      agent_out, agent_err);
  if (int rc = AwaitAgentStart(agent, agent_out, agent_err); rc != 0) return rc;

  // Sleepers, one a second: each busy 0.5 s, then asleep (mapped) until
  // 10 s after the first started; py_sleeper0 then runs 3 s more.
  std::vector<pid_t> pids;
  for (int i = 0; i < kSleepers; ++i) {
    const std::string name = "py_sleeper" + std::to_string(i);
    const double wake_after = 10.0 - 1.0 * i;
    pids.push_back(Spawn({copy(name), script, i == 0 ? "wake" : "sleeper", "0.5", std::to_string(wake_after)},
                         dir + "/" + name + ".out", dir + "/" + name + ".err"));
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  }
  // The busy ones.
  std::vector<pid_t> busy;
  for (int i = 0; i < 2; ++i) {
    const std::string name = "py_busy" + std::to_string(i);
    busy.push_back(Spawn({copy(name), script, "busy", "5", "0"}, dir + "/" + name + ".out", dir + "/" + name + ".err"));
  }
  int failed_children = 0;
  for (pid_t p : busy) failed_children += WaitExit(p) != 0;
  for (pid_t p : pids) failed_children += WaitExit(p) != 0;
  // Last, alone (its libraries, libz3's 390,000 rows among them, would
  // crowd the others out): a process that maps libLLVM.
  const bool have_llvm = access(kLibLLVM, R_OK) == 0;
  if (have_llvm)
    failed_children += WaitExit(Spawn({"env", std::string("LD_PRELOAD=") + kLibLLVM, copy("py_llvm"), script, "busy",
                                       "2", "0"},
                                      dir + "/py_llvm.out", dir + "/py_llvm.err")) != 0;
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  // The agent's memory at its peak, with the table full and evicting.
  const std::string status = ReadFile("/proc/" + std::to_string(agent) + "/status");
  const std::size_t hwm = status.find("VmHWM:");
  const long long agent_peak_kb = hwm == std::string::npos ? -1 : std::atoll(status.c_str() + hwm + 6);
  kill(agent, SIGINT);
  const int agent_rc = WaitExit(agent);
  const std::string out = ReadFile(agent_out);
  std::printf("agent's last report:\n");
  {
    std::size_t last = out.rfind("kiln-agent: final:");
    std::printf("%s\n", last == std::string::npos ? out.c_str() : out.substr(last).c_str());
  }
  Check(agent_rc == 0, "agent exited 0 after SIGINT");
  std::printf("    kiln-agent's peak RSS: %.1f MB (VmHWM)\n", agent_peak_kb / 1024.0);
  Check(failed_children == 0, "every workload ran");
  Check(have_llvm, std::string("libLLVM is there to be refused (") + kLibLLVM + ", llvm-22-dev)");

  FoldedProfile profile = FoldRequests(receiver.requests());
  std::printf("\n    | process | samples | reaching main |\n    |---|---|---|\n");
  auto whole = [&](const std::string& name, double at_least) {
    const bool by_thread = name.find('/') != std::string::npos;
    StackDepth d = MeasureDepth(by_thread ? profile.thread_stacks : profile.stacks, name, "__libc_start_call_main");
    std::printf("    | %s | %lld | %.1f%% |\n", name.c_str(), (long long)d.samples, 100 * d.reaching_root);
    if (d.reaching_root < at_least) {
      // Which stacks were cut, and where.
      std::map<std::string, std::int64_t> cut;
      for (const auto& [stack, n] : by_thread ? profile.thread_stacks : profile.stacks)
        if (stack.rfind(name + ";", 0) == 0 && stack.find(";__libc_start_call_main;") == std::string::npos)
          cut[stack] += n;
      PrintTop(cut, name, 5);
    }
    Check(d.samples > 200 && d.reaching_root >= at_least,
          name + ": whole stacks in " + std::to_string(100 * d.reaching_root) + "% of " + std::to_string(d.samples) +
              " samples");
  };
  whole("py_busy0", 0.9);
  whole("py_busy1", 0.9);
  // After its table was given to others and built again when it woke (the
  // samples until the table is in walk with frame pointers).
  whole("py_sleeper0/woken", 0.9);

  // The report says what happened to the table, in the default output.
  const std::size_t at = out.rfind("tables of idle processes evicted ");
  Check(at != std::string::npos, "the report counts evicted tables");
  if (at != std::string::npos) {
    const long long evicted = std::atoll(out.c_str() + at + std::string("tables of idle processes evicted ").size());
    const std::size_t again = out.find("(", at);
    const long long rebuilt = again == std::string::npos ? 0 : std::atoll(out.c_str() + again + 1);
    std::printf("    evicted %lld times, built again %lld\n", evicted, rebuilt);
    Check(evicted >= 1, "idle processes' tables gave their rows up");
    Check(rebuilt >= 1, "the sleeper's table was built again when it woke");
  }
  Check(out.find("files refused: 1 larger than all of unwind_rows (raise -unwind-table-rows)") != std::string::npos,
        "libLLVM is refused in the default report, with the reason");

  return Verdict(dir);
}
