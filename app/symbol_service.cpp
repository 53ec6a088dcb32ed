// Index
//   [SECTION] Helpers: options, ELF sniffing, status and log lines
//   [SECTION] Sources: the same file, local debug files, debuginfod
//   [SECTION] AddSymbolFile: a user-given file
//   [SECTION] SymbolService: the background thread

#include "app/symbol_service.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_join.h"
#include "app/symbol_requests.h"
#include "ingest/debuginfod/debuginfod_client.h"
#include "ingest/symbols/debug_files.h"
#include "ingest/symbols/elf_identity.h"
#include "ingest/symbols/elf_symbols.h"

namespace kiln::app {

namespace {

// ===========================================================================
// [SECTION] Helpers: options, ELF sniffing, status and log lines
// ===========================================================================

namespace fs = std::filesystem;
using storage::SymbolStatus;
using State = storage::SymbolStatus::State;

std::string Basename(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// "app (htlhash 0123abcd.., build id 5f3e..)" for log lines.
std::string Describe(const storage::ExecutableInfo& exe) {
  std::string out = exe.file_name.empty() ? std::string("(unnamed)") : exe.file_name;
  std::vector<std::string> ids;
  if (!exe.htlhash.empty()) ids.push_back("htlhash " + exe.htlhash);
  if (!exe.gnu_build_id.empty()) ids.push_back("build id " + exe.gnu_build_id);
  if (!ids.empty()) absl::StrAppend(&out, " (", absl::StrJoin(ids, ", "), ")");
  return out;
}

std::vector<std::string> KeysOf(const storage::ExecutableInfo& exe) {
  return storage::SymbolKeys(exe.htlhash, exe.gnu_build_id);
}

std::string FunctionsText(size_t n) { return absl::StrCat(n, n == 1 ? " function" : " functions"); }

// Stores a table under `keys` and logs it; the error, if any, is logged too.
using LogFn = std::function<void(storage::LogLevel, const std::string&)>;

// Writes to the store's log (the Log view and `kiln symbols list` readers).
LogFn StoreLog(storage::Store& store) {
  return [&store](storage::LogLevel level, const std::string& text) { (void)store.AppendLog(level, text); };
}

// Moves `result.table` into the store; the rest of `result` stays usable.
bool StoreTable(storage::Store& store, const std::vector<std::string>& keys, const std::string& what,
                symbols::SymbolReadResult& result, const std::string& source, const LogFn& log) {
  SymbolStatus status;
  status.state = State::kSymbolized;
  status.source = source;
  status.detail = result.description;
  status.functions = result.table.function_count();
  status.updated_ns = storage::UnixNowNs();
  if (absl::Status s = store.PutSymbols(keys, std::move(result.table), status); !s.ok()) {
    log(storage::LogLevel::kError,
        absl::StrCat("symbols for ", what, ": could not store them: ", s.message()));
    return false;
  }
  log(storage::LogLevel::kInfo, absl::StrCat("symbols for ", what, ": ", FunctionsText(status.functions),
                                             " from ", source, result.description.empty() ? "" : " (",
                                             result.description, result.description.empty() ? "" : ")"));
  for (const std::string& w : result.warnings) {
    log(storage::LogLevel::kWarning, absl::StrCat("symbols for ", what, ": ", w));
  }
  return true;
}

// ===========================================================================
// [SECTION] Sources: the same file, local debug files, debuginfod
// ===========================================================================

// Paths by file base name; the same type as SymbolService::LocalFiles.
using LocalFiles = std::unordered_map<std::string, std::vector<std::string>>;

// Where executables may be on this machine. Agents (kiln-agent and the
// OpenTelemetry eBPF profiler) send a mapping's base name, not its path, so
// besides a path sent as is we look where the same-host case puts it: a
// process.executable.path of the profile with that base name, the mappings
// of the profile's processes that still run (through /proc/PID/root, so
// containers work too), and the system's library and program folders.
// Every candidate is checked by htlhash or build id before use.
//
// A pid means something here only for samples this host sent: the
// receiver's kiln.sender is loopback, and host.name (when sent) is this
// machine's. A remote agent's pids (also one tunnelled to loopback with
// ssh -R, which names its own host) and captures' pids are never looked up
// in this host's /proc.
//
// The first two come from the whole store and every process's maps, so
// they are gathered once per round of work, not once per executable.
std::string LocalHostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return {};
  return name;
}

LocalFiles IndexLocalFiles(const storage::Store& store) {
  LocalFiles index;
  auto add = [&](const std::string& name, std::string path) {
    std::vector<std::string>& paths = index[name];
    if (std::find(paths.begin(), paths.end(), path) == paths.end()) paths.push_back(std::move(path));
  };
  for (const std::string& path : store.AttributeValues(storage::attr::kProcessExecutablePath, 4096)) {
    add(fs::path(path).filename().string(), path);
  }
  const std::string this_host = LocalHostName();
  std::vector<std::string> pids;
  for (const std::vector<std::string>& c : store.AttributeCombinations(
           {std::string(storage::attr::kProcessPid), std::string(storage::attr::kKilnSender),
            std::string(storage::attr::kHostName)},
           65536)) {
    if (storage::IsLoopbackAddress(c[1]) && (c[2].empty() || c[2] == this_host)) pids.push_back(c[0]);
  }
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  if (pids.size() > 4096) pids.resize(4096);
  for (const std::string& pid : pids) {
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream maps("/proc/" + pid + "/maps");
    std::string line;
    while (std::getline(maps, line)) {
      // "start-end perms offset dev inode   /path"
      const size_t slash = line.find('/');
      if (slash == std::string::npos) continue;
      const std::string path = line.substr(slash);
      const std::string name = fs::path(path).filename().string();
      add(name, "/proc/" + pid + "/root" + path);
      add(name, path);
    }
  }
  return index;
}

std::vector<std::string> LocalCandidates(const LocalFiles& local_files, const storage::ExecutableInfo& exe) {
  std::vector<std::string> out;
  if (exe.file_name.empty()) return out;
  if (exe.file_name[0] == '/') out.push_back(exe.file_name);
  const std::string name = fs::path(exe.file_name).filename().string();
  if (name.empty()) return out;
  if (auto it = local_files.find(name); it != local_files.end()) {
    out.insert(out.end(), it->second.begin(), it->second.end());
  }
  static const char* const kSystemFolders[] = {
#if defined(__x86_64__)
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
#elif defined(__aarch64__)
    "/lib/aarch64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
#endif
    "/lib64",
    "/usr/lib64",
    "/lib",
    "/usr/lib",
    "/usr/local/lib",
    "/usr/bin",
    "/usr/sbin",
    "/bin",
    "/sbin",
    "/usr/local/bin"
  };
  for (const char* folder : kSystemFolders) out.push_back(std::string(folder) + "/" + name);
  std::vector<std::string> unique;
  for (std::string& p : out) {
    if (std::find(unique.begin(), unique.end(), p) == unique.end()) unique.push_back(std::move(p));
  }
  return unique;
}

// The first candidate that is this very file (same htlhash or build id):
// kiln and the agent on one host. "" otherwise, with why in `note` when a
// file of that name is another build.
std::string SameFileOnThisMachine(const LocalFiles& local_files, const storage::ExecutableInfo& exe,
                                  symbols::ElfIdentity* identity, std::string* note) {
  for (const std::string& path : LocalCandidates(local_files, exe)) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) continue;
    auto id = symbols::ReadElfIdentity(path);
    if (!id.ok()) {
      if (note->empty()) *note = std::string(id.status().message());
      continue;
    }
    const bool same = (!exe.htlhash.empty() && id->htlhash == exe.htlhash) ||
                      (!exe.gnu_build_id.empty() && id->gnu_build_id == exe.gnu_build_id);
    if (!same) {
      if (note->empty()) {
        *note = absl::StrCat(path, " on this machine is another build (htlhash ", id->htlhash, ")");
      }
      continue;
    }
    note->clear();
    *identity = *std::move(id);
    return path;
  }
  return "";
}

}  // namespace

// ===========================================================================
// [SECTION] AddSymbolFile: a user-given file
// ===========================================================================

AddFileOutcome AddSymbolFile(storage::Store& store, const std::string& path, const std::atomic<bool>* cancel,
                             const std::function<void(double)>& progress) {
  AddFileOutcome out;
  out.path = path;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    out.message = "cannot read it: no such file";
    return out;
  }
  if (std::filesystem::is_directory(path, ec)) {
    out.message = "is a directory, not an ELF file";
    return out;
  }
  if (!IsElfFile(path)) {
    out.message = "not an ELF file (executables, shared libraries and debug files start with \\x7fELF)";
    return out;
  }
  auto identity = symbols::ReadElfIdentity(path);
  if (!identity.ok()) {
    out.message = absl::StrCat("unreadable ELF file: ", identity.status().message());
    return out;
  }
  std::vector<storage::ExecutableInfo> matches;
  for (storage::ExecutableInfo& exe : store.Executables()) {
    const bool by_htlhash = !exe.htlhash.empty() && exe.htlhash == identity->htlhash;
    const bool by_build_id = !exe.gnu_build_id.empty() && exe.gnu_build_id == identity->gnu_build_id;
    if (by_htlhash || by_build_id) matches.push_back(std::move(exe));
  }
  const std::string ids =
      absl::StrCat("htlhash ", identity->htlhash,
                   identity->gnu_build_id.empty() ? ", no build id" : ", build id " + identity->gnu_build_id);
  if (matches.empty()) {
    out.message = absl::StrCat("matches no executable in ", store.directory(), " (", ids, ")");
    (void)store.AppendLog(storage::LogLevel::kWarning,
                          absl::StrCat("symbols from ", path, ": ", out.message));
    return out;
  }
  // A stripped binary brings its separate debug file along when this
  // machine has it (build id under /usr/lib/debug, .gnu_debuglink).
  std::vector<std::string> files{path};
  for (const symbols::DebugFileCandidate& c : symbols::FindDebugFiles(*identity).found) {
    if (std::find(files.begin(), files.end(), c.path) == files.end()) files.push_back(c.path);
  }
  symbols::SymbolReadOptions options;
  options.cancel = cancel;
  options.progress = progress;
  auto result = symbols::ReadSymbols(files, options);
  std::vector<std::string> names;
  std::vector<std::string> keys;
  for (const auto& exe : matches) {
    names.push_back(Describe(exe));
    for (std::string& k : KeysOf(exe)) {
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(std::move(k));
    }
  }
  const std::string what = absl::StrJoin(names, ", ");
  if (!result.ok()) {
    out.message = absl::StrCat("matched ", what, " but stored nothing: ", result.status().message());
    (void)store.AppendLog(storage::LogLevel::kWarning,
                          absl::StrCat("symbols from ", path, ": ", out.message));
    return out;
  }
  std::string source = "added file " + path;
  if (result->source_path != path) source += " (debug file " + result->source_path + ")";
  const size_t functions = result->table.function_count();
  if (!StoreTable(store, keys, what, *result, source, StoreLog(store))) {
    out.message = absl::StrCat("matched ", what, " but the store refused the symbols (see the Log)");
    return out;
  }
  out.ok = true;
  out.message = absl::StrCat("matched ", what, ": stored ", FunctionsText(functions),
                             result->description.empty() ? "" : " (", result->description,
                             result->description.empty() ? "" : ")");
  return out;
}

// ===========================================================================
// [SECTION] SymbolService: the background thread
// ===========================================================================

SymbolService::SymbolService(storage::Store& store, SymbolSourceOptions options,
                             std::function<void()> on_change)
    : store_(store), options_(std::move(options)), on_change_(std::move(on_change)) {
  thread_ = std::thread([this] { Run(); });
}

SymbolService::~SymbolService() {
  {
    std::lock_guard lock(mutex_);  // so the wait below cannot miss it
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void SymbolService::Retry(const std::string& key) {
  {
    std::lock_guard lock(mutex_);
    jobs_.push_back({Job::Kind::kRetry, key});
    scanned_all_ = false;
  }
  wake_.notify_all();
}

void SymbolService::AddFiles(const std::vector<std::string>& paths) {
  {
    std::lock_guard lock(mutex_);
    for (const std::string& p : paths) jobs_.push_back({Job::Kind::kAddFile, p});
    scanned_all_ = false;
  }
  wake_.notify_all();
}

void SymbolService::Poke() {
  {
    std::lock_guard lock(mutex_);
    poked_ = true;
  }
  wake_.notify_all();
}

SymbolProgress SymbolService::Progress() const {
  std::lock_guard lock(mutex_);
  SymbolProgress p = progress_;
  p.queued += jobs_.size();
  return p;
}

std::vector<AddFileOutcome> SymbolService::TakeOutcomes() {
  std::lock_guard lock(mutex_);
  return std::exchange(outcomes_, {});
}

bool SymbolService::Idle() const {
  std::lock_guard lock(mutex_);
  return jobs_.empty() && !progress_.busy && scanned_all_;
}

void SymbolService::SetProgress(std::string executable, std::string source, double fraction) {
  {
    std::lock_guard lock(mutex_);
    progress_.busy = true;
    progress_.executable = std::move(executable);
    progress_.source = std::move(source);
    progress_.fraction = fraction;
  }
  if (on_change_) on_change_();
}

void SymbolService::Log(storage::LogLevel level, const std::string& text) {
  (void)store_.AppendLog(level, text);
  if (options_.echo) options_.echo(text);
}

void SymbolService::NoteMiss(const std::string& what, const std::string& text) {
  (void)store_.AppendLog(storage::LogLevel::kInfo, text);
  ++misses_unechoed_;
  if (miss_examples_.size() < 3) miss_examples_.push_back(what);
  EchoMisses(false);
}

void SymbolService::EchoMisses(bool now) {
  constexpr auto kEchoInterval = std::chrono::minutes(1);
  const auto t = std::chrono::steady_clock::now();
  if (misses_unechoed_ == 0 || !options_.echo) return;
  if (!now && last_miss_echo_ != std::chrono::steady_clock::time_point{} && t - last_miss_echo_ < kEchoInterval) {
    return;
  }
  options_.echo(absl::StrCat("no symbols found for ", misses_unechoed_, misses_unechoed_ == 1 ? " executable" : " executables",
                             last_miss_echo_ == std::chrono::steady_clock::time_point{} ? "" : " in the last minute",
                             " (", absl::StrJoin(miss_examples_, ", "), misses_unechoed_ > miss_examples_.size() ? ", ..." : "",
                             "); `kiln symbols list` names each"));
  misses_unechoed_ = 0;
  miss_examples_.clear();
  last_miss_echo_ = t;
}

void SymbolService::Changed() {
  if (on_change_) on_change_();
}

AddFileOutcome SymbolService::AddFile(const std::string& path) {
  SetProgress(Basename(path), "added file", 0);
  AddFileOutcome outcome = AddSymbolFile(
      store_, path, &stop_, [this, path](double f) { SetProgress(Basename(path), "added file", f); });
  if (options_.echo) options_.echo(path + ": " + outcome.message);
  {
    std::lock_guard lock(mutex_);
    outcomes_.push_back(outcome);
    progress_ = SymbolProgress{false, "", "", 0, 0, progress_.done + 1};
    poked_ = true;  // scan next, so Idle() can become true
  }
  Changed();
  return outcome;
}

void SymbolService::AnswerRequests() {
  for (const TakenSymbolRequest& request : TakeSymbolRequests(options_.request_dir, !requests_checked_)) {
    Log(storage::LogLevel::kInfo,
        absl::StrCat("kiln symbols add: ", request.files.size(), " file",
                     request.files.size() == 1 ? "" : "s", " from the command line"));
    std::vector<SymbolRequestResult> results;
    for (const std::string& path : request.files) {
      // Stopping mid-request leaves it taken; the next start answers it.
      if (stop_) return;
      AddFileOutcome outcome = AddFile(path);
      results.push_back({path, outcome.ok, std::move(outcome.message)});
    }
    if (absl::Status s = AnswerSymbolRequest(options_.request_dir, request.id, results); !s.ok())
      Log(storage::LogLevel::kWarning, absl::StrCat("kiln symbols add: cannot answer: ", s.message()));
  }
  requests_checked_ = true;
}

bool CanReadSymbolFiles() { return true; }

void SymbolService::Run() {
  constexpr auto kScanInterval = std::chrono::seconds(2);
  while (!stop_) {
    std::optional<Job> job;
    bool poked = false;
    {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, kScanInterval, [this] { return stop_ || poked_ || !jobs_.empty(); });
      if (stop_) {
        lock.unlock();
        EchoMisses(true);
        return;
      }
      poked = std::exchange(poked_, false);
      if (!jobs_.empty()) {
        job = jobs_.front();
        jobs_.pop_front();
        progress_.busy = true;
      }
    }
    EchoMisses(false);
    if (job && job->kind == Job::Kind::kAddFile) {
      AddFile(job->argument);
      continue;
    }
    if (!job && !options_.request_dir.empty()) AnswerRequests();
    if (job && job->kind == Job::Kind::kRetry) {
      for (const storage::ExecutableInfo& exe : store_.Executables()) {
        const auto keys = KeysOf(exe);
        if (std::find(keys.begin(), keys.end(), job->argument) == keys.end()) continue;
        for (const auto& k : keys) attempted_.insert(k);
        Log(storage::LogLevel::kInfo, "retrying symbols for " + Describe(exe));
        Symbolize(exe, IndexLocalFiles(store_));
        break;
      }
      {
        std::lock_guard lock(mutex_);
        progress_ = SymbolProgress{false, "", "", 0, 0, progress_.done + 1};
        poked_ = true;  // scan next, so Idle() can become true
      }
      Changed();
      continue;
    }
    // The work list: executables with an id and not tried by this process
    // yet, whose keys have no status, or "no symbols found": what found
    // nothing last time is tried once more per start, since debug packages
    // may have been installed or debuginfod configured since. A failure
    // (a broken file) waits for the user's Retry. An unchanged list means
    // nothing new (statuses are read only then).
    std::vector<storage::ExecutableInfo> executables = store_.Executables();
    // The list, not its length: the dictionary forgets executables no kept
    // sample uses, so new ones can bring it back to the same length.
    size_t fingerprint = executables.size();
    for (const storage::ExecutableInfo& e : executables) {
      fingerprint = absl::HashOf(fingerprint, e.file_name, e.htlhash, e.gnu_build_id, e.go_build_id);
    }
    if (!poked && fingerprint == scanned_executables_) continue;
    {
      // Only keys of executables the store still holds: the rest went with
      // their samples (a CI fleet brings thousands an hour), and one that
      // comes back is new to try.
      std::set<std::string> current;
      for (const storage::ExecutableInfo& e : executables) {
        for (std::string& k : KeysOf(e)) current.insert(std::move(k));
      }
      std::erase_if(attempted_, [&](const std::string& k) { return !current.contains(k); });
    }
    std::set<std::string> have_status;
    for (auto& [key, status] : store_.SymbolStatuses()) {
      if (status.state != State::kNoSymbols) have_status.insert(key);
    }
    std::vector<storage::ExecutableInfo> todo;
    for (storage::ExecutableInfo& exe : executables) {
      const auto keys = KeysOf(exe);
      if (keys.empty()) continue;
      bool skip = false;
      for (const auto& k : keys) skip = skip || have_status.count(k) || attempted_.count(k);
      if (!skip) {
        for (const auto& k : keys) attempted_.insert(k);
        todo.push_back(std::move(exe));
      }
    }
    bool interrupted = false;
    const LocalFiles local_files = todo.empty() ? LocalFiles{} : IndexLocalFiles(store_);
    for (size_t i = 0; i < todo.size() && !stop_; ++i) {
      {
        std::lock_guard lock(mutex_);
        progress_.queued = todo.size() - i - 1;
        if (!jobs_.empty()) {
          // The user is waiting: the rest goes back to the next scan.
          for (size_t j = i; j < todo.size(); ++j) {
            for (const auto& k : KeysOf(todo[j])) attempted_.erase(k);
          }
          interrupted = true;
          break;
        }
      }
      Symbolize(todo[i], local_files);
      {
        std::lock_guard lock(mutex_);
        ++progress_.done;
      }
      Changed();
    }
    {
      std::lock_guard lock(mutex_);
      progress_ = SymbolProgress{false, "", "", 0, 0, progress_.done};
      scanned_all_ = !interrupted && jobs_.empty();
    }
    if (!interrupted) scanned_executables_ = fingerprint;
    if (!todo.empty()) Changed();
  }
}

std::vector<std::string> SymbolService::LocalDebugFiles(const storage::ExecutableInfo& exe,
                                                        const symbols::ElfIdentity* binary) const {
  symbols::DebugFileSearchOptions search;
  search.debug_roots = options_.debug_dirs;
  search.debug_roots.push_back("/usr/lib/debug");
  symbols::ElfIdentity wanted;
  if (binary) {
    wanted = *binary;
  } else if (!exe.gnu_build_id.empty()) {
    // Only the build id is known (the binary is on another host): the
    // build-id trees under the roots are the places to look.
    wanted.gnu_build_id = exe.gnu_build_id;
  } else {
    return {};
  }
  std::vector<std::string> out;
  for (const symbols::DebugFileCandidate& c : symbols::FindDebugFiles(wanted, search).found)
    out.push_back(c.path);
  return out;
}

absl::StatusOr<std::string> SymbolService::FetchDebuginfo(const std::string& build_id, std::string* server) {
  symbols::DebuginfodOptions fetch;
  fetch.urls = absl::StrJoin(options_.debuginfod_urls, " ");
  fetch.cache_dir = options_.debuginfod_cache_dir;
  fetch.cancel = &stop_;
  fetch.progress = [this](int64_t done, int64_t total) {
    std::string executable;
    {
      std::lock_guard lock(mutex_);
      executable = progress_.executable;
    }
    SetProgress(executable, "debuginfod", total > 0 ? static_cast<double>(done) / total : 0);
  };
  auto fetched = symbols::FetchDebugInfo(build_id, fetch);
  if (!fetched.ok()) return fetched.status();
  // The status's source names the server that answered, or says the file was
  // already in the cache (which gdb and debuginfod-find fill too).
  *server = fetched->from_cache ? "cache" : fetched->server;
  return std::move(fetched->path);
}

void SymbolService::Symbolize(const storage::ExecutableInfo& exe, const LocalFiles& local_files) {
  const std::vector<std::string> keys = KeysOf(exe);
  if (keys.empty()) return;
  const std::string what = Describe(exe);
  const std::string name = Basename(exe.file_name);
  std::vector<std::string> tried;  // what was looked at, for the status
  std::string failure;             // the first real error (not "nothing there")
  auto read = [&](const std::vector<std::string>& files, const std::string& source_kind,
                  std::string* source) -> std::optional<symbols::SymbolReadResult> {
    SetProgress(name, source_kind, 0);
    symbols::SymbolReadOptions options;
    options.cancel = &stop_;
    options.progress = [&](double f) { SetProgress(name, source_kind, f); };
    auto result = symbols::ReadSymbols(files, options);
    if (result.ok() && !result->table.empty()) {
      *source = result->source_path;
      return *std::move(result);
    }
    if (!result.ok() && !absl::IsNotFound(result.status()) && !absl::IsCancelled(result.status()) &&
        failure.empty()) {
      failure = std::string(result.status().message());
    }
    return std::nullopt;
  };

  // (2) The same file on this machine, and (3) its local debug files.
  symbols::ElfIdentity identity;
  std::string note;
  const std::string binary = SameFileOnThisMachine(local_files, exe, &identity, &note);
  if (!note.empty()) tried.push_back(note);
  std::vector<std::string> debug_files = LocalDebugFiles(exe, binary.empty() ? nullptr : &identity);
  std::vector<std::string> files = debug_files;
  if (!binary.empty()) files.push_back(binary);
  // A table from .dynsym alone (a stripped library) names exported
  // functions only: debuginfod may have everything, so it is asked too.
  std::optional<symbols::SymbolReadResult> local;
  std::string local_source;
  if (!files.empty()) {
    std::string source_path;
    auto result = read(files, debug_files.empty() ? "local file" : "debug files", &source_path);
    if (stop_) return;
    if (result) {
      local_source = (source_path == binary ? "local file " : "debug file ") + source_path;
      const bool dynsym_only =
          result->dwarf_functions == 0 && result->symtab_symbols == 0 && result->minidebug_symbols == 0;
      if (!dynsym_only || options_.debuginfod_urls.empty() || exe.gnu_build_id.empty()) {
        StoreTable(store_, keys, what, *result, local_source,
                   [this](storage::LogLevel l, const std::string& t) { Log(l, t); });
        return;
      }
      local = std::move(result);
      tried.push_back(local_source + " (exported functions only)");
    } else {
      tried.push_back(
          absl::StrCat(debug_files.empty() ? "local file " : "local files ", absl::StrJoin(files, ", ")));
    }
  } else {
    tried.push_back("no local file or debug file");
  }

  // (4) debuginfod, by build id.
  if (!options_.debuginfod_urls.empty()) {
    if (exe.gnu_build_id.empty()) {
      tried.push_back("debuginfod needs a GNU build id (the profile has none)");
    } else {
      SetProgress(name, "debuginfod", 0);
      std::string server;
      auto fetched = FetchDebuginfo(exe.gnu_build_id, &server);
      if (stop_) return;
      if (fetched.ok()) {
        std::vector<std::string> with_binary{*fetched};
        if (!binary.empty()) with_binary.push_back(binary);
        std::string source_path;
        auto result = read(with_binary, "debuginfod", &source_path);
        if (stop_) return;
        if (result) {
          StoreTable(store_, keys, what, *result, "debuginfod " + server,
                     [this](storage::LogLevel l, const std::string& t) { Log(l, t); });
          return;
        }
        tried.push_back("debuginfod file " + *fetched);
      } else {
        tried.push_back(absl::StrCat("debuginfod: ", fetched.status().message()));
        // Not found (404) and unreachable servers (Unavailable) are "no
        // symbols found", tried again at the next start: the network may be
        // back by then. What retrying will not mend (a cache folder that
        // cannot be written, a file over DEBUGINFOD_MAXSIZE) is a failure.
        if (failure.empty() && !absl::IsNotFound(fetched.status()) && !absl::IsUnavailable(fetched.status()))
          failure = absl::StrCat("debuginfod: ", fetched.status().message());
      }
    }
  }

  if (local) {
    StoreTable(store_, keys, what, *local, local_source,
               [this](storage::LogLevel l, const std::string& t) { Log(l, t); });
    return;
  }

  // Nothing: record what was tried. An older table (a retry that found
  // nothing better) is kept along with its status.
  for (auto& [key, status] : store_.SymbolStatuses()) {
    if (status.state == State::kSymbolized && std::find(keys.begin(), keys.end(), key) != keys.end()) {
      Log(storage::LogLevel::kInfo,
          absl::StrCat("symbols for ", what, ": nothing new found; keeping ", status.source));
      return;
    }
  }
  SymbolStatus status;
  status.state = failure.empty() ? State::kNoSymbols : State::kFailed;
  status.source = "tried: " + absl::StrJoin(tried, "; ");
  status.detail = failure;
  status.updated_ns = storage::UnixNowNs();
  if (absl::Status s = store_.PutSymbolStatus(keys, status); !s.ok()) {
    Log(storage::LogLevel::kError,
        absl::StrCat("symbols for ", what, ": could not store the status: ", s.message()));
    return;
  }
  if (failure.empty()) {
    NoteMiss(what, absl::StrCat("no symbols found for ", what, " (", status.source, ")"));
  } else {
    Log(storage::LogLevel::kWarning,
        absl::StrCat("symbols for ", what, " failed: ", failure, " (", status.source, ")"));
  }
}

}  // namespace kiln::app
