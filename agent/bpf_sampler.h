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

struct sampler_bpf;
struct ring_buffer;
struct bpf_link;

namespace kiln::agent {

// "0-3,5,7-8" (the format of /sys/devices/system/cpu/online) -> CPU numbers.
[[nodiscard]] Result<std::vector<int>> ParseCpuList(std::string_view text);

// What is missing to run the sampler, checked before touching BPF, or "".
std::string CheckSamplerPrerequisites();

class BpfSampler {
 public:
  using RecordHandler = std::function<void(const void* data, std::size_t size)>;

  [[nodiscard]] static Result<std::unique_ptr<BpfSampler>> Start(int samples_per_second,
                                                                 RecordHandler handler);
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
  std::size_t ring_buffer_bytes() const { return ring_bytes_; }
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
  RecordHandler handler_;
};

}  // namespace kiln::agent
