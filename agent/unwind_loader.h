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
//   - when the rows are full (a busy desktop maps more code than they
//     hold), the table of the file whose processes were sampled longest ago
//     gives its rows up, if none of them runs (sampled kReloadSamples times
//     in about two kHotWindows, the last within one): rows go to what is
//     being sampled, not to a sleeper that woke for a moment. Its slot stays (the processes'
//     entries point at it, "no rows" to the walker), and when one of them
//     runs again (a few samples, not one moment's wake) the walker says so
//     (KILN_SAMPLE_FLAG_TABLE_MISSING) and the table is built again;
//   - rows in use are 4 bytes each, compacted as they are built; when
//     enough are free but only in pieces between tables in use, the tables
//     are moved together;
//   - a file whose table cannot be built, or does not fit, is remembered
//     with the reason and walked with frame pointers; one that did not fit
//     is tried again (after kRetryAfter, doubling to a minute) when its
//     process is sampled.
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
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "process_tracker.h"
#include "result.h"
#include "unwind_table.h"

namespace kiln::agent {

struct UnwindMapFds {
  int rows = -1;           // ARRAY of __u32: runs of compacted rows (CompactUnwindRows)
  int infos = -1;          // ARRAY of kiln_unwind_info
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
  std::size_t tables_evicted = 0;      // unmapped tables whose rows were needed
  std::size_t tables_evicted_idle = 0; // mapped by processes not sampled lately
  std::size_t tables_reloaded = 0;     // built again when their process ran again
  std::size_t defragmented = 0;        // times the tables were moved together to make one free run
  std::size_t open_gone = 0;           // files whose process exited before they were opened
  std::uint32_t row_capacity = 0;
  std::size_t rows_in_use = 0;        // in unwind_rows now (4 bytes each, page index included)
  std::size_t unwind_infos = 0;       // distinct rules in unwind_infos
  std::size_t tables_loaded = 0;      // with their rows in unwind_rows now
  std::size_t mapping_entries = 0;    // LPM entries now
  double build_seconds = 0;           // spent in BuildUnwindTable
  std::map<std::string, std::size_t> refused;  // "file: reason" -> times
  std::map<std::string, std::size_t> refused_by_reason;  // reason -> files
};

// unwind_rows' free space: runs kept merged, first fit. Pure, for tests.
class RowSpace {
 public:
  explicit RowSpace(std::uint32_t capacity) : capacity_(capacity) {
    if (capacity > 0) free_[0] = capacity;
  }
  // The first of `count` contiguous rows, or nullopt when no free run holds them.
  std::optional<std::uint32_t> Allocate(std::uint32_t count);
  void Free(std::uint32_t first, std::uint32_t count);
  // Where each of `runs` (first, count; in use, sorted by first) goes when
  // they are moved together from row 0 in their order; the free rows are
  // then one run at the end.
  std::vector<std::uint32_t> Pack(const std::vector<std::pair<std::uint32_t, std::uint32_t>>& runs);
  std::uint32_t free_rows() const;
  std::size_t free_runs() const { return free_.size(); }

 private:
  std::uint32_t capacity_;
  std::map<std::uint32_t, std::uint32_t> free_;  // first -> count
};

class UnwindLoader {
 public:
  UnwindLoader(ProcessTracker& processes, UnwindMapFds fds);
  ~UnwindLoader();
  UnwindLoader(const UnwindLoader&) = delete;
  UnwindLoader& operator=(const UnwindLoader&) = delete;

  // How long a sampled process's tables are safe from eviction, and how
  // long a file that did not fit waits before it is tried again.
  static constexpr auto kHotWindow = std::chrono::seconds(2);
  static constexpr auto kRetryAfter = std::chrono::seconds(1);
  // Samples within about two kHotWindows before an evicted table is built again.
  static constexpr std::uint32_t kReloadSamples = 3;
  // Rows written to unwind_rows a syscall at a time.
  static constexpr std::uint32_t kWriteChunk = 65536;

  // Loads (or reloads, after its maps changed) a process's mappings.
  void LoadProcess(ProcessInfo& process);
  // A sample of a loaded process arrived: its tables are in use. With
  // `table_missing` (the walker met a file without rows) its evicted tables
  // are built again, once it has been sampled kReloadSamples times.
  void NoteSampled(ProcessInfo& process, bool table_missing);
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
    std::uint32_t row_count = 0;  // 0: building, refused or evicted (frame pointers)
    std::uint32_t first_page = 0; // kiln_unwind_file's
    std::size_t users = 0;        // loaded processes mapping it
    std::list<std::string>::iterator lru;
    // Rows given up (evicted while mapped, or they did not fit): built
    // again when a process that maps it is sampled, from `retry_at` on.
    bool evicted = false;
    std::chrono::steady_clock::time_point retry_at{};
    std::chrono::steady_clock::duration retry_backoff = kRetryAfter;
  };
  struct LoadedProcess {
    std::vector<std::vector<std::uint8_t>> keys;  // LPM keys written
    std::vector<std::string> files;               // table keys in use
    std::chrono::steady_clock::time_point last_sampled{};
    // Samples in the kHotWindow that started at window_start, and in the one before.
    std::chrono::steady_clock::time_point window_start{};
    std::uint32_t window_samples = 0, previous_window_samples = 0;
    // Sampled in the last kHotWindow, and kReloadSamples times in about two.
    bool Running(std::chrono::steady_clock::time_point now) const;
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
  void WriteRows(std::uint32_t first, const std::uint32_t* words, std::uint32_t n);
  // What the walker reads for a file slot: its run of rows; {} for "not
  // loaded" (frame pointers), flags KILN_FILE_WAKE_ON_MISS for "evicted,
  // tell us when a walk needs it".
  void WriteFileRecord(std::uint32_t slot, const kiln_unwind_file& record);
  // Moves the loaded tables together, leaving one free run at the end.
  void Defragment();
  bool EvictOneUnused();
  // Takes the rows of the table whose processes were sampled longest ago,
  // of those none of whose processes runs; false if there is none.
  bool EvictIdle();
  // Queues `key`'s table to be built (a new entry, or an evicted one).
  bool QueueBuild(const std::string& key, const std::string& name, const std::string& open_path,
                  const std::string& debug_path, const void* image, std::size_t image_size);
  // Frees the entry's slot and rows; the walker sees "not loaded" for it.
  void Evict(std::unordered_map<std::string, FileTable>::iterator it);
  // `name` "" for what is not one file's.
  void Refuse(const std::string& name, const std::string& reason);
  void Release(LoadedProcess& p);

  ProcessTracker& processes_;
  UnwindMapFds fds_;
  std::unordered_map<std::string, FileTable> tables_;
  std::list<std::string> unused_lru_;  // tables no process maps, oldest first
  std::vector<std::uint32_t> free_slots_;
  RowSpace space_;
  std::unordered_map<std::uint32_t, LoadedProcess> loaded_;
  std::vector<std::uint8_t> vdso_image_;
  UnwindInfoTable infos_;  // interned by the builder; stats_.unwind_infos of them are in the map
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
