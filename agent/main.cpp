// kiln-agent: samples every CPU with eBPF and sends OTLP profiles.
//
//   BPF (perf_event cpu-clock, per CPU) --ring buffer--> BpfSampler::Poll
//     -> SampleCollector (resolve: ProcessTracker, ExecutableCache, Symbolizer,
//                         KernelSymbols)
//     -> every reporter interval: BuildExportRequest -> OtlpExporter (thread)
//
// The main thread does everything but the gRPC calls.

#include <linux/types.h>
#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "agent_flags.h"
#include "bpf/unwind_abi.h"
#include "bpf_sampler.h"
#include "executable_cache.h"
#include "exporter.h"
#include "kernel_symbols.h"
#include "otlp_builder.h"
#include "process_tracker.h"
#include "perf_map.h"
#include "python_tracker.h"
#include "sample_collector.h"
#include "kiln_version.h"
#include "symbolizer.h"
#include "unwind_loader.h"

namespace {

using namespace kiln::agent;
using Clock = std::chrono::steady_clock;

constexpr auto kPollPeriod = std::chrono::milliseconds(200);
constexpr auto kReachableWait = std::chrono::seconds(2);
constexpr auto kFinalFlushWait = std::chrono::seconds(5);

volatile sig_atomic_t g_stop = 0;

void OnSignal(int) { g_stop = 1; }

void InstallSignalHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: epoll_wait must return EINTR
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return {};
  return buf;
}

std::string CpuListText(const std::vector<int>& cpus) {
  if (cpus.empty()) return "";
  return std::to_string(cpus.front()) + (cpus.size() > 1 ? "-" + std::to_string(cpus.back()) : "");
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  auto parsed = ParseAgentFlags(args, [](const char* name) { return std::getenv(name); });
  if (!parsed) {
    std::fprintf(stderr, "kiln-agent: %s\nRun kiln-agent -help for the flags.\n", parsed.error().c_str());
    return 2;
  }
  const AgentOptions& options = *parsed;
  if (options.show_help) {
    std::fputs(AgentUsage().c_str(), stdout);
    return 0;
  }
  if (options.show_version) {
    std::printf("kiln-agent %s\n", kiln::kVersion);
    return 0;
  }
  if (options.collection_agent.empty()) {
    std::fprintf(stderr,
                 "kiln-agent: no receiver given. Pass -collection-agent=HOST:PORT (kiln listens on\n"
                 "  11000: -collection-agent=127.0.0.1:11000 -disable-tls) or set\n"
                 "  OTEL_EXPORTER_OTLP_ENDPOINT.\n");
    return 2;
  }
  // The token and CA files are read before anything starts: a typo in a
  // path is a usage error, not a run that drops every batch.
  auto headers = ExportHeaders(options);
  auto tls_ca = ReadTlsCaFile(options);
  for (const std::string* why : {headers ? nullptr : &headers.error(), tls_ca ? nullptr : &tls_ca.error()}) {
    if (why == nullptr) continue;
    std::fprintf(stderr, "kiln-agent: %s\n", why->c_str());
    return 2;
  }
  InstallSignalHandlers();
  // Say what is missing before anything else complains about its symptoms.
  if (std::string missing = CheckSamplerPrerequisites(); !missing.empty()) {
    std::fprintf(stderr, "kiln-agent: %s\n", missing.c_str());
    return 1;
  }

  KernelSymbols kernel_symbols;
  if (auto loaded = kernel_symbols.Load(); !loaded)
    std::fprintf(stderr, "kiln-agent: kernel frames will have no names: %s\n", loaded.error().c_str());
  // Loading kallsyms churns a few MB of heap; hand it back to the system.
  malloc_trim(0);

  ExecutableCache executables;
  ProcessTracker processes(executables);
  Symbolizer symbolizer(options.symbolize);
  SampleCollector collector(processes, symbolizer, kernel_symbols, options.samples_per_second);
  PerfMaps perf_maps;
  collector.SetPerfMaps(&perf_maps);

  UnwindMapSizes map_sizes;
  map_sizes.rows = options.unwind_table_rows;
  auto started = BpfSampler::Start(
      options.samples_per_second, [&](const void* data, std::size_t size) { collector.OnRecord(data, size); },
      map_sizes, options.off_cpu_threshold);
  if (!started) {
    std::fprintf(stderr, "kiln-agent: %s\n", started.error().c_str());
    return 1;
  }
  std::unique_ptr<BpfSampler> sampler = std::move(started).value();
  if (sampler->off_cpu()) collector.SetOffCpuProbability(options.off_cpu_threshold);
  UnwindLoader unwinder(processes, sampler->unwind_maps());
  collector.SetUnwindLoader(&unwinder);
  PythonTracker python(processes, sampler->python_maps());
  collector.SetPythonTracker(&python);

  OtlpExporter exporter({.target = options.collection_agent,
                         .disable_tls = options.disable_tls,
                         .tls_ca_pem = *tls_ca,
                         .headers = *headers,
                         .max_unsent_bytes = options.max_unsent_bytes,
                         .verbose = options.verbose});
  std::printf(
      "kiln-agent %s: sampling CPUs %s at %d Hz (perf_event cpu-clock + BPF, %zu KiB ring buffer),\n"
      "  user stacks from call frame information (%u table rows, %.1f MiB of BPF maps at most)%s,\n"
      "  sending OTLP profiles to %s (%s) every %.1fs%s\n",
      kiln::kVersion, CpuListText(sampler->cpus()).c_str(), options.samples_per_second,
      sampler->ring_buffer_bytes() >> 10, sampler->unwind_maps().row_capacity,
      sampler->map_memory_bytes() / 1048576.0,
      sampler->off_cpu() ? (", off-CPU with probability " + std::to_string(options.off_cpu_threshold)).c_str()
                         : "",
      options.collection_agent.c_str(),
      (std::string(options.disable_tls ? "plain text" : "TLS") +
       (headers->empty()                                                    ? ""
        : headers->size() == 1 && headers->front().first == "authorization" ? ", with a token"
                                                                            : ", with headers"))
          .c_str(),
      std::chrono::duration<double>(options.reporter_interval).count(),
      options.symbolize ? "" : ", no host symbolization");
  std::fflush(stdout);
  if (std::string why = exporter.CheckReachable(kReachableWait); !why.empty())
    std::fprintf(stderr, "kiln-agent: %s\n", why.c_str());

  const std::string host_name = HostName();
  std::map<std::string, std::size_t> python_refusals_said;
  auto report = [&](bool final) {
    ProfileBatch batch = collector.TakeBatch(host_name, options.resource_attributes);
    std::size_t samples = batch.SampleCount();
    std::size_t process_count = batch.processes.size();
    if (samples > 0) exporter.Enqueue(BuildExportRequest(batch, kiln::kVersion), samples);
    batch = {};  // release mappings before the sweep
    processes.Sweep();
    unwinder.Sweep();
    python.Sweep();
    symbolizer.Sweep();
    ExporterStats es = exporter.stats();
    std::printf(
        "kiln-agent: %s%zu samples, %zu processes, dropped %llu (ring buffer) %llu (unsent), "
        "queued %zu, sent %llu requests\n",
        final ? "final: " : "", samples, process_count,
        static_cast<unsigned long long>(sampler->dropped_events()),
        static_cast<unsigned long long>(es.dropped_samples), es.queued_requests,
        static_cast<unsigned long long>(es.sent_requests));
    if (sampler->off_cpu())
      std::printf("kiln-agent:   off-CPU: %llu blocked periods recorded, %llu reported, %llu dropped (%llu unpaired)\n",
                  static_cast<unsigned long long>(sampler->off_cpu_recorded()),
                  static_cast<unsigned long long>(collector.stats().off_cpu_events),
                  static_cast<unsigned long long>(sampler->off_cpu_dropped()),
                  static_cast<unsigned long long>(collector.stats().off_cpu_unpaired));
    {
      const UnwindLoaderStats& us = unwinder.stats();
      WalkStats ws = sampler->walk_stats();
      std::uint64_t walks = 0;
      for (std::uint64_t v : ws.ends) walks += v;
      auto end_share = [&](int reason) {
        return walks ? 100.0 * static_cast<double>(ws.ends[static_cast<std::size_t>(reason)]) / walks : 0.0;
      };
      std::printf(
          "kiln-agent:   stacks: %.1f%% whole (outermost frame reached), %llu frames from CFI, %llu from frame "
          "pointers; %zu processes and %zu tables loaded (%zu of %u rows, %zu distinct rules, %.2fs building)\n",
          end_share(KILN_WALK_OUTERMOST), static_cast<unsigned long long>(ws.cfi_frames),
          static_cast<unsigned long long>(ws.fp_frames), us.processes_loaded, us.tables_loaded, us.rows_in_use,
          us.row_capacity, us.unwind_infos, us.build_seconds);
      // What did not get rows, and why, in the default report: on a busy
      // desktop this is where stacks are cut short.
      if (us.tables_evicted_idle > 0 || !us.refused_by_reason.empty()) {
        std::string why;
        for (const auto& [reason, files] : us.refused_by_reason)
          why += (why.empty() ? "" : ", ") + std::to_string(files) + " " + reason;
        std::printf("kiln-agent:   tables of idle processes evicted %zu times (%zu built again when they ran), "
                    "moved together %zu times; files refused: %s\n",
                    us.tables_evicted_idle, us.tables_reloaded, us.defragmented, why.empty() ? "none" : why.c_str());
      }
      if (options.verbose) {
        static const char* kEndNames[KILN_WALK_END_COUNT] = {
            "outermost", "fp zero", "pc not mapped", "bad address", "read failed",
            "depth",     "no fp",   "kernel thread", "sp not growing"};
        const CollectorStats& cs = collector.stats();
        std::printf(
            "kiln-agent:   samples so far: %llu, %llu before their process was loaded, %llu with frame-pointer "
            "frames, %llu junk frame-pointer frames dropped\n",
            static_cast<unsigned long long>(cs.samples), static_cast<unsigned long long>(cs.samples_process_unknown),
            static_cast<unsigned long long>(cs.samples_fp_fallback),
            static_cast<unsigned long long>(cs.junk_frames_dropped));
        std::printf("kiln-agent:   walks ended:");
        for (int r = 0; r < KILN_WALK_END_COUNT; ++r) std::printf(" %s %.1f%%", kEndNames[r], end_share(r));
        std::printf("\n");
        for (const auto& [why, count] : us.refused) std::printf("kiln-agent:   refused %zu: %s\n", count, why.c_str());
      }
    }
    {
      // Python: what was read, and what could not be, by reason (once a
      // report, while it lasts: a refused interpreter keeps native frames).
      const PythonStats& py = python.stats();
      WalkStats ws = sampler->walk_stats();
      if (ws.py_frames > 0 || !py.versions.empty() || !py.refused.empty()) {
        std::string versions;
        for (const auto& [v, n] : py.versions)
          versions += (versions.empty() ? "" : ", ") + v + " x" + std::to_string(n);
        std::printf("kiln-agent:   Python: %zu processes (%s), %zu threads; %llu frames recorded, %llu named, "
                    "%llu of them from an earlier read (the code object gone by then), %llu code objects unreadable; "
                    "walks without Python frames: %llu thread state not known "
                    "(%llu stale), %llu reads failed, %llu frame chains that loop\n",
                    py.processes, versions.empty() ? "none" : versions.c_str(), py.threads,
                    static_cast<unsigned long long>(ws.py_frames), static_cast<unsigned long long>(py.frames_named),
                    static_cast<unsigned long long>(py.frames_named_gone),
                    static_cast<unsigned long long>(py.frames_unreadable),
                    static_cast<unsigned long long>(ws.py_thread_unknown + ws.py_thread_stale),
                    static_cast<unsigned long long>(ws.py_thread_stale),
                    static_cast<unsigned long long>(ws.py_read_failed),
                    static_cast<unsigned long long>(ws.py_chain_loops));
        for (const std::string& notice : python.TakeNotices()) std::printf("kiln-agent:   Python: %s\n", notice.c_str());
        // Once per interpreter and reason, and again only when more
        // processes met it.
        for (const auto& [why, n] : py.refused)
          if (std::exchange(python_refusals_said[why], n) != n)
            std::printf("kiln-agent:   Python not read in %zu process loads: %s\n", n, why.c_str());
      }
    }
    {
      const CollectorStats& cs = collector.stats();
      const PerfMapStats& ps = perf_maps.stats();
      if (cs.jit_frames > 0 || ps.refused > 0)
        std::printf("kiln-agent:   JIT: %llu frames in anonymous code, %llu named from %llu perf maps (%.1f MB), "
                    "%llu bad lines skipped, %llu maps refused, %llu cut at the size bound\n",
                    static_cast<unsigned long long>(cs.jit_frames), static_cast<unsigned long long>(cs.jit_frames_named),
                    static_cast<unsigned long long>(ps.files_read), perf_maps.MemoryBytes() / 1e6,
                    static_cast<unsigned long long>(ps.bad_lines), static_cast<unsigned long long>(ps.refused),
                    static_cast<unsigned long long>(ps.over_limit));
      if (cs.python_trampolines_merged > 0)
        std::printf("kiln-agent:   JIT: %llu Python -X perf trampolines left out where the interpreter's own frames "
                    "name the same calls\n",
                    static_cast<unsigned long long>(cs.python_trampolines_merged));
      for (const std::string& notice : perf_maps.TakeNotices()) std::printf("kiln-agent:   %s\n", notice.c_str());
    }
    if (options.verbose)
      std::printf(
          "kiln-agent:   %zu processes tracked, %zu files, symbol caches of %zu files (%.1f MB), "
          "%zu symbol table loads (%zu Go line tables read, %zu refused), %zu maps reads so far\n",
          processes.size(), executables.size(), symbolizer.files(), symbolizer.MemoryBytes() / 1e6,
          symbolizer.table_loads(), symbolizer.go_tables(), symbolizer.go_tables_refused(), processes.maps_reads());
    std::fflush(stdout);
  };

  auto next_report = Clock::now() + options.reporter_interval;
  while (!g_stop) {
    // Tables finished on the build thread go into the maps; while any are
    // being built, wake up sooner to load them.
    unwinder.Poll();
    int n = sampler->Poll(unwinder.builds_pending() > 0 ? std::chrono::milliseconds(10) : kPollPeriod);
    if (n < 0 && n != -EINTR) {
      std::fprintf(stderr, "kiln-agent: reading the ring buffer failed: %d\n", n);
      break;
    }
    if (Clock::now() >= next_report) {
      report(false);
      next_report += options.reporter_interval;
      if (next_report < Clock::now()) next_report = Clock::now() + options.reporter_interval;
    }
  }

  // Detach first so nothing new arrives, then drain what is buffered.
  std::printf("kiln-agent: stopping, sending the last batch\n");
  std::fflush(stdout);
  sampler->Detach();
  sampler->Poll(std::chrono::milliseconds(0));
  const std::uint64_t dropped = sampler->dropped_events();
  sampler.reset();
  {
    ProfileBatch batch = collector.TakeBatch(host_name, options.resource_attributes);
    std::size_t samples = batch.SampleCount();
    if (samples > 0) exporter.Enqueue(BuildExportRequest(batch, kiln::kVersion), samples);
  }
  bool flushed = exporter.Flush(kFinalFlushWait);
  ExporterStats es = exporter.stats();
  std::printf(
      "kiln-agent: done: sent %llu requests (%llu samples), dropped %llu samples (ring buffer %llu)%s\n",
      static_cast<unsigned long long>(es.sent_requests), static_cast<unsigned long long>(es.sent_samples),
      static_cast<unsigned long long>(es.dropped_samples), static_cast<unsigned long long>(dropped),
      flushed ? "" : "; the receiver did not take the last batch in time");
  return 0;
}
