#include "sample_collector.h"

#include <linux/types.h>
#include <time.h>

#include <algorithm>
#include <cstring>
#include <tuple>

#include "bpf/python_abi.h"
#include "bpf/sampler_event.h"

namespace kiln::agent {
namespace {

FrameType JitFrameType(JitRuntime runtime) {
  switch (runtime) {
    case JitRuntime::kV8: return FrameType::kV8;
    case JitRuntime::kPython: return FrameType::kPython;
    case JitRuntime::kJvm: return FrameType::kJvm;
    case JitRuntime::kDotnet: return FrameType::kDotnet;
    case JitRuntime::kOther: break;
  }
  return FrameType::kJit;
}

std::int64_t NowNs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

std::string_view CommView(const char* comm) { return std::string_view(comm, strnlen(comm, KILN_COMM_LEN)); }

// 64-bit mix (the splitmix64 finalizer) folded over words: good enough
// spread for hash-map keys; hits are confirmed against the raw data.
std::uint64_t Mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

// Frame 0 of a stack is where the CPU was; the others are return addresses,
// which point after the call. Minus one lands inside the call instruction,
// so symbol and line lookups name the caller's line (as perf and the
// OpenTelemetry profiler do).
std::uint64_t CallSite(std::uint64_t address, std::size_t index) {
  return index == 0 || address == 0 ? address : address - 1;
}

}  // namespace

bool SampleCollector::GroupKey::operator==(const GroupKey& o) const {
  return stack == o.stack && tid == o.tid && cpu == o.cpu && std::memcmp(comm, o.comm, sizeof(comm)) == 0;
}

std::size_t SampleCollector::GroupKeyHash::operator()(const GroupKey& k) const {
  std::uint64_t words[2];
  std::memcpy(words, k.comm, sizeof(words));
  std::uint64_t h = Mix(Mix(static_cast<std::uint64_t>(static_cast<std::uint32_t>(k.stack)), k.tid), k.cpu);
  return static_cast<std::size_t>(Mix(Mix(h, words[0]), words[1]));
}

SampleCollector::SampleCollector(ProcessTracker& processes, Symbolizer& symbolizer,
                                 const KernelSymbols& kernel, int samples_per_second)
    : processes_(processes),
      symbolizer_(symbolizer),
      kernel_(kernel),
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
    case KILN_EVENT_SAMPLE:
    case KILN_EVENT_OFFCPU_BEGIN: {
      constexpr std::size_t kFixed = offsetof(kiln_sample_event, frames);
      if (size < kFixed) break;
      // Copy into an aligned, full-size event; only the present frames are
      // valid. Static: 2 KB we do not want per call, and OnRecord is
      // main-thread only.
      static kiln_sample_event ev;
      std::memcpy(&ev, data, std::min(size, sizeof(ev)));
      std::size_t present = (std::min(size, sizeof(ev)) - kFixed) / sizeof(__u64);
      if (!ValidSample(ev, present)) return;
      if (header.kind == KILN_EVENT_SAMPLE) {
        OnSample(ev);
        return;
      }
      // A thread that blocks before it was ever sampled on a CPU asks for
      // its process to be loaded just the same.
      LoadForUnwinding(ev, processes_.Get(ev.header.pid, CommView(ev.header.comm)));
      if (pending_off_cpu_.size() < kMaxPendingOffCpu || pending_off_cpu_.count(header.tid)) {
        // Resolved when the thread runs again: only then is its weight known.
        const auto* bytes = static_cast<const std::uint8_t*>(data);
        pending_off_cpu_[header.tid].record.assign(bytes, bytes + std::min(size, sizeof(ev)));
      }
      return;
    }
    case KILN_EVENT_OFFCPU_END:
      if (size < sizeof(kiln_offcpu_end_event)) break;
      OnOffCpuEnd(data);
      return;
    case KILN_EVENT_EXEC:
      ++stats_.exec_events;
      processes_.OnExec(header.pid);
      if (unwinder_) unwinder_->ForgetProcess(header.pid);
      if (python_) python_->ForgetProcess(header.pid);
      if (perf_maps_) perf_maps_->Forget(header.pid);
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
      if (unwinder_) unwinder_->ForgetProcess(header.pid);
      if (python_) python_->ForgetProcess(header.pid);
      if (perf_maps_) perf_maps_->Forget(header.pid);
      // Its threads will not run again: nothing to pair their stacks with.
      for (auto it = pending_off_cpu_.begin(); it != pending_off_cpu_.end();) {
        kiln_event_header h;
        std::memcpy(&h, it->second.record.data(), sizeof(h));
        it = h.pid == header.pid ? pending_off_cpu_.erase(it) : std::next(it);
      }
      return;
    default:
      break;
  }
  ++stats_.bad_records;
}

Stack SampleCollector::ResolveStack(ProcessInfo& process, const kiln_sample_event& ev) {
  Stack stack;
  stack.frames.reserve(ev.kernel_frames + ev.user_frames);
  std::size_t first_kernel = 0;
  if (ev.header.kind == KILN_EVENT_OFFCPU_BEGIN) {
    // The stack was taken inside the sched_switch tracepoint: the frames
    // above __schedule are the BPF program's own, not the thread's.
    for (std::size_t i = 0; i < ev.kernel_frames && i < 8; ++i)
      if (kernel_.Lookup(ev.frames[i] - (i > 0)).function == "__schedule") {
        first_kernel = i;
        break;
      }
  }
  for (std::size_t i = first_kernel; i < ev.kernel_frames; ++i) {
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
  std::size_t user_frames = ev.user_frames;
  if (ev.flags & KILN_SAMPLE_FLAG_FP_FALLBACK) {
    // A frame-pointer walk through code built without frame pointers reads
    // junk; the BPF side cannot check addresses against the maps of a
    // process it does not know yet, so stop here at the first return
    // address outside every executable mapping.
    for (std::size_t i = 1; i < user_frames; ++i) {
      if (ev.frames[ev.kernel_frames + i] & KILN_PY_FRAME_BIT) continue;
      const MapsEntry* e = FindMapping(process.maps, ev.frames[ev.kernel_frames + i] - 1);
      if (!e || !e->executable) {
        stats_.junk_frames_dropped += user_frames - i;
        user_frames = i;
        break;
      }
    }
  }
  // Python 3.12+ run with -X perf calls each Python function through a
  // trampoline named "py::FUNCTION:FILE" in its perf map. Where the walker
  // also read the interpreter's frames (with their lines), a trampoline is
  // the same call again: it is left out. Without them (an interpreter the
  // walker cannot read), the trampolines are the Python frames there are.
  bool interpreter_frames = false;
  std::vector<std::size_t> trampolines;
  for (std::size_t i = 0; i < user_frames; ++i) {
    std::uint64_t raw = ev.frames[ev.kernel_frames + i];
    if (raw & KILN_PY_FRAME_BIT) {
      // A Python frame the walker recorded in place of the eval loop's.
      stack.frames.push_back(python_ ? python_->NameFrame(process.pid, raw) : Frame{FrameType::kPython});
      interpreter_frames = true;
      continue;
    }
    Frame f;
    f.type = FrameType::kNative;
    std::uint64_t address = CallSite(raw, i);
    UserAddress resolved = processes_.ResolveUserAddress(process, address);
    f.address = resolved.elf_vaddr;
    f.mapping = resolved.mapping;
    if (resolved.executable) {
      NativeName name = symbolizer_.Lookup(*resolved.executable, resolved.elf_vaddr);
      f.function = std::move(name.function);
      f.file = std::move(name.file);
      f.line = name.line;
    } else if (!resolved.mapping) {
      NameJitFrame(process, address, &f);
      if (f.type == FrameType::kPython) trampolines.push_back(stack.frames.size());
    }
    stack.frames.push_back(std::move(f));
  }
  if (interpreter_frames && !trampolines.empty()) {
    for (auto it = trampolines.rbegin(); it != trampolines.rend(); ++it)
      stack.frames.erase(stack.frames.begin() + static_cast<std::ptrdiff_t>(*it));
    stats_.python_trampolines_merged += trampolines.size();
  }
  return stack;
}

void SampleCollector::NameJitFrame(const ProcessInfo& process, std::uint64_t address, Frame* f) {
  const MapsEntry* e = FindMapping(process.maps, address);
  if (!e || !e->IsAnonymousCode()) return;
  f->type = FrameType::kJit;
  ++stats_.jit_frames;
  if (!perf_maps_) return;
  std::optional<JitSymbol> s = perf_maps_->Lookup(process.pid, address);
  if (!s) return;
  ++stats_.jit_frames_named;
  f->type = JitFrameType(s->runtime);
  f->function = s->function;
  f->file = s->file;
  f->line = s->line;
}

bool SampleCollector::ValidSample(const kiln_sample_event& ev, std::size_t frames_present) {
  if (static_cast<std::size_t>(ev.kernel_frames) + ev.user_frames > frames_present ||
      ev.kernel_frames > KILN_MAX_STACK_DEPTH || ev.user_frames > KILN_MAX_USER_FRAMES) {
    ++stats_.bad_records;
    return false;
  }
  return true;
}

SampleCollector::ProcessState& SampleCollector::StateFor(const kiln_sample_event& ev, ProcessInfo& process) {
  ProcessState& state = current_[ev.header.pid];
  if (state.profile.pid == 0) {
    state.profile.pid = ev.header.pid;
    state.profile.executable_path = process.executable_path;
    state.profile.executable_name = process.executable_name;
    state.profile.container_id = process.container_id;
  }
  return state;
}

std::int32_t SampleCollector::StackIndex(ProcessState& state, ProcessInfo& process, const kiln_sample_event& ev) {
  // The raw stack: kernel count, then all addresses. The same addresses with
  // a different kernel/user split are a different stack.
  const std::size_t n = ev.kernel_frames + ev.user_frames;
  std::uint64_t hash = Mix(0, ev.kernel_frames);
  for (std::size_t i = 0; i < n; ++i) hash = Mix(hash, ev.frames[i]);
  auto same_raw = [&](std::int32_t index) {
    const auto& raw = state.raw_stacks[static_cast<std::size_t>(index)];
    return raw.size() == n + 1 && raw[0] == ev.kernel_frames &&
           std::equal(raw.begin() + 1, raw.end(), ev.frames);
  };
  for (auto [it, end] = state.stack_by_hash.equal_range(hash); it != end; ++it)
    if (same_raw(it->second)) return it->second;
  std::int32_t stack_index = static_cast<std::int32_t>(state.profile.stacks.size());
  std::vector<std::uint64_t> raw(n + 1);
  raw[0] = ev.kernel_frames;
  std::copy(ev.frames, ev.frames + n, raw.begin() + 1);
  state.raw_stacks.push_back(std::move(raw));
  state.stack_by_hash.emplace(hash, stack_index);
  state.profile.stacks.push_back(ResolveStack(process, ev));
  return stack_index;
}

SampleGroup& SampleCollector::GroupFor(std::vector<SampleGroup>& groups,
                                       std::unordered_map<GroupKey, std::size_t, GroupKeyHash>& index,
                                       std::int32_t stack, const kiln_event_header& header) {
  GroupKey key{stack, header.tid, header.cpu, {}};
  std::memcpy(key.comm, header.comm, sizeof(key.comm));
  auto [it, inserted] = index.try_emplace(key, 0);
  if (inserted) {
    it->second = groups.size();
    SampleGroup g;
    g.stack = stack;
    g.tid = header.tid;
    g.cpu = header.cpu;
    g.thread_name = std::string(CommView(header.comm));
    groups.push_back(std::move(g));
  }
  return groups[it->second];
}

void SampleCollector::LoadForUnwinding(const kiln_sample_event& ev, ProcessInfo& process) {
  if (!unwinder_ || process.kernel_thread || process.exited) return;
  // The BPF walker asks once per process (and again after an exec); a
  // library mapped later shows as a pc in no known mapping.
  if (!unwinder_->IsLoaded(ev.header.pid)) {
    if (ev.flags & KILN_SAMPLE_FLAG_PROCESS_UNKNOWN) {
      unwinder_->LoadProcess(process);
      if (python_) python_->LoadProcess(process);
    }
  } else {
    if ((ev.flags & KILN_SAMPLE_FLAG_NEW_MAPPING) && processes_.RereadMapsIfDue(process)) {
      unwinder_->LoadProcess(process);
      // libpython may be dlopen'ed (an embedding program).
      if (python_) python_->LoadProcess(process);
    }
    if (python_ && (ev.flags & KILN_SAMPLE_FLAG_PY_THREAD_UNKNOWN)) python_->ThreadUnknown(process);
    if (python_ && (ev.flags & KILN_SAMPLE_FLAG_PY_LOOP)) python_->ChainLoops(process);
    // Rows go to what is being sampled: a table evicted while its process
    // was idle is built again now.
    unwinder_->NoteSampled(process, (ev.flags & KILN_SAMPLE_FLAG_TABLE_MISSING) != 0);
  }
}

void SampleCollector::OnSample(const kiln_sample_event& ev) {
  ++stats_.samples;
  ++pending_samples_;
  ProcessInfo& process = processes_.Get(ev.header.pid, CommView(ev.header.comm));
  if (ev.flags & KILN_SAMPLE_FLAG_PROCESS_UNKNOWN) ++stats_.samples_process_unknown;
  if (ev.flags & KILN_SAMPLE_FLAG_FP_FALLBACK) ++stats_.samples_fp_fallback;
  LoadForUnwinding(ev, process);
  ProcessState& state = StateFor(ev, process);
  std::int32_t stack = StackIndex(state, process, ev);
  GroupFor(state.profile.samples, state.group_by_key, stack, ev.header)
      .timestamps_unix_ns.push_back(ToUnixNs(ev.header.ktime_ns));
}

void SampleCollector::OnOffCpuEnd(const void* data) {
  kiln_offcpu_end_event end;
  std::memcpy(&end, data, sizeof(end));
  auto it = pending_off_cpu_.find(end.header.tid);
  if (it == pending_off_cpu_.end()) {
    ++stats_.off_cpu_unpaired;
    return;
  }
  static kiln_sample_event ev;
  std::memset(&ev, 0, offsetof(kiln_sample_event, frames));
  std::memcpy(&ev, it->second.record.data(), std::min(it->second.record.size(), sizeof(ev)));
  pending_off_cpu_.erase(it);
  if (ev.header.ktime_ns != end.start_ns || end.header.ktime_ns < end.start_ns) {
    ++stats_.off_cpu_unpaired;  // the begin of another period: one was lost
    return;
  }
  ++stats_.off_cpu_events;
  ++pending_samples_;
  ProcessInfo& process = processes_.Get(ev.header.pid, CommView(ev.header.comm));
  ProcessState& state = StateFor(ev, process);
  std::int32_t stack = StackIndex(state, process, ev);
  SampleGroup& g = GroupFor(state.profile.off_cpu, state.off_cpu_group_by_key, stack, ev.header);
  g.timestamps_unix_ns.push_back(ToUnixNs(ev.header.ktime_ns));
  g.values.push_back(static_cast<std::int64_t>(end.header.ktime_ns - end.start_ns));
}

ProfileBatch SampleCollector::TakeBatch(
    const std::string& host_name,
    const std::vector<std::pair<std::string, std::string>>& resource_attributes) {
  ProfileBatch batch;
  batch.start_unix_ns = batch_start_unix_ns_;
  batch.end_unix_ns = static_cast<std::uint64_t>(NowNs(CLOCK_REALTIME));
  batch.samples_per_second = samples_per_second_;
  batch.off_cpu_probability = off_cpu_probability_;
  batch.host_name = host_name;
  batch.resource_attributes = resource_attributes;
  batch.processes.reserve(current_.size() + finished_.size());
  for (ProcessProfile& profile : finished_) batch.processes.push_back(std::move(profile));
  for (auto& [pid, state] : current_) batch.processes.push_back(std::move(state.profile));
  for (ProcessProfile& profile : batch.processes) {
    for (SampleGroup& g : profile.samples) std::sort(g.timestamps_unix_ns.begin(), g.timestamps_unix_ns.end());
    for (SampleGroup& g : profile.off_cpu) {
      // Timestamps ascending, each value staying with its timestamp.
      std::vector<std::pair<std::uint64_t, std::int64_t>> events(g.timestamps_unix_ns.size());
      for (std::size_t i = 0; i < events.size(); ++i) events[i] = {g.timestamps_unix_ns[i], g.values[i]};
      std::sort(events.begin(), events.end());
      for (std::size_t i = 0; i < events.size(); ++i) std::tie(g.timestamps_unix_ns[i], g.values[i]) = events[i];
    }
  }
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
