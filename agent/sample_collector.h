#pragma once
// Turns ring buffer records into the current interval's ProfileBatch.
//
// Each sample is resolved when it arrives (while its process still exists):
// kernel addresses get kallsyms names, user addresses become (mapping, ELF
// vaddr, symbol). Resolution is done once per distinct raw stack per process
// per interval; later samples with the same stack only append a timestamp.
//
// Main thread only. TakeBatch() hands over the interval and starts a new one.

#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernel_symbols.h"
#include "perf_map.h"
#include "process_tracker.h"
#include "python_tracker.h"
#include "profile_batch.h"
#include "symbolizer.h"
#include "unwind_loader.h"

struct kiln_sample_event;
struct kiln_event_header;

namespace kiln::agent {

struct CollectorStats {
  std::uint64_t samples = 0;
  std::uint64_t bad_records = 0;  // too short or unknown kind
  std::uint64_t exec_events = 0;
  std::uint64_t exit_events = 0;
  std::uint64_t samples_process_unknown = 0;  // walked before the process was loaded
  std::uint64_t samples_fp_fallback = 0;      // some frames from frame pointers
  std::uint64_t junk_frames_dropped = 0;      // frame-pointer frames outside executable mappings
  std::uint64_t off_cpu_events = 0;           // blocked periods reported
  std::uint64_t off_cpu_unpaired = 0;         // an end without its begin (lost, or too many waiting)
  std::uint64_t jit_frames = 0;               // frames in anonymous executable memory (resolutions)
  std::uint64_t jit_frames_named = 0;         // of those, named from a perf map
  // Python -X perf trampolines (py:: in the perf map) left out of a stack
  // whose Python frames were read from the interpreter: the same calls.
  std::uint64_t python_trampolines_merged = 0;
};

class SampleCollector {
 public:
  SampleCollector(ProcessTracker& processes, Symbolizer& symbolizer, const KernelSymbols& kernel,
                  int samples_per_second);

  // Loads processes for the BPF walker as their samples ask; optional.
  void SetUnwindLoader(UnwindLoader* loader) { unwinder_ = loader; }
  // Names JIT frames from perf maps; optional.
  void SetPerfMaps(PerfMaps* maps) { perf_maps_ = maps; }
  // Reads CPython processes' frames (with the unwind loader); optional.
  void SetPythonTracker(PythonTracker* python) { python_ = python; }
  // The off-CPU sampling probability each batch reports (0: off).
  void SetOffCpuProbability(double p) { off_cpu_probability_ = p; }

  // One ring buffer record (any kind); malformed ones are counted, not fatal.
  void OnRecord(const void* data, std::size_t size);

  // Everything since the last call; `host_name` and `resource_attributes`
  // are copied into the batch.
  ProfileBatch TakeBatch(const std::string& host_name,
                         const std::vector<std::pair<std::string, std::string>>& resource_attributes);

  const CollectorStats& stats() const { return stats_; }
  std::size_t pending_samples() const { return pending_samples_; }

 private:
  // Sample grouping key: fixed size so lookups allocate nothing.
  struct GroupKey {
    std::int32_t stack;
    std::uint32_t tid;
    std::uint32_t cpu;
    char comm[16];
    bool operator==(const GroupKey& o) const;
  };
  struct GroupKeyHash {
    std::size_t operator()(const GroupKey& k) const;
  };
  struct ProcessState {
    ProcessProfile profile;
    // Hash of the raw addresses -> stack; raw_stacks[stack] confirms a hit.
    std::unordered_multimap<std::uint64_t, std::int32_t> stack_by_hash;
    std::vector<std::vector<std::uint64_t>> raw_stacks;
    std::unordered_map<GroupKey, std::size_t, GroupKeyHash> group_by_key;
    std::unordered_map<GroupKey, std::size_t, GroupKeyHash> off_cpu_group_by_key;
  };
  // A thread off the CPU: its stack waits here until it runs again.
  struct PendingOffCpu {
    std::vector<std::uint8_t> record;  // the OFFCPU_BEGIN record as it came
  };
  static constexpr std::size_t kMaxPendingOffCpu = 65536;

  bool ValidSample(const kiln_sample_event& ev, std::size_t frames_present);
  // Asks the unwind loader to load the sample's process when the BPF side
  // does not know it, or to reload it when its maps changed.
  void LoadForUnwinding(const kiln_sample_event& ev, ProcessInfo& process);
  // A record ValidSample accepted.
  void OnSample(const kiln_sample_event& ev);
  // A record of at least sizeof(kiln_offcpu_end_event) bytes.
  void OnOffCpuEnd(const void* data);
  // The process's state for this interval, its stack index for `ev`, and
  // the (stack, thread, cpu) group in `groups` the event goes to.
  ProcessState& StateFor(const kiln_sample_event& ev, ProcessInfo& process);
  std::int32_t StackIndex(ProcessState& state, ProcessInfo& process, const kiln_sample_event& ev);
  SampleGroup& GroupFor(std::vector<SampleGroup>& groups,
                        std::unordered_map<GroupKey, std::size_t, GroupKeyHash>& index, std::int32_t stack,
                        const kiln_event_header& header);
  Stack ResolveStack(ProcessInfo& process, const kiln_sample_event& ev);
  // A frame in no file: typed and named as JIT code when it is in anonymous
  // executable memory.
  void NameJitFrame(const ProcessInfo& process, std::uint64_t address, Frame* f);
  std::uint64_t ToUnixNs(std::uint64_t monotonic_ns) const;
  void ResetClockOffset();

  ProcessTracker& processes_;
  UnwindLoader* unwinder_ = nullptr;
  PerfMaps* perf_maps_ = nullptr;
  PythonTracker* python_ = nullptr;
  Symbolizer& symbolizer_;
  const KernelSymbols& kernel_;
  int samples_per_second_;
  double off_cpu_probability_ = 0;
  std::unordered_map<std::uint32_t, ProcessState> current_;
  std::unordered_map<std::uint32_t, PendingOffCpu> pending_off_cpu_;  // by tid
  std::vector<ProcessProfile> finished_;  // closed by an exec this interval
  std::unordered_map<std::string, std::shared_ptr<const Mapping>> kernel_mappings_;  // per module
  std::int64_t unix_minus_monotonic_ns_ = 0;
  std::uint64_t batch_start_unix_ns_ = 0;
  std::size_t pending_samples_ = 0;
  CollectorStats stats_;
};

}  // namespace kiln::agent
