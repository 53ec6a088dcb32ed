#include "bpf_sampler.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdarg>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "bpf/unwind_abi.h"
#include "bpf/sampler_event.h"
#include "sampler.skel.h"

namespace kiln::agent {
namespace {

constexpr std::size_t kMinRingBytes = 1u << 20;
constexpr std::size_t kMaxRingBytes = 64u << 20;
constexpr std::size_t kAverageRecordBytes = 512;  // header + ~50 frames

std::string ReadFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

bool HasCapability(int cap) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("CapEff:", 0) == 0) {
      std::uint64_t caps = std::stoull(line.substr(7), nullptr, 16);
      return (caps >> cap) & 1;
    }
  }
  return false;
}

// libbpf's own messages are detailed but noisy; keep warnings and errors.
int LibbpfPrint(enum libbpf_print_level level, const char* format, va_list args) {
  if (level == LIBBPF_DEBUG || level == LIBBPF_INFO) return 0;
  return std::vfprintf(stderr, format, args);
}

std::size_t RingBytesFor(std::size_t cpus, int samples_per_second) {
  // Room for two seconds of samples on every CPU: the consumer drains every
  // 200 ms, so this absorbs a stalled consumer without growing RSS much.
  std::size_t want = cpus * static_cast<std::size_t>(samples_per_second) * kAverageRecordBytes * 2;
  std::size_t bytes = kMinRingBytes;
  while (bytes < want && bytes < kMaxRingBytes) bytes <<= 1;
  return bytes;
}

std::string ErrnoText(int err) { return std::strerror(err < 0 ? -err : err); }

}  // namespace

Result<std::vector<int>> ParseCpuList(std::string_view text) {
  using R = Result<std::vector<int>>;
  std::vector<int> cpus;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  while (!text.empty()) {
    std::size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    int first = 0, last = 0;
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), first);
    if (ec != std::errc()) return R::Error("bad CPU list item \"" + std::string(item) + "\"");
    last = first;
    if (p != item.data() + item.size()) {
      if (*p != '-') return R::Error("bad CPU list item \"" + std::string(item) + "\"");
      auto [q, ec2] = std::from_chars(p + 1, item.data() + item.size(), last);
      if (ec2 != std::errc() || q != item.data() + item.size() || last < first)
        return R::Error("bad CPU range \"" + std::string(item) + "\"");
    }
    for (int c = first; c <= last; ++c) cpus.push_back(c);
  }
  if (cpus.empty()) return R::Error("empty CPU list");
  return cpus;
}

std::string CheckSamplerPrerequisites() {
  constexpr int kCapSysAdmin = 21, kCapPerfmon = 38, kCapBpf = 39;
  if (geteuid() != 0 && !HasCapability(kCapSysAdmin) &&
      !(HasCapability(kCapBpf) && HasCapability(kCapPerfmon)))
    return "needs root to load BPF programs and open perf events.\n"
           "  Run it with sudo, or grant it CAP_BPF and CAP_PERFMON:\n"
           "  sudo setcap cap_bpf,cap_perfmon,cap_sys_resource,cap_sys_ptrace+ep kiln-agent";
  if (access("/sys/kernel/btf/vmlinux", R_OK) != 0)
    return "this kernel has no BTF (/sys/kernel/btf/vmlinux is missing).\n"
           "  kiln-agent uses CO-RE and needs a kernel built with CONFIG_DEBUG_INFO_BTF=y\n"
           "  (the default on Debian 11+, Ubuntu 20.10+, Fedora 31+, RHEL 8.2+).";
  return {};
}

Result<std::unique_ptr<BpfSampler>> BpfSampler::Start(int samples_per_second, RecordHandler handler,
                                                      UnwindMapSizes sizes, double off_cpu_threshold) {
  using R = Result<std::unique_ptr<BpfSampler>>;
  if (std::string missing = CheckSamplerPrerequisites(); !missing.empty()) return R::Error(missing);
  libbpf_set_print(LibbpfPrint);

  std::unique_ptr<BpfSampler> s(new BpfSampler());
  s->handler_ = std::move(handler);
  auto cpus = ParseCpuList(ReadFirstLine("/sys/devices/system/cpu/online"));
  if (!cpus) return R::Error("/sys/devices/system/cpu/online: " + cpus.error());
  s->cpus_ = std::move(cpus).value();

  s->skel_ = sampler_bpf::open();
  if (!s->skel_) return R::Error("cannot open the BPF object: " + ErrnoText(errno));
  s->ring_bytes_ = RingBytesFor(s->cpus_.size(), samples_per_second);
  bpf_map__set_max_entries(s->skel_->maps.events, static_cast<__u32>(s->ring_bytes_));
  s->skel_->rodata->wakeup_bytes = s->ring_bytes_ / 4;
  s->sizes_ = sizes;
  bpf_map__set_max_entries(s->skel_->maps.unwind_rows, sizes.rows);
  bpf_map__set_max_entries(s->skel_->maps.unwind_files, sizes.files);
  bpf_map__set_max_entries(s->skel_->maps.proc_mappings, sizes.mapping_entries);
  bpf_map__set_max_entries(s->skel_->maps.proc_state, sizes.processes);
  bpf_map__set_max_entries(s->skel_->maps.py_procs, sizes.python_processes);
  bpf_map__set_max_entries(s->skel_->maps.py_threads, sizes.python_threads);
  s->off_cpu_ = off_cpu_threshold > 0;
  s->skel_->rodata->off_cpu_threshold =
      off_cpu_threshold >= 1.0 ? (1ULL << 32) : static_cast<__u64>(off_cpu_threshold * 4294967296.0);
  if (int err = sampler_bpf::load(s->skel_); err != 0)
    return R::Error("the kernel refused kiln-agent's BPF programs (" + ErrnoText(err) +
                    "). Needs Linux 5.8+ with BPF ring buffers, BPF enabled\n"
                    "  (CONFIG_BPF_SYSCALL, CONFIG_BPF_EVENTS) and not locked down; the libbpf\n"
                    "  messages above say which check failed.");

  // The walker continues in unwind_user(_offcpu) through tail calls.
  for (auto [progs, prog] : {std::pair{s->skel_->maps.unwind_progs, s->skel_->progs.unwind_user},
                             std::pair{s->skel_->maps.offcpu_progs, s->skel_->progs.unwind_user_offcpu}}) {
    __u32 zero = 0;
    int prog_fd = bpf_program__fd(prog);
    if (bpf_map_update_elem(bpf_map__fd(progs), &zero, &prog_fd, BPF_ANY) != 0)
      return R::Error("cannot set up the stack walker's tail call: " + ErrnoText(errno));
  }

  for (int cpu : s->cpus_) {
    perf_event_attr attr{};
    attr.size = sizeof(attr);
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_CPU_CLOCK;
    // cpu-clock counts nanoseconds, so a fixed period is exact: no frequency
    // auto-tuning and no throttling surprises.
    attr.sample_period = 1000000000ULL / static_cast<unsigned>(samples_per_second);
    int fd = static_cast<int>(syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC));
    if (fd < 0) {
      int err = errno;
      return R::Error("perf_event_open(cpu-clock, cpu " + std::to_string(cpu) +
                      ") failed: " + ErrnoText(err) +
                      ". Check /proc/sys/kernel/perf_event_paranoid (kiln-agent needs root or\n"
                      "  CAP_PERFMON) and that the kernel has CONFIG_PERF_EVENTS.");
    }
    s->perf_fds_.push_back(fd);
    bpf_link* link = bpf_program__attach_perf_event(s->skel_->progs.on_cpu_sample, fd);
    if (!link)
      return R::Error("attaching the sampler to CPU " + std::to_string(cpu) + ": " + ErrnoText(errno));
    s->perf_links_.push_back(link);
  }
  s->skel_->links.on_process_exec = bpf_program__attach(s->skel_->progs.on_process_exec);
  s->skel_->links.on_process_exit = bpf_program__attach(s->skel_->progs.on_process_exit);
  if (!s->skel_->links.on_process_exec || !s->skel_->links.on_process_exit)
    // Not fatal: without them maps are re-read on misses and exits are
    // found by the /proc check after each report.
    std::fprintf(stderr, "kiln-agent: warning: sched_process_exec/exit raw tracepoints not attached (%s)\n",
                 ErrnoText(errno).c_str());

  if (s->off_cpu_) {
    s->skel_->links.on_sched_switch = bpf_program__attach(s->skel_->progs.on_sched_switch);
    if (!s->skel_->links.on_sched_switch)
      return R::Error("attaching the off-CPU program to the sched_switch raw tracepoint: " + ErrnoText(errno));
  }

  s->ring_ = ring_buffer__new(bpf_map__fd(s->skel_->maps.events), &BpfSampler::OnRecord, s.get(), nullptr);
  if (!s->ring_) return R::Error("cannot map the BPF ring buffer: " + ErrnoText(errno));
  return s;
}

void BpfSampler::Detach() {
  for (bpf_link* link : perf_links_) bpf_link__destroy(link);
  perf_links_.clear();
  for (int fd : perf_fds_) close(fd);
  perf_fds_.clear();
  if (skel_) sampler_bpf::detach(skel_);
}

BpfSampler::~BpfSampler() {
  Detach();
  if (ring_) ring_buffer__free(ring_);
  if (skel_) sampler_bpf::destroy(skel_);
}

int BpfSampler::OnRecord(void* ctx, void* data, std::size_t size) {
  static_cast<BpfSampler*>(ctx)->handler_(data, size);
  return 0;
}

int BpfSampler::Poll(std::chrono::milliseconds timeout) {
  int woke = ring_buffer__poll(ring_, static_cast<int>(timeout.count()));
  if (woke < 0) return woke;
  // The BPF side wakes us only when the buffer fills up; on a timeout the
  // records are there but epoll did not report them.
  int drained = ring_buffer__consume(ring_);
  if (drained < 0) return drained;
  return woke + drained;
}

UnwindMapFds BpfSampler::unwind_maps() const {
  UnwindMapFds fds;
  fds.rows = bpf_map__fd(skel_->maps.unwind_rows);
  fds.infos = bpf_map__fd(skel_->maps.unwind_infos);
  fds.files = bpf_map__fd(skel_->maps.unwind_files);
  fds.mappings = bpf_map__fd(skel_->maps.proc_mappings);
  fds.process_state = bpf_map__fd(skel_->maps.proc_state);
  fds.row_capacity = sizes_.rows;
  fds.file_capacity = sizes_.files;
  return fds;
}

PythonMapFds BpfSampler::python_maps() const {
  PythonMapFds fds;
  fds.procs = bpf_map__fd(skel_->maps.py_procs);
  fds.threads = bpf_map__fd(skel_->maps.py_threads);
  return fds;
}

WalkStats BpfSampler::walk_stats() const {
  WalkStats w;
  for (auto& v : skel_->bss->walk_ends) w.ends.push_back(__atomic_load_n(&v, __ATOMIC_RELAXED));
  w.cfi_frames = __atomic_load_n(&skel_->bss->cfi_frames, __ATOMIC_RELAXED);
  w.fp_frames = __atomic_load_n(&skel_->bss->fp_frames, __ATOMIC_RELAXED);
  w.py_frames = __atomic_load_n(&skel_->bss->py_frames, __ATOMIC_RELAXED);
  w.py_thread_unknown = __atomic_load_n(&skel_->bss->py_thread_unknown, __ATOMIC_RELAXED);
  w.py_thread_stale = __atomic_load_n(&skel_->bss->py_thread_stale, __ATOMIC_RELAXED);
  w.py_read_failed = __atomic_load_n(&skel_->bss->py_read_failed, __ATOMIC_RELAXED);
  w.py_chain_loops = __atomic_load_n(&skel_->bss->py_chain_loops, __ATOMIC_RELAXED);
  return w;
}

std::size_t BpfSampler::map_memory_bytes() const {
  // Rows and files: preallocated arrays. Trie nodes: key + value + ~48
  // bytes of node each, at the bound. Hash: key + value + ~64 bytes each.
  return ring_bytes_ + std::size_t{sizes_.rows} * sizeof(__u32) +
         std::size_t{KILN_UNWIND_INFOS} * sizeof(kiln_unwind_info) +
         std::size_t{sizes_.files} * sizeof(kiln_unwind_file) +
         std::size_t{sizes_.mapping_entries} * (sizeof(kiln_mapping_key) + sizeof(kiln_unwind_mapping) + 48) +
         std::size_t{sizes_.processes} * (8 + 64) +
         std::size_t{sizes_.python_processes} * (4 + sizeof(kiln_py_proc) + 64) +
         std::size_t{sizes_.python_threads} * (4 + 8 + 64) +
         cpus_.size() * sizeof(kiln_sample_event) * 2;
}

std::uint64_t BpfSampler::sampled_events() const {
  return __atomic_load_n(&skel_->bss->sampled_events, __ATOMIC_RELAXED);
}

std::uint64_t BpfSampler::off_cpu_recorded() const {
  return __atomic_load_n(&skel_->bss->offcpu_recorded, __ATOMIC_RELAXED);
}

std::uint64_t BpfSampler::off_cpu_dropped() const {
  return __atomic_load_n(&skel_->bss->offcpu_dropped, __ATOMIC_RELAXED);
}

std::uint64_t BpfSampler::dropped_events() const {
  return __atomic_load_n(&skel_->bss->dropped_events, __ATOMIC_RELAXED);
}

void BpfSampler::ProgramRunStats(std::uint64_t* run_time_ns, std::uint64_t* run_count) const {
  *run_time_ns = 0;
  *run_count = 0;
  for (bpf_program* prog :
       {skel_->progs.on_cpu_sample, skel_->progs.unwind_user, skel_->progs.on_sched_switch,
        skel_->progs.unwind_user_offcpu, skel_->progs.on_process_exec, skel_->progs.on_process_exit}) {
    bpf_prog_info info{};
    __u32 len = sizeof(info);
    if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len) == 0) {
      *run_time_ns += info.run_time_ns;
      *run_count += info.run_cnt;
    }
  }
}

}  // namespace kiln::agent
