#pragma once
// Keeps the BPF walker's maps (bpf/unwind_abi.h) in step with the processes
// being sampled:
//   - a process is loaded the first time one of its samples says the BPF
//     side does not know it: each executable mapping gets LPM entries
//     (pid, address block) -> (file slot, load bias), and proc_state says
//     "loaded";
//   - a file's rows are built once (BuildUnwindTable, keyed by the file's
//     htlhash like symbols) and copied into one contiguous run of
//     unwind_rows, shared by every process that maps the file;
//   - exec and exit forget the process's entries; a file no process maps
//     keeps its rows until the space is needed (least recently used first);
//   - a file whose table cannot be built, or does not fit, is remembered
//     with the reason and walked with frame pointers.
//
// Tables are built on a thread of the loader's own; until a file's rows are
// in, its mappings walk with frame pointers. Everything else, and all BPF map
// writes, happen on the main thread: call Poll() from its loop.

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "process_tracker.h"
#include "result.h"
#include "unwind_table.h"

namespace kiln::agent {

struct UnwindMapFds {
  int rows = -1;           // ARRAY of kiln_unwind_row
  int files = -1;          // ARRAY of kiln_unwind_file
  int mappings = -1;       // LPM_TRIE kiln_mapping_key -> kiln_unwind_mapping
  int process_state = -1;  // HASH pid -> KILN_PROCESS_*
  std::uint32_t row_capacity = 0;
  std::uint32_t file_capacity = 0;
};

struct UnwindLoaderStats {
  std::size_t processes_loaded = 0;   // now
  std::size_t process_loads = 0;      // so far, including reloads after dlopen
  std::size_t tables_built = 0;
  std::size_t tables_evicted = 0;
  std::size_t rows_in_use = 0;        // in unwind_rows now
  std::size_t mapping_entries = 0;    // LPM entries now
  double build_seconds = 0;           // spent in BuildUnwindTable
  std::map<std::string, std::size_t> refused;  // "file: reason" -> times
};

class UnwindLoader {
 public:
  UnwindLoader(ProcessTracker& processes, UnwindMapFds fds);
  ~UnwindLoader();
  UnwindLoader(const UnwindLoader&) = delete;
  UnwindLoader& operator=(const UnwindLoader&) = delete;

  // Loads (or reloads, after its maps changed) a process's mappings.
  void LoadProcess(ProcessInfo& process);
  // The process exec'd or exited: its entries go.
  void ForgetProcess(std::uint32_t pid);
  bool IsLoaded(std::uint32_t pid) const { return loaded_.count(pid) != 0; }
  // Loads the tables built since the last call into the maps; how many.
  std::size_t Poll();
  std::size_t builds_pending() const { return builds_pending_; }
  // Forgets processes that are gone (their exit event may have been lost)
  // and requests the BPF side made for processes that died unloaded.
  void Sweep();

  const UnwindLoaderStats& stats() const { return stats_; }

 private:
  struct FileTable {
    std::uint32_t slot = 0;
    std::uint32_t first_row = 0;
    std::uint32_t row_count = 0;  // 0: refused (frame pointers)
    std::size_t users = 0;        // loaded processes mapping it
    std::list<std::string>::iterator lru;
  };
  struct LoadedProcess {
    std::vector<std::vector<std::uint8_t>> keys;  // LPM keys written
    std::vector<std::string> files;               // table keys in use
  };

  // `name` is how the Log names the file when its table is refused.
  struct BuildJob {
    std::string key, name;
    const void* image = nullptr;  // the vDSO, in memory
    std::size_t image_size = 0;
    int fd = -1;        // the file, opened by the main thread; the build closes it
    int debug_fd = -1;  // its separate debug file, or -1
  };
  struct BuildDone {
    BuildJob job;
    Result<UnwindTable> table;
    double seconds = 0;
  };
  void BuildLoop();

  FileTable* TableFor(const std::string& key, const std::string& name, const std::string& open_path,
                      const std::string& debug_path, const void* image, std::size_t image_size);
  bool AllocateRows(std::uint32_t count, std::uint32_t* first);
  void FreeRows(std::uint32_t first, std::uint32_t count);
  bool EvictOneUnused();
  // Frees the entry's slot and rows; the walker sees "not loaded" for it.
  void Evict(std::unordered_map<std::string, FileTable>::iterator it);
  void Refuse(const std::string& reason);
  void Release(LoadedProcess& p);

  ProcessTracker& processes_;
  UnwindMapFds fds_;
  std::unordered_map<std::string, FileTable> tables_;
  std::list<std::string> unused_lru_;  // tables no process maps, oldest first
  std::vector<std::uint32_t> free_slots_;
  std::map<std::uint32_t, std::uint32_t> free_rows_;  // first -> count
  std::unordered_map<std::uint32_t, LoadedProcess> loaded_;
  std::vector<std::uint8_t> vdso_image_;
  UnwindLoaderStats stats_;
  std::size_t builds_pending_ = 0;

  std::mutex mu_;  // guards jobs_, done_, stopping_
  std::condition_variable work_cv_;
  std::deque<BuildJob> jobs_;
  std::deque<BuildDone> done_;
  bool stopping_ = false;
  std::thread builder_;  // last: started after everything it uses
};

// The aligned blocks (prefix length in bits, start) that cover [start, end)
// exactly, as an LPM trie needs them. Pure, for tests.
std::vector<std::pair<std::uint32_t, std::uint64_t>> CoverRange(std::uint64_t start, std::uint64_t end);

}  // namespace kiln::agent
