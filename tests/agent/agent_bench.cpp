// kiln-agent overhead benchmark (prints figures; not a test).
//
// With every CPU kept busy by nofp_workload (built without frame pointers,
// a 14-frame chain through a shared library: every sample is unwound from
// CFI), runs kiln-agent at 20 Hz and at 99 Hz against an in-process receiver
// and measures, after a warm-up:
//   - agent CPU: on-CPU time of all its threads (/proc/PID/task/*/schedstat)
//   - BPF CPU: run_time_ns of its programs (kernel.bpf_stats_enabled=1),
//     the CFI walker included
//   - RSS (VmRSS and peak VmHWM), and the unwind tables it loaded
// then, over the same span, `perf record -a -g` and `perf record -a
// --call-graph dwarf` (perf's own CPU and RSS while recording, plus the CPU
// of `perf script` unwinding what it recorded, which is where perf's DWARF
// unwinding happens; its in-kernel sampling cost is not attributable and so
// not included). Figures are percent of one CPU per profiled CPU, the unit
// of the budget (<= 0.3 % at 20 Hz with CFI unwinding, <= 60 MB RSS).
// Last, the time and memory to build the unwind tables of large binaries.
//
// Usage: agent_bench [SECONDS per run, default 30]. Needs root.

#include <bpf/bpf.h>
#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "process_runner.h"
#include "test_receiver.h"

using namespace kiln::agent::testing;

namespace {

std::uint64_t TaskCpuNs(pid_t pid) {
  std::uint64_t total = 0;
  std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = opendir(dir.c_str());
  if (!d) return 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream in(dir + "/" + e->d_name + "/schedstat");
    std::uint64_t ns = 0;
    if (in >> ns) total += ns;
  }
  closedir(d);
  return total;
}

long StatusKb(pid_t pid, const char* key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) return std::atol(line.c_str() + std::strlen(key) + 1);
  return -1;
}

// Sum of run_time_ns over loaded BPF programs with kiln-agent's names;
// `samples` (if given) gets on_cpu_sample's run count.
std::uint64_t AgentBpfRunNs(std::uint64_t* samples = nullptr) {
  std::uint64_t total = 0;
  if (samples) *samples = 0;
  __u32 id = 0;
  while (bpf_prog_get_next_id(id, &id) == 0) {
    int fd = bpf_prog_get_fd_by_id(id);
    if (fd < 0) continue;
    bpf_prog_info info{};
    __u32 len = sizeof(info);
    if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0) {
      // Names are cut to 15 characters (BPF_OBJ_NAME_LEN).
      std::string name = info.name;
      for (std::string ours : {"on_cpu_sample", "unwind_user", "unwind_user_offcpu", "on_sched_switch",
                               "on_process_exec", "on_process_exit"})
        if (name == ours.substr(0, 15)) {
          total += info.run_time_ns;
          if (samples && ours == "on_cpu_sample") *samples += info.run_cnt;
          break;
        }
    }
    close(fd);
  }
  return total;
}

void WriteProc(const char* path, const char* value) {
  std::ofstream out(path);
  out << value;
}

std::string ReadProc(const char* path) {
  std::ifstream in(path);
  std::string v;
  in >> v;
  return v;
}

struct Figures {
  double process_pct_per_cpu = 0;
  double bpf_pct_per_cpu = 0;
  double script_pct_per_cpu = 0;  // perf script's unwinding, per profiled CPU and second recorded
  long rss_kb = 0;
  long hwm_kb = 0;
  double bpf_us_per_sample = 0;  // BPF time per cpu-clock sample, walker included
  std::string tables;  // the agent's last "stacks:" line
};

std::uint64_t ChildrenCpuNs() {
  rusage ru{};
  getrusage(RUSAGE_CHILDREN, &ru);
  return static_cast<std::uint64_t>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ULL +
         static_cast<std::uint64_t>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ULL;
}

Figures MeasureAgent(int hz, int seconds, int cpus, const std::string& receiver, const std::string& dir,
                     bool symbolize, const std::string& off_cpu) {
  std::vector<std::string> argv = {KILN_AGENT_PATH, "-collection-agent=" + receiver, "-disable-tls",
                                   "-samples-per-second=" + std::to_string(hz), "-reporter-interval=5s"};
  if (!symbolize) argv.push_back("-no-symbolize");
  if (!off_cpu.empty()) argv.push_back("-off-cpu-threshold=" + off_cpu);
  pid_t agent = Spawn(argv, dir + "/agent-" + std::to_string(hz) + ".out",
                      dir + "/agent-" + std::to_string(hz) + ".err");
  WaitForText(dir + "/agent-" + std::to_string(hz) + ".out", "sampling CPUs", 15000);
  std::this_thread::sleep_for(std::chrono::seconds(6));  // warm-up: kallsyms, first files, first report
  std::uint64_t n0 = 0, n1 = 0;
  std::uint64_t cpu0 = TaskCpuNs(agent), bpf0 = AgentBpfRunNs(&n0);
  auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  std::uint64_t cpu1 = TaskCpuNs(agent), bpf1 = AgentBpfRunNs(&n1);
  double wall_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  Figures f;
  f.rss_kb = StatusKb(agent, "VmRSS:");
  f.hwm_kb = StatusKb(agent, "VmHWM:");
  f.process_pct_per_cpu = 100.0 * double(cpu1 - cpu0) / wall_ns / cpus;
  f.bpf_pct_per_cpu = 100.0 * double(bpf1 - bpf0) / wall_ns / cpus;
  if (n1 > n0) f.bpf_us_per_sample = double(bpf1 - bpf0) / double(n1 - n0) / 1000.0;
  kill(agent, SIGINT);
  WaitExit(agent);
  std::string out = ReadFile(dir + "/agent-" + std::to_string(hz) + ".out");
  if (std::size_t at = out.rfind("stacks: "); at != std::string::npos)
    f.tables = out.substr(at, out.find('\n', at) - at);
  return f;
}

Figures MeasurePerf(int hz, int seconds, int cpus, const std::string& dir, bool dwarf) {
  std::string data = dir + "/perf-" + std::to_string(hz) + ".data";
  std::vector<std::string> argv = {"perf", "record", "-q", "-a"};
  if (dwarf) {
    argv.insert(argv.end(), {"--call-graph", "dwarf"});
  } else {
    argv.push_back("-g");
  }
  argv.insert(argv.end(), {"-e", "cpu-clock", "-F", std::to_string(hz), "-o", data});
  pid_t perf = Spawn(argv, dir + "/perf.out", dir + "/perf.err");
  std::this_thread::sleep_for(std::chrono::seconds(2));
  std::uint64_t cpu0 = TaskCpuNs(perf);
  auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  std::uint64_t cpu1 = TaskCpuNs(perf);
  double wall_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  Figures f;
  f.rss_kb = StatusKb(perf, "VmRSS:");
  f.hwm_kb = StatusKb(perf, "VmHWM:");
  f.process_pct_per_cpu = 100.0 * double(cpu1 - cpu0) / wall_ns / cpus;
  kill(perf, SIGINT);
  WaitExit(perf);
  // perf unwinds DWARF stacks when the recording is read: count that too.
  std::uint64_t before = ChildrenCpuNs();
  pid_t script = Spawn({"perf", "script", "-i", data}, "/dev/null", dir + "/perf-script.err");
  WaitExit(script);
  f.script_pct_per_cpu = 100.0 * double(ChildrenCpuNs() - before) / wall_ns / cpus;
  unlink(data.c_str());
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  if (geteuid() != 0) {
    std::printf("agent_bench needs root (BPF, perf events, kernel.bpf_stats_enabled)\n");
    return 77;
  }
  int seconds = argc > 1 ? std::atoi(argv[1]) : 30;
  int cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  std::string dir = MakeTempDir("kiln-agent-bench-");

  // Every CPU busy, as on a loaded server: the agent then samples real stacks
  // on every tick instead of skipping idle ones.
  std::vector<pid_t> spinners;
  for (int i = 0; i < cpus; ++i) spinners.push_back(Spawn({NOFP_WORKLOAD_PATH, "100000"}, "/dev/null"));

  std::string old_stats = ReadProc("/proc/sys/kernel/bpf_stats_enabled");
  WriteProc("/proc/sys/kernel/bpf_stats_enabled", "1");
  TestReceiver receiver;

  utsname u{};
  uname(&u);
  std::string model;
  {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("model name", 0) == 0) {
        model = line.substr(line.find(':') + 2);
        break;
      }
  }
  std::printf("kiln-agent overhead, %d s per run after warm-up, all %d CPUs busy\n", seconds, cpus);
  std::printf("machine: %s, %d CPUs, Linux %s\n", model.c_str(), cpus, u.release);
  double load[3] = {};
  getloadavg(load, 3);
  std::printf("load average at start: %.2f (other work on the machine is sampled too)\n\n", load[0]);
  std::printf("%-34s %4s %14s %14s %14s %10s %10s\n", "profiler", "Hz", "process %/CPU", "BPF|script %/CPU",
              "total %/CPU", "RSS MB", "peak MB");
  std::vector<std::string> tables;
  std::vector<std::pair<std::string, double>> per_sample;
  for (int hz : {20, 99}) {
    for (int variant = 0; variant < (hz == 20 ? 3 : 1); ++variant) {
      bool symbolize = variant != 1;
      std::string off_cpu = variant == 2 ? "0.01" : "";
      Figures a = MeasureAgent(hz, seconds, cpus, receiver.address(), dir, symbolize, off_cpu);
      std::string name = variant == 0 ? "kiln-agent" : variant == 1 ? "kiln-agent -no-symbolize"
                                                                      : "kiln-agent -off-cpu-threshold 0.01";
      std::printf("%-34s %4d %14.3f %14.3f %14.3f %10.1f %10.1f\n", name.c_str(), hz, a.process_pct_per_cpu,
                  a.bpf_pct_per_cpu, a.process_pct_per_cpu + a.bpf_pct_per_cpu, a.rss_kb / 1024.0,
                  a.hwm_kb / 1024.0);
      tables.push_back(name + " " + std::to_string(hz) + " Hz: " + a.tables);
      if (variant == 0) per_sample.push_back({"native (nofp_workload) at " + std::to_string(hz) + " Hz", a.bpf_us_per_sample});
      std::fflush(stdout);
    }
    for (bool dwarf : {false, true}) {
      Figures p = MeasurePerf(hz, seconds, cpus, dir, dwarf);
      std::printf("%-34s %4d %14.3f %14.3f %14.3f %10.1f %10.1f\n",
                  dwarf ? "perf record -a --call-graph dwarf" : "perf record -a -g", hz, p.process_pct_per_cpu,
                  p.script_pct_per_cpu, p.process_pct_per_cpu + p.script_pct_per_cpu, p.rss_kb / 1024.0,
                  p.hwm_kb / 1024.0);
      std::fflush(stdout);
    }
  }
  std::printf("\nreceiver got %zu requests; budget: <= 0.3 %%/CPU at 20 Hz, <= 60 MB RSS\n",
              receiver.requests().size());
  for (pid_t s : spinners) {
    kill(s, SIGKILL);
    WaitExit(s);
  }
  spinners.clear();

  // Every CPU busy in Python (Debian's python3.11): each sample walks the
  // native frames and a chain of 23 Python frames (stage 3a). Budget:
  // <= 0.5 % of a CPU per profiled CPU at 20 Hz.
  if (access("/usr/bin/python3.11", X_OK) == 0) {
    const char* chain =
        "def leaf(n):\n"
        "    x = 0\n"
        "    for i in range(n):\n"
        "        x = (x * 31 + i) % 1000003\n"
        "    return x\n"
        "def middle(d, n):\n"
        "    return leaf(n) if d == 0 else middle(d - 1, n) + 1\n"
        "while True:\n"
        "    middle(20, 3000)\n";
    for (int i = 0; i < cpus; ++i) spinners.push_back(Spawn({"/usr/bin/python3.11", "-c", chain}, "/dev/null"));
    Figures a = MeasureAgent(20, seconds, cpus, receiver.address(), dir, true, "");
    std::printf("%-34s %4d %14.3f %14.3f %14.3f %10.1f %10.1f\n", "kiln-agent, every CPU in Python", 20,
                a.process_pct_per_cpu, a.bpf_pct_per_cpu, a.process_pct_per_cpu + a.bpf_pct_per_cpu,
                a.rss_kb / 1024.0, a.hwm_kb / 1024.0);
    per_sample.push_back({"Python (python3.11, 23 Python frames) at 20 Hz", a.bpf_us_per_sample});
    tables.push_back("kiln-agent, every CPU in Python 20 Hz: " + a.tables);
    for (pid_t s : spinners) {
      kill(s, SIGKILL);
      WaitExit(s);
    }
    std::printf("budget in Python: <= 0.5 %%/CPU at 20 Hz\n");
  }
  std::printf("\nBPF time per sample (the walker included):\n");
  for (const auto& [what, us] : per_sample) std::printf("  %-50s %6.2f us\n", what.c_str(), us);

  // Unwind tables of large binaries, built as the agent builds them.
  for (const std::string& t : tables) std::printf("  %s\n", t.c_str());
  std::printf("\nunwind table build (libdw), one file at a time:\n");
  for (const char* path : {"/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/python3.11",
                           "/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus", "/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1",
                           "/usr/lib/x86_64-linux-gnu/libLLVM.so.22.1"}) {
    if (access(path, R_OK) != 0) continue;
    pid_t dump = Spawn({UNWIND_DUMP_PATH, path}, dir + "/dump.out", dir + "/dump.err");
    WaitExit(dump);
    std::printf("  %-46s %6.1f MB  %s", path, std::filesystem::file_size(path) / 1e6, ReadFile(dir + "/dump.out").c_str());
  }

  WriteProc("/proc/sys/kernel/bpf_stats_enabled", old_stats.c_str());
  std::filesystem::remove_all(dir);
  return 0;
}
