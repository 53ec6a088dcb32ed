#include "sample_collector.h"

#include <linux/types.h>
#include <time.h>

#include <algorithm>
#include <cstring>

#include "bpf/sampler_event.h"

namespace kiln::agent {
namespace {

std::int64_t NowNs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

std::string CommToString(const char* comm) {
  return std::string(comm, strnlen(comm, KILN_COMM_LEN));
}

// Frame 0 of a stack is where the CPU was; the others are return addresses,
// which point after the call. Minus one lands inside the call instruction,
// so symbol and line lookups name the caller's line (as perf and the
// OpenTelemetry profiler do).
std::uint64_t CallSite(std::uint64_t address, std::size_t index) {
  return index == 0 || address == 0 ? address : address - 1;
}

}  // namespace

SampleCollector::SampleCollector(ProcessTracker& processes, Symbolizer& symbolizer,
                                 const KernelSymbols& kernel, int samples_per_second)
    : processes_(processes), symbolizer_(symbolizer), kernel_(kernel),
      samples_per_second_(samples_per_second) {
  ResetClockOffset();
  batch_start_unix_ns_ = static_cast<std::uint64_t>(NowNs(CLOCK_REALTIME));
}

void SampleCollector::ResetClockOffset() {
  // bpf_ktime_get_ns() is CLOCK_MONOTONIC; re-measured per batch so NTP
  // steps of the wall clock show up within one interval.
  unix_minus_monotonic_ns_ = NowNs(CLOCK_REALTIME) - NowNs(CLOCK_MONOTONIC);
}

std::uint64_t SampleCollector::ToUnixNs(std::uint64_t monotonic_ns) const {
  return static_cast<std::uint64_t>(static_cast<std::int64_t>(monotonic_ns) + unix_minus_monotonic_ns_);
}

void SampleCollector::OnRecord(const void* data, std::size_t size) {
  if (size < sizeof(kiln_event_header)) {
    ++stats_.bad_records;
    return;
  }
  kiln_event_header header;
  std::memcpy(&header, data, sizeof(header));
  switch (header.kind) {
    case KILN_EVENT_SAMPLE: {
      constexpr std::size_t kFixed = offsetof(kiln_sample_event, frames);
      if (size < kFixed) break;
      // Copy into an aligned, full-size event; only the present frames are
      // valid. Static: 2 KB we do not want per call, and OnRecord is
      // main-thread only.
      static kiln_sample_event ev;
      std::memcpy(&ev, data, std::min(size, sizeof(ev)));
      std::size_t present = (std::min(size, sizeof(ev)) - kFixed) / sizeof(__u64);
      OnSample(ev, present);
      return;
    }
    case KILN_EVENT_EXEC:
      ++stats_.exec_events;
      processes_.OnExec(header.pid);
      // Samples after the exec belong to a new program: close the old
      // program's profile so it keeps its own executable name.
      if (auto it = current_.find(header.pid); it != current_.end()) {
        finished_.push_back(std::move(it->second.profile));
        current_.erase(it);
      }
      return;
    case KILN_EVENT_EXIT:
      ++stats_.exit_events;
      processes_.OnExit(header.pid);
      return;
    default:
      break;
  }
  ++stats_.bad_records;
}

Stack SampleCollector::ResolveStack(ProcessInfo& process, const kiln_sample_event& ev) {
  Stack stack;
  stack.frames.reserve(ev.kernel_frames + ev.user_frames);
  for (std::size_t i = 0; i < ev.kernel_frames; ++i) {
    Frame f;
    f.type = FrameType::kKernel;
    f.address = CallSite(ev.frames[i], i);
    KernelSymbols::Hit hit = kernel_.Lookup(f.address);
    f.function = std::string(hit.function);
    auto& mapping = kernel_mappings_[std::string(hit.module)];
    if (!mapping) {
      auto file = std::make_shared<ExecutableFile>();
      file->path = std::string(hit.module);
      file->file_name = std::string(hit.module);
      auto m = std::make_shared<Mapping>();
      m->file = std::move(file);
      mapping = std::move(m);
    }
    f.mapping = mapping;
    stack.frames.push_back(std::move(f));
  }
  for (std::size_t i = 0; i < ev.user_frames; ++i) {
    Frame f;
    f.type = FrameType::kNative;
    std::uint64_t address = CallSite(ev.frames[ev.kernel_frames + i], i);
    UserAddress resolved = processes_.ResolveUserAddress(process, address);
    f.address = resolved.elf_vaddr;
    f.mapping = resolved.mapping;
    if (resolved.executable) f.function = symbolizer_.Lookup(*resolved.executable, resolved.elf_vaddr);
    stack.frames.push_back(std::move(f));
  }
  return stack;
}

void SampleCollector::OnSample(const kiln_sample_event& ev, std::size_t frames_present) {
  if (static_cast<std::size_t>(ev.kernel_frames) + ev.user_frames > frames_present ||
      ev.kernel_frames > KILN_MAX_STACK_DEPTH || ev.user_frames > KILN_MAX_STACK_DEPTH) {
    ++stats_.bad_records;
    return;
  }
  ++stats_.samples;
  ++pending_samples_;
  std::string comm = CommToString(ev.header.comm);
  ProcessInfo& process = processes_.Get(ev.header.pid, comm);
  ProcessState& state = current_[ev.header.pid];
  if (state.profile.pid == 0) {
    state.profile.pid = ev.header.pid;
    state.profile.executable_path = process.executable_path;
    state.profile.executable_name = process.executable_name;
    state.profile.container_id = process.container_id;
  }

  // Key of the raw stack: the two counts then the addresses, as bytes.
  std::size_t n = ev.kernel_frames + ev.user_frames;
  std::string raw;
  raw.resize(4 + n * sizeof(__u64));
  std::memcpy(raw.data(), &ev.kernel_frames, 2);
  std::memcpy(raw.data() + 2, &ev.user_frames, 2);
  std::memcpy(raw.data() + 4, ev.frames, n * sizeof(__u64));
  auto [stack_it, new_stack] = state.stack_by_raw.try_emplace(std::move(raw), 0);
  if (new_stack) {
    stack_it->second = static_cast<std::int32_t>(state.profile.stacks.size());
    state.profile.stacks.push_back(ResolveStack(process, ev));
  }

  std::string group_key;
  group_key.resize(12);
  std::int32_t stack_index = stack_it->second;
  std::memcpy(group_key.data(), &stack_index, 4);
  std::memcpy(group_key.data() + 4, &ev.header.tid, 4);
  std::memcpy(group_key.data() + 8, &ev.header.cpu, 4);
  group_key += comm;
  auto [group_it, new_group] = state.group_by_key.try_emplace(std::move(group_key), 0);
  if (new_group) {
    group_it->second = state.profile.samples.size();
    SampleGroup g;
    g.stack = stack_index;
    g.tid = ev.header.tid;
    g.cpu = ev.header.cpu;
    g.thread_name = std::move(comm);
    state.profile.samples.push_back(std::move(g));
  }
  state.profile.samples[group_it->second].timestamps_unix_ns.push_back(ToUnixNs(ev.header.ktime_ns));
}

ProfileBatch SampleCollector::TakeBatch(
    const std::string& host_name,
    const std::vector<std::pair<std::string, std::string>>& resource_attributes) {
  ProfileBatch batch;
  batch.start_unix_ns = batch_start_unix_ns_;
  batch.end_unix_ns = static_cast<std::uint64_t>(NowNs(CLOCK_REALTIME));
  batch.samples_per_second = samples_per_second_;
  batch.host_name = host_name;
  batch.resource_attributes = resource_attributes;
  batch.processes.reserve(current_.size() + finished_.size());
  for (ProcessProfile& profile : finished_) batch.processes.push_back(std::move(profile));
  for (auto& [pid, state] : current_) batch.processes.push_back(std::move(state.profile));
  for (ProcessProfile& profile : batch.processes)
    for (SampleGroup& g : profile.samples) std::sort(g.timestamps_unix_ns.begin(), g.timestamps_unix_ns.end());
  std::stable_sort(batch.processes.begin(), batch.processes.end(),
                   [](const ProcessProfile& a, const ProcessProfile& b) { return a.pid < b.pid; });
  current_.clear();
  finished_.clear();
  pending_samples_ = 0;
  batch_start_unix_ns_ = batch.end_unix_ns;
  ResetClockOffset();
  return batch;
}

}  // namespace kiln::agent
