#include "process_tracker.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <utility>
#include <vector>

namespace kiln::agent {
namespace {

// /proc files report size 0, so read until EOF. Plain read(2): these are
// read for every new process, and iostreams cost more than the read.
std::string ReadWholeFile(const std::string& path) {
  std::string out;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[16384];
  while (true) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  close(fd);
  return out;
}

std::string ReadLink(const std::string& path) {
  char buf[4096];
  ssize_t n = readlink(path.c_str(), buf, sizeof(buf) - 1);
  if (n <= 0) return {};
  return std::string(buf, static_cast<std::size_t>(n));
}

std::string Basename(std::string_view path) {
  std::size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

bool IsHex64(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// A re-read that found something resets the wait to `min`; one that found
// nothing doubles it, up to `max`.
std::chrono::steady_clock::duration NextBackoff(std::chrono::steady_clock::duration current, bool found,
                                                std::chrono::steady_clock::duration min,
                                                std::chrono::steady_clock::duration max) {
  if (found) return min;
  return std::min(std::max(current * 2, min), max);
}

}  // namespace

std::string ContainerIdFromCgroup(std::string_view text) {
  // Lines look like "0::/system.slice/docker-<64 hex>.scope" or
  // "12:cpu:/kubepods/burstable/pod.../<64 hex>". Take the last 64-hex run in
  // any path component, after stripping known prefixes and ".scope".
  std::string found;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t end = text.find_first_of("/\n", i);
    if (end == std::string_view::npos) end = text.size();
    std::string_view part = text.substr(i, end - i);
    if (part.ends_with(".scope")) part.remove_suffix(6);
    if (std::size_t dash = part.rfind('-'); dash != std::string_view::npos && part.size() - dash - 1 == 64)
      part = part.substr(dash + 1);
    if (std::size_t colon = part.rfind(':'); colon != std::string_view::npos && part.size() - colon - 1 == 64)
      part = part.substr(colon + 1);
    if (IsHex64(part)) found = std::string(part);
    i = end + 1;
  }
  return found;
}

ProcessTracker::ProcessTracker(ExecutableCache& cache, std::string proc_root)
    : cache_(cache), proc_root_(std::move(proc_root)) {}

void ProcessTracker::ReadIdentity(ProcessInfo& p, std::string_view comm) {
  std::string base = proc_root_ + "/" + std::to_string(p.pid);
  p.executable_path = ReadLink(base + "/exe");
  constexpr std::string_view kDeleted = " (deleted)";
  if (p.executable_path.ends_with(kDeleted))
    p.executable_path.resize(p.executable_path.size() - kDeleted.size());
  if (p.executable_path.empty()) {
    // Kernel threads have no exe link; so do processes that already exited,
    // which the maps read below tells apart.
    p.kernel_thread = true;
    p.executable_name = std::string(comm);
  } else {
    p.kernel_thread = false;
    p.executable_name = Basename(p.executable_path);
  }
  p.container_id = ContainerIdFromCgroup(ReadWholeFile(base + "/cgroup"));
}

void ProcessTracker::ReadMaps(ProcessInfo& p) {
  ++maps_reads_;
  p.maps_read_at = std::chrono::steady_clock::now();
  std::string path = proc_root_ + "/" + std::to_string(p.pid) + "/maps";
  auto parsed = ParseProcMaps(ReadWholeFile(path), path);
  if (!parsed) return;  // gone, or unreadable: keep what we had
  // Keep already-resolved mappings whose range and file did not change.
  std::vector<std::shared_ptr<const Mapping>> mappings(parsed->size());
  std::vector<std::shared_ptr<const ExecutableEntry>> executables(parsed->size());
  for (std::size_t i = 0; i < parsed->size(); ++i) {
    const MapsEntry& e = (*parsed)[i];
    const MapsEntry* old = FindMapping(p.maps, e.start);
    if (old && old->start == e.start && old->end == e.end && old->inode == e.inode &&
        old->file_offset == e.file_offset) {
      std::size_t j = static_cast<std::size_t>(old - p.maps.data());
      mappings[i] = p.mappings[j];
      executables[i] = p.executables[j];
    }
  }
  if (!parsed->empty() && p.kernel_thread && !p.executable_path.empty()) p.kernel_thread = false;
  p.maps = std::move(parsed).value();
  p.mappings = std::move(mappings);
  p.executables = std::move(executables);
}

ProcessInfo& ProcessTracker::Get(std::uint32_t pid, std::string_view comm) {
  auto [it, inserted] = processes_.try_emplace(pid);
  ProcessInfo& p = it->second;
  if (inserted) {
    p.pid = pid;
    ReadIdentity(p, comm);
    if (!p.kernel_thread) ReadMaps(p);
  }
  return p;
}

UserAddress ProcessTracker::ResolveUserAddress(ProcessInfo& p, std::uint64_t address) {
  UserAddress out;
  out.elf_vaddr = address;
  const MapsEntry* e = FindMapping(p.maps, address);
  // User space on x86-64 and arm64 lives in [64 KiB, 2^47); anything else
  // is a broken frame-pointer chain, not a new mapping.
  constexpr std::uint64_t kMinUserAddress = 0x10000, kMaxUserAddress = 1ULL << 47;
  bool plausible = address >= kMinUserAddress && address < kMaxUserAddress;
  auto now = std::chrono::steady_clock::now();
  if (!e && plausible && !p.exited && now - p.maps_read_at >= p.maps_backoff) {
    std::size_t before = p.maps.size();
    ReadMaps(p);
    e = FindMapping(p.maps, address);
    bool found_new = e != nullptr || p.maps.size() != before;
    p.maps_backoff = NextBackoff(p.maps_backoff, found_new, kMapsRereadMin, kMapsRereadMax);
  }
  if (!e) return out;
  std::size_t i = static_cast<std::size_t>(e - p.maps.data());
  if (e->path == "[vdso]") {
    // The vDSO is an ELF image linked at 0 with no file behind it: name the
    // mapping so viewers show "[vdso]+offset" rather than a raw address.
    static const auto kVdso =
        std::make_shared<const ExecutableFile>(ExecutableFile{"[vdso]", "[vdso]", "", ""});
    if (!p.mappings[i]) {
      auto mapping = std::make_shared<Mapping>();
      mapping->start = e->start;
      mapping->limit = e->end;
      mapping->file = kVdso;
      p.mappings[i] = std::move(mapping);
    }
    out.mapping = p.mappings[i];
    out.elf_vaddr = address - e->start;
    return out;
  }
  if (!e->IsFile() || !EnsureMapping(p, i)) return out;
  out.mapping = p.mappings[i];
  out.executable = p.executables[i];
  out.elf_vaddr = out.executable->elf.FileOffsetToVaddr(address - e->start + e->file_offset);
  return out;
}

bool ProcessTracker::EnsureMapping(ProcessInfo& p, std::size_t i) {
  if (p.mappings[i]) return true;
  const MapsEntry* e = &p.maps[i];
  if (!e->IsFile()) return false;
  // Open through the process's root so container files resolve; fall back
  // to map_files, which also reaches deleted files.
  std::string base = proc_root_ + "/" + std::to_string(p.pid);
  auto entry = cache_.Identify(base + "/root" + e->path, e->path);
  if (!entry) {
    char range[64];
    std::snprintf(range, sizeof(range), "/map_files/%llx-%llx", static_cast<unsigned long long>(e->start),
                  static_cast<unsigned long long>(e->end));
    entry = cache_.Identify(base + range, e->path);
  }
  if (!entry) return false;
  auto mapping = std::make_shared<Mapping>();
  mapping->start = e->start;
  mapping->limit = e->end;
  mapping->file_offset = e->file_offset;
  mapping->file = (*entry)->file;
  p.mappings[i] = std::move(mapping);
  p.executables[i] = *entry;
  return true;
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> ExecutableRanges(const std::vector<MapsEntry>& maps) {
  // What the unwinder loads: the executable ranges. ld.so maps a library
  // and then changes protections, so the number of entries alone can stay
  // the same while a range becomes executable.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  for (const MapsEntry& e : maps)
    if (e.executable) ranges.emplace_back(e.start, e.end);
  return ranges;
}

bool ProcessTracker::RereadMapsIfDue(ProcessInfo& p) {
  if (p.exited || p.kernel_thread) return false;
  // Compared with what the unwinder last loaded, not with the maps as they
  // were before this call: ResolveUserAddress re-reads the maps too (for an
  // off-CPU stack resolved a second after it was taken, say), and a library
  // it saw first would otherwise never reach the unwinder.
  if (ExecutableRanges(p.maps) != p.unwind_ranges) {
    p.unwind_backoff = kUnwindRereadMin;
    return true;
  }
  auto now = std::chrono::steady_clock::now();
  if (now - p.maps_read_at < p.unwind_backoff) return false;
  ReadMaps(p);
  bool changed = ExecutableRanges(p.maps) != p.unwind_ranges;
  p.unwind_backoff = NextBackoff(p.unwind_backoff, changed, kUnwindRereadMin, kUnwindRereadMax);
  return changed;
}

void ProcessTracker::OnExec(std::uint32_t pid) {
  auto it = processes_.find(pid);
  if (it == processes_.end()) return;
  // The old image's samples were resolved already (events are in order), so
  // forget everything and read the new image on its first sample.
  processes_.erase(it);
}

void ProcessTracker::OnExit(std::uint32_t pid) {
  if (auto it = processes_.find(pid); it != processes_.end()) it->second.exited = true;
}

void ProcessTracker::Sweep() {
  for (auto it = processes_.begin(); it != processes_.end();) {
    // An exit event can be lost when the ring buffer is full; the /proc check
    // catches those too.
    bool gone =
        it->second.exited || access((proc_root_ + "/" + std::to_string(it->first)).c_str(), F_OK) != 0;
    if (gone)
      it = processes_.erase(it);
    else
      ++it;
  }
  cache_.Sweep();
}

}  // namespace kiln::agent
