#pragma once
// Live processes the sampler has seen: their executable, container, and
// memory map, so user addresses become (file, ELF virtual address).
//
// Lifecycle: a process is read from /proc the first time one of its samples
// arrives (within a poll period of the sample, so short-lived processes are
// caught); an exec event drops its map; an exit event marks it exited, and
// Sweep() (after each report) forgets exited ones. /proc/PID/maps is re-read
// when a plausible user address falls outside every known mapping (dlopen,
// JIT), at most once per `maps_backoff` per process. The backoff doubles from
// kMapsRereadMin to kMapsRereadMax while re-reads find nothing new: programs
// without frame pointers yield garbage addresses on every sample, and
// re-reading their maps each second would be the agent's main cost.
//
// UnwindLoader (unwind_loader.h) reads the same maps to load a process's
// mappings for the BPF walker.
//
// Main thread only.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "executable_cache.h"
#include "proc_maps.h"
#include "profile_batch.h"

namespace kiln::agent {

struct ProcessInfo {
  std::uint32_t pid = 0;
  bool kernel_thread = false;  // no /proc/PID/exe: a kworker and friends
  bool exited = false;
  std::string executable_path;
  std::string executable_name;
  std::string container_id;
  std::vector<MapsEntry> maps;
  // Parallel to maps: filled on first use of an entry (null = not yet, or
  // the file could not be opened).
  std::vector<std::shared_ptr<const Mapping>> mappings;
  std::vector<std::shared_ptr<const ExecutableEntry>> executables;
  std::chrono::steady_clock::time_point maps_read_at{};
  std::chrono::steady_clock::duration maps_backoff{std::chrono::seconds(1)};
  // RereadMapsIfDue's own: a process loaded for the unwinder just after exec
  // may not have mapped its libraries yet, so it starts short and stays
  // short (a JIT's anonymous code costs one maps read a second at most).
  std::chrono::steady_clock::duration unwind_backoff{std::chrono::milliseconds(10)};
  // The executable ranges UnwindLoader::LoadProcess last loaded (start,
  // end). RereadMapsIfDue compares the maps with these, whoever read them.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> unwind_ranges;
};

// The executable ranges of `maps`, in order: what the unwinder loads.
std::vector<std::pair<std::uint64_t, std::uint64_t>> ExecutableRanges(const std::vector<MapsEntry>& maps);

struct UserAddress {
  std::shared_ptr<const Mapping> mapping;             // null: in no file mapping
  std::shared_ptr<const ExecutableEntry> executable;  // null with mapping
  std::uint64_t elf_vaddr = 0;                        // the raw address when no mapping
};

// The container id in /proc/PID/cgroup text (docker, containerd, cri-o,
// podman: a 64-hex-digit path component), or "".
std::string ContainerIdFromCgroup(std::string_view cgroup_text);

class ProcessTracker {
 public:
  static constexpr auto kMapsRereadMin = std::chrono::seconds(1);
  static constexpr auto kMapsRereadMax = std::chrono::seconds(64);
  static constexpr auto kUnwindRereadMin = std::chrono::milliseconds(10);
  static constexpr auto kUnwindRereadMax = std::chrono::seconds(1);

  // `proc_root` is "/proc" except in tests.
  explicit ProcessTracker(ExecutableCache& cache, std::string proc_root = "/proc");

  // The process, read from /proc on first sight; `comm` names kernel threads.
  ProcessInfo& Get(std::uint32_t pid, std::string_view comm);
  UserAddress ResolveUserAddress(ProcessInfo& process, std::uint64_t address);
  // Identifies the file of maps[index] (once); false if it is no file or
  // cannot be opened. Fills mappings[index] and executables[index].
  bool EnsureMapping(ProcessInfo& process, std::size_t index);
  // For the unwinder: re-reads /proc/PID/maps unless it was read within
  // unwind_backoff (10 ms, doubling to 1 s while nothing changes); true if
  // its executable ranges changed.
  bool RereadMapsIfDue(ProcessInfo& process);

  void OnExec(std::uint32_t pid);
  void OnExit(std::uint32_t pid);
  // Forgets exited processes; call after their samples were reported.
  void Sweep();
  std::size_t size() const { return processes_.size(); }
  std::size_t maps_reads() const { return maps_reads_; }

 private:
  void ReadIdentity(ProcessInfo& p, std::string_view comm);
  void ReadMaps(ProcessInfo& p);

  ExecutableCache& cache_;
  std::string proc_root_;
  std::unordered_map<std::uint32_t, ProcessInfo> processes_;
  std::size_t maps_reads_ = 0;
};

}  // namespace kiln::agent
