// Store: Kiln's embedded profile database (RocksDB underneath, invisible to
// callers). One Store object per data directory per process.
//
// Threads: every method is safe to call from any thread at the same time.
// Write() is serialized internally; queries run concurrently with writes
// and see every write that returned before they started.
// Lifetime: results are values or shared immutable objects that stay valid
// after the Store is destroyed.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "storage/model/data_loss.h"
#include "storage/model/profile_model.h"
#include "storage/model/query.h"
#include "storage/symbol_table.h"

namespace kiln::storage {

// The on-disk format version. Bump on any incompatible change; Open() of a
// store written with another version fails with both versions named.
// Version 2 keeps samples per sample type (version 1 had four fixed kinds);
// a version 1 store is upgraded in place when opened read-write.
// Version 3 adds the hourly stack summaries (column family "summaries");
// a version 2 store gains it when opened read-write (its summaries are then
// built in the background) and is read as it is when opened read-only.
// Version 4 adds forgetting: a renumbered dictionary and the remaps of
// blocks written before it ("meta:remap:" keys); a version 3 store has
// none and is read as it is, and marked 4 when opened read-write.
// Version 5 keys dictionary entries by disk ids that forgetting leaves
// with gaps (values refer to entries by disk id); a version 3 or 4 store
// has no gaps, its disk ids are its ids, so it is read as it is, and
// marked 5 when opened read-write.
inline constexpr uint32_t kSchemaVersion = 5;

struct SampleTypeCount {
  SampleTypeInfo info;
  uint64_t samples = 0;  // stored sample entries (events)
  bool operator==(const SampleTypeCount&) const = default;
};

// A request owed to a forwarding destination (Store::WriteAndForward).
struct ForwardEntry {
  uint64_t seq = 0;         // its place in the destination's queue
  int64_t enqueued_ns = 0;  // Unix ns, when it was accepted
  std::string bytes;        // the ExportProfilesServiceRequest as received
};
// How far behind a destination is.
struct ForwardBacklog {
  uint64_t requests = 0;
  uint64_t bytes = 0;
  int64_t oldest_ns = 0;  // Unix ns of the oldest owed request; 0 when none
  // Dropped over the bound (StoreOptions::max_forward_bytes) since the
  // store was opened; the store's total across restarts and destinations
  // is DataLoss::kForwardDropped's.
  uint64_t dropped = 0;
  bool operator==(const ForwardBacklog&) const = default;
};

struct StoreStats {
  uint64_t samples = 0;  // stored sample entries (events), all types
  // Every sample type with samples: on-CPU samples first, then the others
  // in the order they were first stored.
  std::vector<SampleTypeCount> sample_types;
  std::vector<SampleType> Types() const;  // sample_types' types, in that order
  uint64_t stacks = 0;
  uint64_t frames = 0;
  uint64_t strings = 0;
  uint64_t attribute_sets = 0;
  uint64_t blocks = 0;
  int64_t first_sample_ns = 0;  // 0 when empty
  int64_t last_sample_ns = 0;
  uint64_t disk_bytes = 0;  // all files in the data directory
  // The table and blob files of each part of the store (a RocksDB column
  // family: "dictionary" holds the interned strings, frames, stacks and
  // attribute sets with the counters), in the order the store opens them.
  // The rest of disk_bytes is the write-ahead log and RocksDB's own files.
  struct PartBytes {
    std::string part;
    uint64_t bytes = 0;
    bool operator==(const PartBytes&) const = default;
  };
  std::vector<PartBytes> part_bytes;
  // Bumps on every write and every deletion: "did anything change" for
  // views (the sample count can stay equal while retention deletes and
  // agents write).
  uint64_t data_version = 0;
  // Retention as configured (0 = off) and what it deleted since open.
  int64_t retention_age_ns = 0;
  uint64_t retention_size_bytes = 0;
  uint64_t samples_deleted_by_retention = 0;
  // Dictionary entries forgotten since open (ForgetUnused), and what the
  // dictionary holds in memory now (StoreOptions::max_dictionary_memory).
  uint64_t dictionary_entries_forgotten = 0;
  uint64_t dictionary_memory_bytes = 0;
  uint64_t dictionary_memory_limit_bytes = 0;  // 0 = none
  // Why retention cannot keep the store within its size limit, with what
  // to do ("" = it can): the parts it does not delete (the dictionary,
  // symbols) leave the samples less than a quarter of the limit. The
  // newest samples are then kept, over the limit, rather than none.
  std::string retention_problem;
  // Hours with a summary (all sample types), and how many hours queries
  // read from a summary instead of their samples since open.
  uint64_t summarized_hours = 0;
  uint64_t summary_hours_read = 0;
  // Sample blocks queries decoded since open (a span filter reads only the
  // blocks the span index names).
  uint64_t blocks_read = 0;
  // The store's filesystem, as the disk guard last saw it (read-write
  // stores; 0 otherwise), and why new data is refused ("" = accepted).
  uint64_t disk_free_bytes = 0;
  uint64_t disk_reserve_bytes = 0;
  std::string writes_refused;
  // What kiln --forward owes each destination with requests owed.
  struct ForwardQueue {
    std::string destination;
    ForwardBacklog backlog;
    bool operator==(const ForwardQueue&) const = default;
  };
  std::vector<ForwardQueue> forward;
  bool operator==(const StoreStats&) const = default;
};

enum class LogLevel : uint8_t { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };
std::string_view LogLevelName(LogLevel level);

struct LogEntry {
  uint64_t sequence = 0;
  int64_t time_ns = 0;
  LogLevel level = LogLevel::kInfo;
  std::string message;
  bool operator==(const LogEntry&) const = default;
};

// Symbols are kept per executable identity key: "htlhash:<32 hex>" (the
// OpenTelemetry eBPF profiler's file id) or "gnu:<hex>" (GNU build id). A
// table stored under several keys of one file is applied to frames of any
// executable with one of them.
std::string HtlhashSymbolKey(std::string_view htlhash_hex);
std::string GnuBuildIdSymbolKey(std::string_view build_id_hex);
// The keys of a stored executable, htlhash first; empty when it has no id.
std::vector<std::string> SymbolKeys(std::string_view htlhash_hex, std::string_view gnu_build_id_hex);

struct SymbolStatus {
  enum class State : uint8_t {
    kNotAttempted = 0,
    kSymbolized = 1,  // a table is stored
    kNoSymbols = 2,   // every source tried, nothing found
    kFailed = 3,      // a source was found but could not be read
  };
  State state = State::kNotAttempted;
  std::string source;  // where the symbols came from or what was tried:
                       // "debug file /usr/lib/debug/.build-id/..", "debuginfod
                       // http://..", "local file /usr/bin/x", "added: /path"
  std::string detail;  // failure reason, or what the table holds
  uint64_t functions = 0;
  int64_t updated_ns = 0;  // Unix ns
  bool operator==(const SymbolStatus&) const = default;
};
std::string_view SymbolStateName(SymbolStatus::State state);

// An executable as stored in the dictionary (strings, not indices).
struct ExecutableInfo {
  std::string file_name;
  std::string htlhash;
  std::string gnu_build_id;
  std::string go_build_id;
};

// How a read-write store settles its disk use. Everything written is in
// the write-ahead log first (the crash guarantee); the WAL is released once
// every column family holding part of it is flushed to compressed tables.
// Kiln flushes when ingest pauses for `settle_after_idle`, when unflushed
// data is `settle_max_age` old (an agent that never pauses), and when the
// store closes, so the WAL never holds hours of uncompressed samples.
struct StoreOptions {
  std::chrono::milliseconds settle_after_idle{std::chrono::seconds(30)};
  std::chrono::milliseconds settle_max_age{std::chrono::minutes(5)};
  // New data is refused (Unavailable, retryable) while less than this is
  // free on the store's filesystem (storage/disk_guard.h): room for
  // RocksDB's flushes and compactions, and for the rest of the machine.
  uint64_t disk_reserve_bytes = uint64_t{512} << 20;
  // Attribute cardinality caps: the dictionary is held in memory, so a
  // sender inventing keys or values must not grow it without bound. A new
  // value of a key at its cap is stored as "other", a new key beyond the
  // key cap is left out; both counted (DataLoss::kAttributeCapped). Far
  // above what real agents send (pids and thread ids included).
  size_t max_values_per_attribute_key = 1'000'000;
  size_t max_attribute_keys = 4096;
  // Distinct attribute sets (the product of values: pid x thread x ...),
  // which the per-key caps do not bound. Past it, a new set keeps its keys
  // with every value "other" (counted, one per set folded). 2 M sets are
  // about 200 MB of dictionary in memory. The caps count the dictionary as
  // kept: what retention deleted is forgotten (Store::ForgetUnused).
  size_t max_attribute_sets = 2'000'000;
  // The bytes of a key's distinct values (held in memory once each); past
  // it a new value is "other", counted as above. 64 MiB is 4,000 values at
  // the 16 KiB string cap, and millions of real pids or thread names.
  uint64_t max_attribute_value_bytes_per_key = uint64_t{64} << 20;
  // The bytes of the distinct values one sender brought (by kiln.sender,
  // the address the receiver saw; a value counts once, to the first sender
  // holding it), as above: so a host inventing values over many keys
  // cannot take the dictionary's memory budget, and with it every other
  // host's samples. 32 MiB is a quarter of that budget, and the values (pid,
  // executable path and name, threads' names and ids) of some 200,000
  // processes; a collector forwarding a fleet is one sender (kiln
  // --sender-values).
  uint64_t max_attribute_value_bytes_per_sender = uint64_t{32} << 20;
  // Retention (0 = keep forever): samples older than the age, and the
  // oldest samples while the store's directory (every file: tables, the
  // write-ahead log, RocksDB's own) exceeds the size, are deleted a whole
  // 10 s bucket at a time, at open, every minute, and whenever a twentieth
  // of the size limit was written since the last pass
  // (Store::ApplyRetention). See "Retention" in storage/README.md.
  std::chrono::nanoseconds retention_age{0};
  uint64_t retention_size_bytes = 0;
  // How often the store applies retention by itself (0 = only when
  // ApplyRetention is called: tests with a clock of their own).
  std::chrono::milliseconds retention_interval{std::chrono::minutes(1)};
  // Hourly stack summaries (storage/stack_summary.h): built in the
  // background for hours that are over, read by queries for hours wholly
  // inside their range. Off: every query reads every sample (benchmarks and
  // tests compare the two).
  bool summarize_in_background = true;
  bool use_summaries = true;
  // The dictionary is held in memory whole: past this estimate of its
  // tables and indexes, retention deletes the oldest samples a quarter at a
  // time and forgetting drops what only they used (0 = no budget). A
  // laptop's or a steady host's dictionary is a few MiB; a CI fleet's churn
  // reaches it. A forgetting pass holds the old dictionary and the new one
  // (about three quarters of it) at once, so under churn kiln's RSS peaks
  // near 100 MiB + 1.75x this: 361 MiB at 128 MiB, 428-441 MiB at the
  // 192 MiB this was, against DESIGN.md's 400 MB for the receiver.
  uint64_t max_dictionary_memory = uint64_t{128} << 20;
  // Forgetting deletes what it forgets and leaves the kept entries' keys
  // (disk ids) as they are, so new entries take ever larger disk ids; a
  // pass once any table's reach this writes every kept entry again with
  // disk ids from 1. 2^31: a day or more of a busy fleet's churn per
  // rewrite. Tests lower it to run the rewrite.
  uint32_t forget_rewrite_at_disk_id = uint32_t{1} << 31;
  // Symbol tables loaded for queries are kept for the next ones up to this
  // many bytes (least recently used dropped first; a dropped table is read
  // again from the store when next needed).
  uint64_t symbol_cache_bytes = uint64_t{96} << 20;
  // What kiln may owe each forwarding destination (kiln --forward): past
  // this many request bytes queued for one, the oldest requests are
  // dropped and counted (DataLoss::kForwardDropped).
  uint64_t max_forward_bytes = uint64_t{1} << 30;
  // Tests only: called at the named steps of retention and forgetting
  // ("retention: deleted", "forgetting: written", ...: see the calls), so
  // a crash test can kill the process at exactly that point.
  std::function<void(std::string_view step)> test_step;
};

// What one retention pass deleted.
struct RetentionReport {
  uint64_t samples_deleted = 0;
  uint64_t blocks_deleted = 0;
  int64_t deleted_before_ns = 0;  // samples before this time are gone (0 = none deleted)
  std::string reason;             // "age", "size", or "" when nothing was due
  // What went was counted twice, the second time under the write lock,
  // because a write into a bucket before the cut came during the first.
  bool recounted = false;
};

// What one pass of Store::ForgetUnused did: dictionary entries (strings,
// executables, frames, stacks, attribute sets, links) before and after.
struct ForgetReport {
  uint64_t entries_before = 0;
  uint64_t entries_after = 0;
  uint64_t stacks_before = 0, stacks_after = 0;
  uint64_t attribute_sets_before = 0, attribute_sets_after = 0;
  // Executable keys ("htlhash:..", "gnu:..") whose symbol records went
  // with their executables.
  uint64_t symbol_keys_forgotten = 0;
  bool ran = false;  // false: nothing to forget, nothing written
  // Every kept entry written again under new disk ids (once a table's disk
  // ids near their end, StoreOptions::forget_rewrite_at_disk_id); else only
  // the forgotten keys were deleted.
  bool rewrote = false;
  // The whole pass, and the part that held writes off (renumbering and
  // the batch): what a sender's requests waited for.
  double seconds = 0, write_lock_seconds = 0;
};

// True for Store::Open's error when another process has the store open for
// writing: waiting for it, or handing it work, may help; nothing else will.
bool IsStoreInUse(const absl::Status& status);

class Store {
 public:
  enum class Mode {
    kReadWrite,  // takes the directory's lock; fails clearly if in use
    kReadOnly,   // never writes; works while another process writes
  };

  // Opens (creating in kReadWrite mode) the store in `dir`.
  // Errors: directory in use by another process (Unavailable, naming the
  // directory; see IsStoreInUse), schema version mismatch
  // (FailedPrecondition, both versions), corruption.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Store>> Open(const std::string& dir, Mode mode,
                                                                   const StoreOptions& options = {});
  virtual ~Store() = default;

  // Interns the batch's dictionary and appends its samples in compact
  // time-ordered blocks, in one atomic RocksDB write. On OK the data is in
  // the write-ahead log: a crash of this process after the call loses
  // nothing. Samples with out-of-range indices are a programming error of
  // the producer and make the whole call fail (InvalidArgument).
  [[nodiscard]] virtual absl::Status Write(const ProfileBatch& batch) = 0;

  // Forwarding (kiln --forward): Write, and the request's bytes as they
  // were received queued for each destination, in the same atomic write:
  // a request acknowledged to its sender is owed to every destination,
  // across restarts and kill -9, until AckForward or the bound
  // (StoreOptions::max_forward_bytes) drops it. Destinations are named by
  // their target ("host:port"); each queue keeps the order of the writes.
  [[nodiscard]] virtual absl::Status WriteAndForward(const ProfileBatch& batch, std::string_view request,
                                                     const std::vector<std::string>& destinations) = 0;
  // Up to `max` of the oldest requests owed to `destination`, oldest first.
  virtual std::vector<ForwardEntry> PeekForward(const std::string& destination, size_t max) const = 0;
  // `destination` has every request up to and including `seq`: they go.
  virtual absl::Status AckForward(const std::string& destination, uint64_t seq) = 0;
  // What is owed to each destination with a queue (zeros for one without).
  virtual ForwardBacklog ForwardBacklogOf(const std::string& destination) const = 0;
  virtual std::vector<std::string> ForwardDestinations() const = 0;

  // Weights per (stack, attribute set) for the query, with the dictionary
  // entries they reference.
  [[nodiscard]] virtual absl::StatusOr<std::shared_ptr<const ProfileSlice>> Run(const Query& query) const = 0;

  // Weight over time for the query's sample type and filters, `bucket_count`
  // buckets evenly covering [query.from_ns, query.to_ns) (clamped to the
  // stored data's range when open-ended).
  [[nodiscard]] virtual absl::StatusOr<Timeline> RunTimeline(const Query& query, int bucket_count) const = 0;

  virtual StoreStats Stats() const = 0;

  // Every attribute key seen, sorted; and up to `max` values seen for a key,
  // sorted (for filter suggestions).
  virtual std::vector<std::string> AttributeKeys() const = 0;
  virtual std::vector<std::string> AttributeValues(std::string_view key, size_t max) const = 0;
  // The distinct combinations of `keys`' values over the attribute sets, in
  // key order ("" where a set lacks a key), sorted, at most `max`: which
  // pids came from which sender and host, say.
  virtual std::vector<std::vector<std::string>> AttributeCombinations(const std::vector<std::string>& keys,
                                                                      size_t max) const = 0;

  // Data-loss totals per reason (storage/model/data_loss.h), kept across
  // restarts: the receiver adds what it counted, retention what it deleted.
  // A read-only store reports the totals as they were when it opened.
  virtual absl::Status AddDataLoss(const DataLossCounts& counts) = 0;
  virtual DataLossCounts DataLossTotals() const = 0;

  // Kiln's own event log, kept in the store. Append is durable like Write.
  virtual absl::Status AppendLog(LogLevel level, std::string_view message) = 0;
  // The newest `max` entries, newest first.
  virtual std::vector<LogEntry> ReadLog(size_t max) const = 0;

  // --- Symbols ---------------------------------------------------------
  // Stores `table` under every key in `keys` (replacing older tables) with
  // `status`, durably. Queries that start after the call name native frames
  // of matching executables from the table: its names replace the
  // producer's, and inline chains become extra frames marked inlined.
  // Addresses the table does not cover keep the producer's frame. The
  // table is taken by value: the store keeps it (tables run to tens of MB),
  // so pass it with std::move.
  [[nodiscard]] virtual absl::Status PutSymbols(const std::vector<std::string>& keys, SymbolTable table,
                                                const SymbolStatus& status) = 0;
  // Records an outcome without a table (no symbols found, failed). An
  // existing table under these keys is kept unless `drop_table`.
  [[nodiscard]] virtual absl::Status PutSymbolStatus(const std::vector<std::string>& keys,
                                                     const SymbolStatus& status, bool drop_table = false) = 0;
  // Status per key, for every key that has one.
  virtual std::vector<std::pair<std::string, SymbolStatus>> SymbolStatuses() const = 0;
  // Bumps whenever symbols change, so views know to query again.
  virtual uint64_t SymbolsVersion() const = 0;
  // Every executable in the dictionary (the symbolizer's work list).
  virtual std::vector<ExecutableInfo> Executables() const = 0;

  // Deletes what retention no longer keeps (StoreOptions), as of `now_ns`:
  // whole buckets, in one atomic write with the counters (a query sees all
  // of a bucket or none of it), then compacts that range to free the disk.
  // The store also calls it at open and every minute.
  [[nodiscard]] virtual absl::StatusOr<RetentionReport> ApplyRetention(int64_t now_ns) = 0;
  // New retention limits (as StoreOptions'; 0 = none), used from now on: a
  // read-write store applies them within seconds, then every minute.
  virtual void SetRetention(std::chrono::nanoseconds age, uint64_t size_bytes) = 0;

  // Forgets the dictionary entries no kept sample uses any more (retention
  // deleted the last samples that did): they go from disk and memory, and
  // the remaining ids are renumbered densely, so the dictionary and kiln's
  // memory follow the data kept, not the data ever seen. Sample blocks are
  // not rewritten (storage/README.md, "Forgetting"). Writes wait only while
  // the new dictionary is written; queries that straddle it run again.
  // The store runs it by itself after retention deleted samples once the
  // dictionary grew by half since the last pass.
  [[nodiscard]] virtual absl::StatusOr<ForgetReport> ForgetUnused() = 0;
  // Builds the summary of every hour that is over (ended two minutes before
  // the newest sample) and has samples but no summary yet; returns how many
  // it built. The store does this by itself every few seconds; tests and
  // benchmarks call it to know it is done.
  [[nodiscard]] virtual absl::StatusOr<uint64_t> Summarize() = 0;
  // Flushes memtables to SST files (for stats and benchmarks; not needed
  // for durability).
  virtual absl::Status Flush() = 0;
  // Flush plus full compaction (benchmarks measure settled disk size).
  virtual absl::Status Compact() = 0;

  virtual const std::string& directory() const = 0;
  virtual bool read_only() const = 0;
};

// The default data directory: $XDG_DATA_HOME/kiln, ~/.local/share/kiln, or
// on macOS ~/Library/Application Support/kiln.
std::string DefaultDataDirectory();

}  // namespace kiln::storage
