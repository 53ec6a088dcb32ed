#pragma once
// The BPF side, seen from user space: loads sampler.bpf.o (embedded in the
// skeleton), opens one perf_event cpu-clock counter per online CPU with the
// sampling program attached, attaches the exec/exit tracepoints, and consumes
// the ring buffer.
//
// Start() explains failures in words a user can act on (root, BTF, BPF,
// perf_event_paranoid). Poll() runs the record handler on the calling thread.
// The destructor detaches everything. One instance per process.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "result.h"
#include "python_tracker.h"
#include "unwind_loader.h"

struct sampler_bpf;
struct ring_buffer;
struct bpf_link;

namespace kiln::agent {

// "0-3,5,7-8" (the format of /sys/devices/system/cpu/online) -> CPU numbers.
[[nodiscard]] Result<std::vector<int>> ParseCpuList(std::string_view text);

// What is missing to run the sampler, checked before touching BPF, or "".
std::string CheckSamplerPrerequisites();

// Sizes of the walker's maps (bpf/unwind_abi.h). Array maps are allocated
// in full at load; the LPM trie and the hash grow to their bound.
struct UnwindMapSizes {
  std::uint32_t rows = 2u << 20;          // 8 bytes each: 16 MiB
  std::uint32_t files = 8192;             // distinct executables and libraries
  std::uint32_t mapping_entries = 1u << 18;
  std::uint32_t processes = 32768;
  std::uint32_t python_processes = 4096;  // CPython processes whose frames are read
  std::uint32_t python_threads = 65536;   // their threads
};

struct WalkStats {
  std::vector<std::uint64_t> ends;  // by enum kiln_walk_end
  std::uint64_t cfi_frames = 0;
  std::uint64_t fp_frames = 0;
  std::uint64_t py_frames = 0;          // Python frames recorded
  std::uint64_t py_thread_unknown = 0;  // eval loop met, thread state not known (yet)
  std::uint64_t py_thread_stale = 0;    // the thread state known was another thread's
  std::uint64_t py_read_failed = 0;     // a thread state or frame could not be read
  std::uint64_t py_chain_loops = 0;     // a frame chain came back to a frame
};

class BpfSampler {
 public:
  using RecordHandler = std::function<void(const void* data, std::size_t size)>;

  [[nodiscard]] static Result<std::unique_ptr<BpfSampler>> Start(int samples_per_second,
                                                                 RecordHandler handler,
                                                                 UnwindMapSizes sizes = {},
                                                                 double off_cpu_threshold = 0);
  ~BpfSampler();
  BpfSampler(const BpfSampler&) = delete;
  BpfSampler& operator=(const BpfSampler&) = delete;

  // Stops sampling: detaches every program and closes the perf events.
  // Records already in the ring buffer can still be drained with Poll.
  void Detach();

  // Waits up to `timeout` for a wakeup, then drains the ring buffer. Returns
  // the number of records handled, or a negative errno (EINTR is normal on
  // a signal).
  int Poll(std::chrono::milliseconds timeout);

  const std::vector<int>& cpus() const { return cpus_; }
  std::uint64_t sampled_events() const;  // taken by the BPF program
  std::uint64_t dropped_events() const;  // lost to a full ring buffer
  bool off_cpu() const { return off_cpu_; }
  std::uint64_t off_cpu_recorded() const;  // threads followed off the CPU
  std::uint64_t off_cpu_dropped() const;   // lost: table or ring buffer full
  std::size_t ring_buffer_bytes() const { return ring_bytes_; }
  UnwindMapFds unwind_maps() const;
  PythonMapFds python_maps() const;
  WalkStats walk_stats() const;
  // Kernel memory of the maps as sized (upper bounds for the trie and hash).
  std::size_t map_memory_bytes() const;
  // Sum of the programs' run time and count (kernel.bpf_stats_enabled=1).
  void ProgramRunStats(std::uint64_t* run_time_ns, std::uint64_t* run_count) const;

 private:
  BpfSampler() = default;
  static int OnRecord(void* ctx, void* data, std::size_t size);

  sampler_bpf* skel_ = nullptr;
  ring_buffer* ring_ = nullptr;
  std::vector<int> cpus_;
  std::vector<int> perf_fds_;
  std::vector<::bpf_link*> perf_links_;
  std::size_t ring_bytes_ = 0;
  UnwindMapSizes sizes_;
  bool off_cpu_ = false;
  RecordHandler handler_;
};

}  // namespace kiln::agent
