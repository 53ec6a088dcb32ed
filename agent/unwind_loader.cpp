#include "unwind_loader.h"

#include <bpf/bpf.h>
#include <fcntl.h>
#include <malloc.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <utility>

#include "bpf/unwind_abi.h"
#include "elf_file.h"
#include "unwind_table.h"

namespace kiln::agent {
namespace {

constexpr std::uint32_t kProcessLoaded = KILN_PROCESS_LOADED;
constexpr std::uint32_t kVdsoBuildLimit = 1u << 20;

std::vector<std::uint8_t> MappingKey(std::uint32_t pid, std::uint32_t prefix_bits, std::uint64_t address) {
  kiln_mapping_key key{};
  key.prefix_len = KILN_MAPPING_KEY_PID_BITS + prefix_bits;
  key.pid = __builtin_bswap32(pid);
  key.address = __builtin_bswap64(address);
  std::vector<std::uint8_t> bytes(sizeof(key));
  std::memcpy(bytes.data(), &key, sizeof(key));
  return bytes;
}

// Our own vDSO: every 64-bit process on this kernel maps the same image.
std::vector<std::uint8_t> ReadOwnVdso() {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    if (line.find("[vdso]") == std::string::npos) continue;
    unsigned long long start = 0, end = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx", &start, &end) != 2 || end <= start) break;
    if (start != getauxval(AT_SYSINFO_EHDR) || end - start > kVdsoBuildLimit) break;
    const auto* p = reinterpret_cast<const std::uint8_t*>(start);
    return std::vector<std::uint8_t>(p, p + (end - start));
  }
  return {};
}

std::string DebugFileFor(const std::string& build_id) {
  std::string path = DebugFilePathForBuildId(build_id);
  return !path.empty() && access(path.c_str(), R_OK) == 0 ? path : std::string();
}

}  // namespace

std::vector<std::pair<std::uint32_t, std::uint64_t>> CoverRange(std::uint64_t start, std::uint64_t end) {
  std::vector<std::pair<std::uint32_t, std::uint64_t>> blocks;
  while (start < end) {
    // The largest aligned block at `start` that does not pass `end`.
    int bits = start == 0 ? 63 : __builtin_ctzll(start);
    while (bits > 0 && (bits >= 64 || start + (1ULL << bits) > end || start + (1ULL << bits) < start)) --bits;
    blocks.push_back({static_cast<std::uint32_t>(64 - bits), start});
    start += 1ULL << bits;
  }
  return blocks;
}

UnwindLoader::UnwindLoader(ProcessTracker& processes, UnwindMapFds fds)
    : processes_(processes), fds_(fds), space_(fds.row_capacity) {
  stats_.row_capacity = fds_.row_capacity;
  for (std::uint32_t s = fds_.file_capacity; s > 0; --s) free_slots_.push_back(s - 1);
  vdso_image_ = ReadOwnVdso();
  builder_ = std::thread([this] { BuildLoop(); });
}

UnwindLoader::~UnwindLoader() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  builder_.join();
  for (const BuildJob& job : jobs_) {
    if (job.fd >= 0) close(job.fd);
    if (job.debug_fd >= 0) close(job.debug_fd);
  }
}

void UnwindLoader::Refuse(const std::string& name, const std::string& reason) {
  // Files, not attempts: one that did not fit is tried again and again.
  if (stats_.refused[name.empty() ? reason : name + ": " + reason]++ == 0) stats_.refused_by_reason[reason]++;
}

std::optional<std::uint32_t> RowSpace::Allocate(std::uint32_t count) {
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < count) continue;
    std::uint32_t first = it->first, rest = it->second - count;
    free_.erase(it);
    if (rest > 0) free_[first + count] = rest;
    return first;
  }
  return std::nullopt;
}

void RowSpace::Free(std::uint32_t first, std::uint32_t count) {
  if (count == 0) return;
  auto [it, inserted] = free_.emplace(first, count);
  // Merge with the neighbours so long runs stay available.
  if (auto next = std::next(it); next != free_.end() && it->first + it->second == next->first) {
    it->second += next->second;
    free_.erase(next);
  }
  if (it != free_.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second == it->first) {
      prev->second += it->second;
      free_.erase(it);
    }
  }
}

std::vector<std::uint32_t> RowSpace::Pack(const std::vector<std::pair<std::uint32_t, std::uint32_t>>& runs) {
  std::vector<std::uint32_t> to;
  std::uint32_t cursor = 0;
  for (const auto& [first, count] : runs) {
    to.push_back(cursor);
    cursor += count;
  }
  free_.clear();
  if (cursor < capacity_) free_[cursor] = capacity_ - cursor;
  return to;
}

std::uint32_t RowSpace::free_rows() const {
  std::uint32_t n = 0;
  for (const auto& [first, count] : free_) n += count;
  return n;
}

bool UnwindLoader::AllocateRows(std::uint32_t count, std::uint32_t* first) {
  for (;;) {
    if (std::optional<std::uint32_t> at = space_.Allocate(count)) {
      *first = *at;
      return true;
    }
    if (EvictOneUnused() || EvictIdle()) continue;
    // Enough rows are free, but in pieces between tables in use: close the
    // gaps once, then the first fit is the free run at the end.
    if (space_.free_rows() < count || space_.free_runs() <= 1) return false;
    Defragment();
  }
}

void UnwindLoader::WriteFileRecord(std::uint32_t slot, const kiln_unwind_file& record) {
  bpf_map_update_elem(fds_.files, &slot, &record, BPF_ANY);
}

void UnwindLoader::WriteRows(std::uint32_t first, const std::uint32_t* words, std::uint32_t n) {
  // A syscall per kWriteChunk rows (keys for a whole large table would be
  // MBs); element by element where the kernel has no batch operations for
  // arrays (before 5.6).
  std::vector<std::uint32_t> keys(std::min(n, kWriteChunk));
  for (std::uint32_t done = 0; done < n; done += kWriteChunk) {
    const std::uint32_t m = std::min(kWriteChunk, n - done);
    for (std::uint32_t i = 0; i < m; ++i) keys[i] = first + done + i;
    __u32 count = m;
    if (bpf_map_update_batch(fds_.rows, keys.data(), words + done, &count, nullptr) != 0) {
      for (std::uint32_t i = 0; i < m; ++i) bpf_map_update_elem(fds_.rows, &keys[i], &words[done + i], BPF_ANY);
    }
  }
}

void UnwindLoader::Defragment() {
  std::vector<FileTable*> loaded;
  for (auto& [key, t] : tables_)
    if (t.row_count > 0) loaded.push_back(&t);
  std::sort(loaded.begin(), loaded.end(), [](const FileTable* a, const FileTable* b) { return a->first_row < b->first_row; });
  std::vector<std::pair<std::uint32_t, std::uint32_t>> runs;
  for (const FileTable* t : loaded) runs.emplace_back(t->first_row, t->row_count);
  std::vector<std::uint32_t> to = space_.Pack(runs);
  std::vector<std::uint32_t> words, keys;
  for (std::size_t i = 0; i < loaded.size(); ++i) {
    FileTable* t = loaded[i];
    const std::uint32_t n = t->row_count;
    if (t->first_row == to[i]) continue;
    // Read the run back (we keep no copy: it would double the agent's
    // RSS), hide the table while it moves (walks take frame pointers for
    // that moment, as for a table not loaded yet), then show it at its new
    // place. Moving down in order never writes over a run not yet moved.
    words.assign(n, 0);
    keys.resize(n);
    // The batch token is the key before the first one read (none: from 0).
    __u32 count = n, before = t->first_row - 1, next = 0;
    bool read = bpf_map_lookup_batch(fds_.rows, t->first_row == 0 ? nullptr : &before, &next, keys.data(),
                                     words.data(), &count, nullptr) == 0 &&
                count == n && keys.front() == t->first_row;
    for (std::uint32_t r = 0; !read && r < n; ++r) {
      std::uint32_t key = t->first_row + r;
      bpf_map_lookup_elem(fds_.rows, &key, &words[r]);
    }
    WriteFileRecord(t->slot, {});
    WriteRows(to[i], words.data(), n);
    t->first_row = to[i];
    WriteFileRecord(t->slot, {t->first_row, n, 0, t->first_page});
  }
  ++stats_.defragmented;
}

void UnwindLoader::Evict(std::unordered_map<std::string, FileTable>::iterator it) {
  FileTable& t = it->second;
  if (t.lru != unused_lru_.end()) unused_lru_.erase(t.lru);
  WriteFileRecord(t.slot, {});
  space_.Free(t.first_row, t.row_count);
  stats_.rows_in_use -= t.row_count;
  if (t.row_count > 0) --stats_.tables_loaded;
  free_slots_.push_back(t.slot);
  tables_.erase(it);
  ++stats_.tables_evicted;
}

bool UnwindLoader::EvictOneUnused() {
  if (unused_lru_.empty()) return false;
  Evict(tables_.find(unused_lru_.front()));
  return true;
}

bool UnwindLoader::LoadedProcess::Running(std::chrono::steady_clock::time_point now) const {
  if (now - last_sampled >= kHotWindow) return false;
  const std::uint32_t previous = now - window_start < 2 * kHotWindow ? previous_window_samples : 0;
  return window_samples + previous >= kReloadSamples;
}

bool UnwindLoader::EvictIdle() {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point now = Clock::now();
  // When each table's processes were last sampled, and whether one of them
  // runs. A process that woke for a moment (a sleeper's timer: a sample or
  // two) does not keep its rows from one that runs, the same measure that
  // decides whether an evicted table is built again (NoteSampled).
  struct Use {
    Clock::time_point last{};
    bool running = false;
  };
  std::unordered_map<std::string, Use> seen;
  for (const auto& [pid, lp] : loaded_) {
    const bool running = lp.Running(now);
    for (const std::string& key : lp.files) {
      Use& u = seen[key];
      u.last = std::max(u.last, lp.last_sampled);
      u.running = u.running || running;
    }
  }
  auto coldest = tables_.end();
  Clock::time_point oldest = Clock::time_point::max();
  for (auto it = tables_.begin(); it != tables_.end(); ++it) {
    if (it->second.row_count == 0) continue;  // nothing to give
    auto s = seen.find(it->first);
    const Use use = s == seen.end() ? Use{} : s->second;
    if (use.running) continue;
    if (coldest == tables_.end() || use.last < oldest) {
      oldest = use.last;
      coldest = it;
    }
  }
  if (coldest == tables_.end()) return false;
  FileTable& t = coldest->second;
  // "No rows" first, so no walk reads rows that go to another file; the
  // first walk that misses them wakes us.
  WriteFileRecord(t.slot, {0, 0, KILN_FILE_WAKE_ON_MISS, 0});
  space_.Free(t.first_row, t.row_count);
  stats_.rows_in_use -= t.row_count;
  --stats_.tables_loaded;
  t.first_row = t.row_count = 0;
  t.evicted = true;
  t.retry_at = {};  // built again as soon as one of its processes runs
  t.retry_backoff = kRetryAfter;
  ++stats_.tables_evicted_idle;
  return true;
}

void UnwindLoader::NoteSampled(ProcessInfo& process, bool table_missing) {
  auto it = loaded_.find(process.pid);
  if (it == loaded_.end()) return;
  const auto now = std::chrono::steady_clock::now();
  LoadedProcess& lp = it->second;
  lp.last_sampled = now;
  if (now - lp.window_start >= kHotWindow) {
    lp.previous_window_samples = now - lp.window_start < 2 * kHotWindow ? lp.window_samples : 0;
    lp.window_samples = 0;
    lp.window_start = now;
  }
  ++lp.window_samples;
  if (!table_missing) return;
  // A process sampled once or twice woke for a moment (a sleeper's timer):
  // building its tables again would take rows from the processes that run,
  // and keep them for kHotWindow. One that keeps running gets them within
  // a few samples.
  if (!lp.Running(now)) {
    // The walker wakes us on a miss once: arm it again, so that the next
    // samples arrive now, not at the consumer's next timed poll.
    for (const std::string& key : lp.files) {
      auto t = tables_.find(key);
      if (t == tables_.end() || !t->second.evicted || t->second.row_count != 0) continue;
      WriteFileRecord(t->second.slot, {0, 0, KILN_FILE_WAKE_ON_MISS, 0});
    }
    return;
  }
  for (const std::string& key : lp.files) {
    auto t = tables_.find(key);
    if (t != tables_.end() && t->second.evicted && now >= t->second.retry_at) {
      LoadProcess(process);  // TableFor builds the evicted ones again
      return;
    }
  }
}

bool UnwindLoader::QueueBuild(const std::string& key, const std::string& name, const std::string& open_path,
                              const std::string& debug_path, const void* image, std::size_t image_size) {
  BuildJob job{key, name, image, image_size};
  if (!image) {
    // Opened here, while the process that maps it exists: its
    // /proc/PID/root path may be gone by the time the build thread runs.
    job.fd = open(open_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (job.fd < 0) {
      // Not remembered: the next process that maps the file tries again.
      // ENOENT is a process that exited meanwhile, not a refusal to report.
      if (errno == ENOENT || errno == ESRCH)
        ++stats_.open_gone;
      else
        Refuse(name, std::string("open: ") + std::strerror(errno));
      return false;
    }
    // A separate debug file's .debug_frame fills what .eh_frame leaves out.
    job.debug_fd = debug_path.empty() ? -1 : open(debug_path.c_str(), O_RDONLY | O_CLOEXEC);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(job));
  }
  work_cv_.notify_one();
  ++builds_pending_;
  return true;
}

UnwindLoader::FileTable* UnwindLoader::TableFor(const std::string& key, const std::string& name,
                                                const std::string& open_path, const std::string& debug_path,
                                                const void* image, std::size_t image_size) {
  if (auto it = tables_.find(key); it != tables_.end()) {
    FileTable& t = it->second;
    if (t.users == 0) unused_lru_.erase(t.lru);
    t.lru = unused_lru_.end();
    if (t.evicted && std::chrono::steady_clock::now() >= t.retry_at &&
        QueueBuild(key, name, open_path, debug_path, image, image_size)) {
      t.evicted = false;
      ++stats_.tables_reloaded;
    }
    return &t;
  }
  if (free_slots_.empty() && !EvictOneUnused()) {
    Refuse(name, "no free file slot");
    return nullptr;
  }
  if (!QueueBuild(key, name, open_path, debug_path, image, image_size)) return nullptr;
  FileTable t;
  t.slot = free_slots_.back();
  free_slots_.pop_back();
  t.lru = unused_lru_.end();
  // Until its rows are in, the slot says "not loaded": frame pointers.
  WriteFileRecord(t.slot, {});
  return &tables_.emplace(key, t).first->second;
}

// The build thread: tables are built off the main thread, so a 100 MB
// library does not hold up loading the processes that map only small ones.
void UnwindLoader::BuildLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    work_cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
    if (stopping_) return;
    BuildJob job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    auto started = std::chrono::steady_clock::now();
    // A table larger than the whole map is refused while it is built.
    UnwindTableLimits limits;
    limits.max_rows = std::min<std::size_t>(limits.max_rows, fds_.row_capacity);
    limits.too_many_rows = "larger than all of unwind_rows (raise -unwind-table-rows)";
    // Compacted as they are made: a large file's full rows would double
    // the agent's RSS while it is built (libLLVM's 0.98 M rows).
    Result<UnwindTable> built = job.image ? BuildUnwindTableFromMemory(job.image, job.image_size, limits, &infos_)
                                          : BuildUnwindTable(job.fd, job.debug_fd, limits, &infos_);
    if (job.fd >= 0) close(job.fd);
    if (job.debug_fd >= 0) close(job.debug_fd);
    job.fd = job.debug_fd = -1;
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    lock.lock();
    done_.push_back(BuildDone{std::move(job), std::move(built), seconds});
  }
}

std::size_t UnwindLoader::Poll() {
  std::deque<BuildDone> done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    done.swap(done_);
  }
  for (BuildDone& d : done) {
    --builds_pending_;
    stats_.build_seconds += d.seconds;
    auto it = tables_.find(d.job.key);
    if (it == tables_.end()) continue;  // evicted while it was being built
    if (it->second.users == 0) {
      // Every process that mapped it is gone: its rows would only wait for
      // eviction (and making room for them could evict this very entry).
      // The next process that maps the file builds it again.
      Evict(it);
      continue;
    }
    FileTable& t = it->second;
    Result<UnwindTable>& built = d.table;
    if (!built) {
      Refuse(d.job.name, built.error());
      continue;
    }
    // Rules are never taken back: a rule met once is met again (a host's
    // compilers emit a few thousand), and the map holds 64K of them. Every
    // rule this table uses was interned before its build finished.
    for (const kiln_unwind_info& info : infos_.infos(stats_.unwind_infos)) {
      auto key = static_cast<std::uint32_t>(stats_.unwind_infos++);
      bpf_map_update_elem(fds_.infos, &key, &info, BPF_ANY);
    }
    std::deque<std::uint32_t>& words = built->compact.words;
    if (words.size() > fds_.row_capacity) {
      Refuse(d.job.name, "larger than all of unwind_rows (raise -unwind-table-rows)");
      continue;
    }
    auto n = static_cast<std::uint32_t>(words.size());
    if (!AllocateRows(n, &t.first_row)) {
      // Every row belongs to a process that runs (LoadedProcess::Running): tried
      // again when its process runs, later and later while that lasts.
      Refuse(d.job.name, "unwind_rows full of tables in use (raise -unwind-table-rows)");
      t.evicted = true;
      t.retry_at = std::chrono::steady_clock::now() + t.retry_backoff;
      t.retry_backoff = std::min<std::chrono::steady_clock::duration>(t.retry_backoff * 2, std::chrono::minutes(1));
      continue;
    }
    t.retry_backoff = kRetryAfter;
    ++stats_.tables_built;
    // In pieces: the rows are a deque, and one buffer of them all would
    // hold them twice.
    std::vector<std::uint32_t> piece;
    for (std::uint32_t done = 0; done < n; done += kWriteChunk) {
      piece.assign(words.begin() + done, words.begin() + std::min(n, done + kWriteChunk));
      WriteRows(t.first_row + done, piece.data(), static_cast<std::uint32_t>(piece.size()));
    }
    t.row_count = n;
    stats_.rows_in_use += n;
    ++stats_.tables_loaded;
    t.first_page = built->compact.first_page;
    WriteFileRecord(t.slot, {t.first_row, t.row_count, 0, t.first_page});
    words = std::deque<std::uint32_t>();
    // A big library's table is tens of MB while it is built; give it back.
    if (n > 100000) malloc_trim(0);
  }
  return done.size();
}

void UnwindLoader::Release(LoadedProcess& p) {
  for (const auto& key : p.keys) bpf_map_delete_elem(fds_.mappings, key.data());
  stats_.mapping_entries -= p.keys.size();
  for (const std::string& key : p.files) {
    auto it = tables_.find(key);
    if (it == tables_.end() || it->second.users == 0) continue;
    if (--it->second.users == 0) it->second.lru = unused_lru_.insert(unused_lru_.end(), key);
  }
  p.keys.clear();
  p.files.clear();
}

void UnwindLoader::LoadProcess(ProcessInfo& process) {
  LoadedProcess& lp = loaded_[process.pid];
  Release(lp);
  ++stats_.process_loads;
  for (std::size_t i = 0; i < process.maps.size(); ++i) {
    const MapsEntry& e = process.maps[i];
    if (!e.executable) continue;
    FileTable* table = nullptr;
    std::string key;
    kiln_unwind_mapping value{};
    if (e.path == "[vdso]") {
      if (vdso_image_.empty()) continue;
      key = "[vdso]";
      table = TableFor(key, "[vdso]", "", "", vdso_image_.data(), vdso_image_.size());
      value.flags = KILN_MAPPING_VDSO;
      value.bias = e.start;  // the vDSO is linked at 0
    } else if (processes_.EnsureMapping(process, i)) {
      const ExecutableEntry& exe = *process.executables[i];
      key = exe.file->htlhash.empty() ? exe.open_path : exe.file->htlhash;
      table = TableFor(key, exe.file->path, exe.open_path, DebugFileFor(exe.file->gnu_build_id), nullptr, 0);
      value.bias = e.start - exe.elf.FileOffsetToVaddr(e.file_offset);
    } else if (e.IsAnonymousCode()) {
      value.flags = KILN_MAPPING_JIT;  // anonymous code: walked with frame pointers
    } else {
      continue;  // a file that cannot be opened, [vsyscall]
    }
    if (table) {
      value.file_slot = table->slot;
      ++table->users;  // TableFor took it off the unused list
      lp.files.push_back(key);
    } else if (!(value.flags & KILN_MAPPING_JIT)) {
      continue;
    }
    for (auto [bits, start] : CoverRange(e.start, e.end)) {
      std::vector<std::uint8_t> k = MappingKey(process.pid, bits, start);
      if (bpf_map_update_elem(fds_.mappings, k.data(), &value, BPF_ANY) != 0) {
        Refuse("", std::string("proc_mappings full: ") + std::strerror(errno));
        continue;
      }
      lp.keys.push_back(std::move(k));
    }
  }
  stats_.mapping_entries += lp.keys.size();
  bpf_map_update_elem(fds_.process_state, &process.pid, &kProcessLoaded, BPF_ANY);
  process.unwind_ranges = ExecutableRanges(process.maps);
  stats_.processes_loaded = loaded_.size();
}

void UnwindLoader::ForgetProcess(std::uint32_t pid) {
  bpf_map_delete_elem(fds_.process_state, &pid);
  auto it = loaded_.find(pid);
  if (it == loaded_.end()) return;
  Release(it->second);
  loaded_.erase(it);
  stats_.processes_loaded = loaded_.size();
}

void UnwindLoader::Sweep() {
  auto alive = [](std::uint32_t pid) { return access(("/proc/" + std::to_string(pid)).c_str(), F_OK) == 0; };
  std::vector<std::uint32_t> gone;
  for (const auto& [pid, p] : loaded_)
    if (!alive(pid)) gone.push_back(pid);
  // Requests the BPF side made for processes that died before we loaded
  // them (or whose exit event was lost) would fill proc_state over time.
  std::uint32_t key = 0, next = 0;
  bool first = true;
  while (bpf_map_get_next_key(fds_.process_state, first ? nullptr : &key, &next) == 0) {
    first = false;
    key = next;
    if (!loaded_.count(next) && !alive(next)) gone.push_back(next);
  }
  for (std::uint32_t pid : gone) ForgetProcess(pid);
}

}  // namespace kiln::agent
