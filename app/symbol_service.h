// Native symbolization of one store: the work behind the Executables view,
// `kiln symbols add` and the symbols that `kiln --headless` finds by itself.
//
// SymbolService runs one background thread per read-write store. It walks
// Store::Executables() and, for each executable without a symbol status,
// tries in order: the same file on this machine (the profile's path, when
// its htlhash or GNU build id matches), local debug files (build id under
// the debug roots, .gnu_debuglink, MiniDebugInfo), then debuginfod when
// URLs are configured. Each outcome is stored (Store::PutSymbols /
// PutSymbolStatus, under every key of the executable) and logged.
//
// Threads: every SymbolService method may be called from any thread; none
// waits for symbol reading. The store must outlive the service; the
// destructor cancels the reading in progress (including a debuginfod
// download) and joins. AddSymbolFile is synchronous and runs on the caller's
// thread (the CLI's, or the service's).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "storage/store.h"

namespace kiln::symbols {
struct ElfIdentity;
}

namespace kiln::app {

struct SymbolSourceOptions {
  // Searched like /usr/lib/debug (build-id tree and debuglink), before it.
  std::vector<std::string> debug_dirs;
  // debuginfod servers; empty = debuginfod is not used.
  std::vector<std::string> debuginfod_urls;
  // Where downloads are cached; "" = $DEBUGINFOD_CACHE_PATH or
  // ~/.cache/debuginfod_client, libdebuginfod's layout, shared with gdb.
  std::string debuginfod_cache_dir;
  // Where `kiln symbols add` leaves files for this service when the store
  // is in use (SymbolRequestDir of the data dir; see symbol_requests.h);
  // "" = none (capture stores).
  std::string request_dir;
  // Also receives every log line the service writes (kiln --headless prints
  // them); called on the service thread. May be empty.
  std::function<void(const std::string&)> echo;
};

// The debuginfod servers to use: `flag` (--debuginfod-urls) when given,
// else $DEBUGINFOD_URLS; both are space- or comma-separated lists.
std::vector<std::string> DebuginfodUrls(const std::string& flag);

// True when `path` is a readable file starting with the ELF magic
// ("\x7f" "ELF"): a dropped file goes to symbols rather than captures.
bool IsElfFile(const std::string& path);

// What the service is doing, for the UI's progress line.
struct SymbolProgress {
  bool busy = false;
  std::string executable;  // file name of the executable being worked on
  std::string source;      // "local file", "debug files", "debuginfod", "added file"
  double fraction = 0;     // of the current read or download, 0..1 (0 when unknown)
  size_t queued = 0;       // executables and files still waiting after this one
  size_t done = 0;         // finished since the service started
};

// The outcome of one user-given file (AddFiles, `kiln symbols add`).
struct AddFileOutcome {
  std::string path;
  bool ok = false;
  // One line for the user: "matched app (htlhash 0123..): stored 42 functions
  // from it" or "matches no executable in DIR" or "not an ELF file".
  std::string message;
};

// Reads `path` (an executable, shared library or debug file), matches it by
// htlhash or GNU build id against the store's executables and stores its
// symbols under the keys of every match, with a log line. A file that
// matches nothing, is not ELF or has no symbols is reported and stores
// nothing. `cancel` and `progress` (0..1) may be null/empty.
AddFileOutcome AddSymbolFile(storage::Store& store, const std::string& path,
                             const std::atomic<bool>* cancel = nullptr,
                             const std::function<void(double)>& progress = {});

// False in a build that cannot read ELF files (no symbols backend): every
// AddSymbolFile then fails with the reason, and no service answers requests.
bool CanReadSymbolFiles();

class SymbolService {
 public:
  // `on_change` runs on the service thread after each stored outcome and on
  // progress (the window passes its wake-up); may be empty.
  SymbolService(storage::Store& store, SymbolSourceOptions options, std::function<void()> on_change = {});
  ~SymbolService();
  SymbolService(const SymbolService&) = delete;
  SymbolService& operator=(const SymbolService&) = delete;

  // Tries the executable with symbol key `key` again, whatever its status.
  void Retry(const std::string& key);
  // Queues user-given ELF files; outcomes arrive through TakeOutcomes().
  void AddFiles(const std::vector<std::string>& paths);
  // New executables may have arrived: look now rather than at the next tick.
  void Poke();

  SymbolProgress Progress() const;
  // Outcomes of AddFiles since the last call, oldest first.
  std::vector<AddFileOutcome> TakeOutcomes();
  // True when nothing is queued or running and every executable with an id
  // has a status (tests and --screenshot wait for this).
  bool Idle() const;

 private:
  struct Job {
    enum class Kind { kAddFile, kRetry } kind;
    std::string argument;  // path or key
  };
  // Paths on this machine by file base name (see IndexLocalFiles in the
  // .cpp), gathered once per round of work.
  using LocalFiles = std::unordered_map<std::string, std::vector<std::string>>;
  void Run();
  // One user-given file, with progress, log, echo and an outcome for
  // TakeOutcomes; returns that outcome.
  AddFileOutcome AddFile(const std::string& path);
  // Takes the requests `kiln symbols add` left and answers each.
  void AnswerRequests();
  void Symbolize(const storage::ExecutableInfo& exe, const LocalFiles& local_files);
  // Separate debug files of `exe` on this machine (build id under the debug
  // roots, the binary's .gnu_debuglink); `binary` is the matching file when
  // there is one.
  std::vector<std::string> LocalDebugFiles(const storage::ExecutableInfo& exe,
                                           const symbols::ElfIdentity* binary) const;
  // The debug file for `build_id` from the configured debuginfod servers
  // (cached on disk); `server` gets the URL of the server that answered, or
  // "cache" when the file was already in the debuginfod cache.
  absl::StatusOr<std::string> FetchDebuginfo(const std::string& build_id, std::string* server);
  void SetProgress(std::string executable, std::string source, double fraction);
  void Changed();
  void Log(storage::LogLevel level, const std::string& text);
  // "No symbols found" for `what`: in the Log each, but echoed as one
  // summary line a minute (a CI fleet's churn made thousands of lines).
  void NoteMiss(const std::string& what, const std::string& text);
  void EchoMisses(bool now);

  storage::Store& store_;
  const SymbolSourceOptions options_;
  std::function<void()> on_change_;
  std::atomic<bool> stop_{false};

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool poked_ = true;
  std::deque<Job> jobs_;
  std::vector<AddFileOutcome> outcomes_;
  SymbolProgress progress_;
  bool scanned_all_ = false;  // the last scan found nothing left to try

  // Service thread only: keys already attempted in this process, so an
  // executable whose outcome could not be stored is not tried in a loop.
  std::set<std::string> attempted_;
  // Misses not echoed yet (service thread only), with a few names.
  uint64_t misses_unechoed_ = 0;
  std::vector<std::string> miss_examples_;
  std::chrono::steady_clock::time_point last_miss_echo_{};
  size_t scanned_executables_ = SIZE_MAX;  // a hash of Executables() at the last full scan
  bool requests_checked_ = false;          // AnswerRequests ran once (abandoned requests retaken)
  std::thread thread_;
};

// The symbolizer another thread reports on (the metrics' scrapes), set by
// whoever owns it for as long as it lives. Progress() reads it under the
// lock, so Set(nullptr) waits out a read in progress and the service can
// then go.
class SymbolizerSlot {
 public:
  void Set(SymbolService* service) {
    std::lock_guard<std::mutex> lock(mu_);
    service_ = service;
  }
  // nullopt while no symbolizer runs.
  std::optional<SymbolProgress> Progress() const {
    std::lock_guard<std::mutex> lock(mu_);
    if (service_ == nullptr) return std::nullopt;
    return service_->Progress();
  }

 private:
  mutable std::mutex mu_;
  SymbolService* service_ = nullptr;
};

}  // namespace kiln::app
