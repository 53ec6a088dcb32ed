// RocksStore: the Store implementation on RocksDB.
//
// Index
//   [SECTION] Keys and value encodings
//   [SECTION] In-memory dictionary
//   [SECTION] Open
//   [SECTION] Write
//   [SECTION] Queries
//   [SECTION] Log, stats, maintenance
//
// Column families and keys (all integers big-endian so keys sort
// numerically):
//
//   default  "meta:schema"                 -> u32 schema version
//            "meta:stats"                  -> varint counters (see EncodeStats)
//            's' u32 id                    -> string bytes
//            'e' u32 id                    -> executable (varints)
//            'f' u32 id                    -> frame (varints, u8 type, u8 inlined)
//            'k' u32 id                    -> stack: varint n, n varint frame ids (root first)
//            'a' u32 id                    -> attribute set: varint n, n (key, value) string ids
//            'l' u32 id                    -> link: varint len, trace id, span id
//            'y' u32 id                    -> sample type: type, unit, period type, period
//                                             unit (varint len + bytes each), zigzag period
//   blocks   u32 sample type | u64 bucket^sign | u64 seq -> SampleBlock (zstd by RocksDB)
//   log      u64 seq                       -> zigzag time, u8 level, message
//   symbols  't' key                       -> SymbolTable::Serialize() (blob file, zstd)
//            'a' key                       -> key of the table this key shares
//            's' key                       -> symbol status (see EncodeSymbolStatus)
//            (key = "htlhash:<hex>" or "gnu:<hex>", see SymbolKeys)
//
// The dictionary is small next to the samples, so it is loaded into memory
// on open and every id is resolved there; sample blocks are only read by
// queries.
#include "storage/store.h"

#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/options.h>
#include <rocksdb/slice.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "storage/disk_guard.h"
#include "storage/sample_block.h"
#include "storage/varint.h"

namespace kiln::storage {

// ============================================================================
// [SECTION] Keys and value encodings
// ============================================================================
namespace {

// Samples are grouped into blocks per sample type and per 10 s of time: wide
// enough that an agent's 5 s batch makes one or two blocks, narrow enough
// that a "last 15 minutes" query skips most of a long-lived store.
constexpr int64_t kBucketNs = 10'000'000'000;
constexpr char kSchemaKey[] = "meta:schema";
constexpr char kStatsKey[] = "meta:stats";
// Data-loss totals: varint count, then a varint per reason in enum order (a
// newer kiln's extra reasons are kept by an older one as they are).
constexpr char kLossKey[] = "meta:losses";
constexpr char kTagString = 's', kTagExecutable = 'e', kTagFrame = 'f', kTagStack = 'k',
               kTagAttributeSet = 'a', kTagLink = 'l', kTagSampleType = 'y';
// Block keys: u32 sample type, u64 bucket, u64 sequence.
constexpr size_t kBlockKeySize = 20;

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

std::string DictKey(char tag, uint32_t id) {
  std::string key(1, tag);
  PutBigEndian32(&key, id);
  return key;
}

std::string BlockKeyPrefix(uint32_t sample_type, int64_t bucket) {
  std::string key;
  PutBigEndian32(&key, sample_type);
  // Flipping the sign bit makes negative buckets sort before positive ones.
  PutBigEndian64(&key, static_cast<uint64_t>(bucket) ^ (uint64_t{1} << 63));
  return key;
}

std::string EncodeExecutable(const Executable& e) {
  std::string v;
  PutVarint(&v, e.file_name);
  PutVarint(&v, e.htlhash);
  PutVarint(&v, e.gnu_build_id);
  PutVarint(&v, e.go_build_id);
  return v;
}

std::string EncodeFrame(const Frame& f) {
  std::string v;
  PutVarint(&v, f.function);
  PutVarint(&v, f.file);
  PutVarint(&v, f.executable);
  PutVarint(&v, ZigZag(f.line));
  PutVarint(&v, f.address);
  v.push_back(static_cast<char>(f.type));
  v.push_back(static_cast<char>(f.inlined ? 1 : 0));
  return v;
}

void PutText(std::string* v, std::string_view text) {
  PutVarint(v, text.size());
  v->append(text);
}

std::string EncodeSampleType(const SampleTypeInfo& t) {
  std::string v;
  PutText(&v, t.type.type);
  PutText(&v, t.type.unit);
  PutText(&v, t.period_type);
  PutText(&v, t.period_unit);
  PutVarint(&v, ZigZag(t.period));
  return v;
}

std::string EncodeIds(const uint32_t* begin, const uint32_t* end) {
  std::string v;
  PutVarint(&v, static_cast<uint64_t>(end - begin));
  for (const uint32_t* p = begin; p != end; ++p) PutVarint(&v, *p);
  return v;
}

std::string EncodeAttributes(const Attribute* begin, const Attribute* end) {
  std::string v;
  PutVarint(&v, static_cast<uint64_t>(end - begin));
  for (const Attribute* a = begin; a != end; ++a) {
    PutVarint(&v, a->key);
    PutVarint(&v, a->value);
  }
  return v;
}

std::string EncodeLink(const Link& l) {
  std::string v;
  PutVarint(&v, l.trace_id.size());
  v += l.trace_id;
  v += l.span_id;
  return v;
}

struct ValueReader {
  const char* p;
  const char* end;
  bool ok = true;
  uint64_t Next() {
    uint64_t v = 0;
    if (ok && !GetVarint(&p, end, &v)) ok = false;
    return v;
  }
  uint8_t Byte() {
    if (!ok || p >= end) {
      ok = false;
      return 0;
    }
    return static_cast<uint8_t>(*p++);
  }
};

bool DecodeSampleType(std::string_view bytes, SampleTypeInfo* t) {
  ValueReader r{bytes.data(), bytes.data() + bytes.size()};
  for (std::string* field : {&t->type.type, &t->type.unit, &t->period_type, &t->period_unit}) {
    uint64_t n = r.Next();
    if (!r.ok || n > static_cast<uint64_t>(r.end - r.p)) return false;
    field->assign(r.p, n);
    r.p += n;
  }
  t->period = UnZigZag(r.Next());
  return r.ok;
}

absl::Status Corrupt(std::string_view what, uint32_t id) {
  return absl::DataLossError(absl::StrCat("store dictionary: ", std::string(what), " ", id, " is corrupt"));
}

absl::Status FromRocks(const rocksdb::Status& s, std::string_view context) {
  if (s.ok()) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(std::string(context), ": ", s.ToString()));
}

absl::string_view AsAbsl(std::string_view s) { return absl::string_view(s.data(), s.size()); }

constexpr char kSymbolTableTag = 't', kSymbolAliasTag = 'a', kSymbolStatusTag = 's';

std::string SymbolRecordKey(char tag, std::string_view key) {
  std::string k(1, tag);
  k.append(key);
  return k;
}

std::string EncodeSymbolStatus(const SymbolStatus& st) {
  std::string v;
  PutVarint(&v, static_cast<uint64_t>(st.state));
  PutVarint(&v, st.functions);
  PutVarint(&v, ZigZag(st.updated_ns));
  PutVarint(&v, st.source.size());
  v += st.source;
  v += st.detail;
  return v;
}

bool DecodeSymbolStatus(std::string_view bytes, SymbolStatus* st) {
  ValueReader r{bytes.data(), bytes.data() + bytes.size()};
  uint64_t state = r.Next();
  st->functions = r.Next();
  st->updated_ns = UnZigZag(r.Next());
  uint64_t source_size = r.Next();
  if (!r.ok || state > 3 || source_size > static_cast<uint64_t>(r.end - r.p)) return false;
  st->state = static_cast<SymbolStatus::State>(state);
  st->source.assign(r.p, source_size);
  st->detail.assign(r.p + source_size, r.end);
  return true;
}

// Frames the producer could not name for itself, or named from the host's
// own symbols: native code in an executable. Interpreted frames (Python,
// JVM, ...) are named by their runtime and keep their names.
bool SymbolizableFrame(const Frame& f) {
  return f.executable != 0 &&
         (f.type == FrameType::kNative || f.type == FrameType::kUnknown || f.type == FrameType::kKernel);
}

struct ExecutableHash {
  size_t operator()(const Executable& e) const {
    return absl::HashOf(e.file_name, e.htlhash, e.gnu_build_id, e.go_build_id);
  }
};
struct FrameHash {
  size_t operator()(const Frame& f) const {
    return absl::HashOf(f.function, f.file, f.executable, f.line, f.address, static_cast<uint8_t>(f.type),
                        f.inlined);
  }
};

}  // namespace

std::vector<SampleType> StoreStats::Types() const {
  std::vector<SampleType> types;
  for (const SampleTypeCount& c : sample_types) types.push_back(c.info.type);
  return types;
}

std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

std::string HtlhashSymbolKey(std::string_view htlhash_hex) {
  return absl::StrCat("htlhash:", AsAbsl(htlhash_hex));
}
std::string GnuBuildIdSymbolKey(std::string_view build_id_hex) {
  return absl::StrCat("gnu:", AsAbsl(build_id_hex));
}
std::vector<std::string> SymbolKeys(std::string_view htlhash_hex, std::string_view gnu_build_id_hex) {
  std::vector<std::string> keys;
  if (!htlhash_hex.empty()) keys.push_back(HtlhashSymbolKey(htlhash_hex));
  if (!gnu_build_id_hex.empty()) keys.push_back(GnuBuildIdSymbolKey(gnu_build_id_hex));
  return keys;
}

std::string_view SymbolStateName(SymbolStatus::State state) {
  switch (state) {
    case SymbolStatus::State::kNotAttempted:
      return "not attempted";
    case SymbolStatus::State::kSymbolized:
      return "symbolized";
    case SymbolStatus::State::kNoSymbols:
      return "no symbols found";
    case SymbolStatus::State::kFailed:
      return "failed";
  }
  return "not attempted";
}

std::string DefaultDataDirectory() {
  const char* home = std::getenv("HOME");
  std::string base = home ? home : ".";
#ifdef __APPLE__
  return base + "/Library/Application Support/kiln";
#else
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg) return std::string(xdg) + "/kiln";
  return base + "/.local/share/kiln";
#endif
}

namespace {

// ============================================================================
// [SECTION] In-memory dictionary
// ============================================================================

// The store-global dictionary plus the hash indexes that deduplicate new
// entries. Guarded by RocksStore::dict_mutex_.
struct GlobalDictionary {
  ProfileDictionary dict;
  // Flat tables: interning is the hot part of Write(), and node-based maps
  // cost a cache miss per lookup.
  absl::flat_hash_map<std::string, uint32_t> string_ids;
  absl::flat_hash_map<Executable, uint32_t, ExecutableHash> executable_ids;
  absl::flat_hash_map<Frame, uint32_t, FrameHash> frame_ids;
  absl::flat_hash_map<std::string, uint32_t> stack_ids;          // key: EncodeIds bytes
  absl::flat_hash_map<std::string, uint32_t> attribute_set_ids;  // key: EncodeAttributes bytes
  absl::flat_hash_map<std::string, uint32_t> link_ids;           // key: EncodeLink bytes
  // Distinct values per attribute key (string ids), for the caps.
  absl::flat_hash_map<uint32_t, absl::flat_hash_set<uint32_t>> values_by_key;

  GlobalDictionary() {
    string_ids.emplace("", 0);
    executable_ids.emplace(Executable{}, 0);
    frame_ids.emplace(Frame{}, 0);
    stack_ids.emplace(EncodeIds(nullptr, nullptr), 0);
    attribute_set_ids.emplace(EncodeAttributes(nullptr, nullptr), 0);
    link_ids.emplace(EncodeLink(Link{}), 0);
  }

  // Sizes of every table, to roll back a failed write.
  struct Mark {
    size_t strings, executables, frames, stacks, stack_frames, attribute_sets, attributes, links;
    std::vector<SampleTypeInfo> sample_types;  // few and small: kept whole (periods change in place)
  };
  Mark Snapshot() const {
    return {dict.strings.size(),
            dict.executables.size(),
            dict.frames.size(),
            dict.stack_offsets.size(),
            dict.stack_frames.size(),
            dict.attribute_set_offsets.size(),
            dict.attributes.size(),
            dict.links.size(),
            dict.sample_types};
  }
};

struct Counters {
  std::vector<uint64_t> samples_by_type;  // indexed by sample type id
  uint64_t blocks = 0;
  int64_t first_sample_ns = 0;
  int64_t last_sample_ns = 0;
  uint64_t next_block_seq = 1;

  uint64_t samples() const {
    uint64_t n = 0;
    for (uint64_t k : samples_by_type) n += k;
    return n;
  }
  void Add(uint32_t sample_type, uint64_t n) {
    if (samples_by_type.size() <= sample_type) samples_by_type.resize(sample_type + 1);
    samples_by_type[sample_type] += n;
  }
  std::string Encode() const {
    std::string v;
    PutVarint(&v, samples_by_type.size());
    for (uint64_t k : samples_by_type) PutVarint(&v, k);
    PutVarint(&v, blocks);
    PutVarint(&v, ZigZag(first_sample_ns));
    PutVarint(&v, ZigZag(last_sample_ns));
    PutVarint(&v, next_block_seq);
    return v;
  }
  // `legacy_kinds`: schema 1 wrote exactly four fixed per-kind counts
  // without a length.
  bool Decode(std::string_view bytes, bool legacy_kinds = false) {
    ValueReader r{bytes.data(), bytes.data() + bytes.size()};
    const uint64_t n = legacy_kinds ? 4 : r.Next();
    if (!r.ok || n > bytes.size()) return false;
    samples_by_type.assign(n, 0);
    for (uint64_t& k : samples_by_type) k = r.Next();
    blocks = r.Next();
    first_sample_ns = UnZigZag(r.Next());
    last_sample_ns = UnZigZag(r.Next());
    next_block_seq = r.Next();
    return r.ok;
  }
};

class RocksStore final : public Store {
 public:
  RocksStore(std::string dir, bool read_only, const StoreOptions& options)
      : dir_(std::move(dir)), read_only_(read_only), options_(options) {}
  ~RocksStore() override {
    {
      std::lock_guard lock(settle_mu_);
      settle_stop_ = true;
    }
    settle_cv_.notify_all();
    if (settle_thread_.joinable()) settle_thread_.join();
    if (db_ != nullptr) {
      // Flushed on the way out, so a stopped kiln leaves compressed tables
      // and no write-ahead log to replay (a WAL holds samples at twice
      // their settled size). Failing here loses nothing: the WAL stays.
      if (!read_only_) (void)db_->Flush(rocksdb::FlushOptions(), handles_);
      for (auto* h : handles_) db_->DestroyColumnFamilyHandle(h);
      db_->Close();
      delete db_;
    }
  }
  // Starts the settling thread (read-write stores only).
  void StartSettling();

  absl::Status OpenDb();
  absl::Status Write(const ProfileBatch& batch) override;
  absl::StatusOr<std::shared_ptr<const ProfileSlice>> Run(const Query& query) const override;
  absl::StatusOr<Timeline> RunTimeline(const Query& query, int bucket_count) const override;
  StoreStats Stats() const override;
  std::vector<std::string> AttributeKeys() const override;
  std::vector<std::string> AttributeValues(std::string_view key, size_t max) const override;
  std::vector<std::vector<std::string>> AttributeCombinations(const std::vector<std::string>& keys,
                                                              size_t max) const override;
  absl::Status AppendLog(LogLevel level, std::string_view message) override;
  std::vector<LogEntry> ReadLog(size_t max) const override;
  absl::Status Flush() override;
  absl::Status Compact() override;
  absl::StatusOr<RetentionReport> ApplyRetention(int64_t now_ns) override;
  absl::Status AddDataLoss(const DataLossCounts& counts) override;
  DataLossCounts DataLossTotals() const override {
    std::lock_guard lock(loss_mutex_);
    DataLossCounts out{};
    for (size_t i = 0; i < out.size() && i < losses_.size(); ++i) out[i] = losses_[i];
    return out;
  }
  absl::Status PutSymbols(const std::vector<std::string>& keys, SymbolTable table,
                          const SymbolStatus& status) override;
  absl::Status PutSymbolStatus(const std::vector<std::string>& keys, const SymbolStatus& status,
                               bool drop_table) override;
  std::vector<std::pair<std::string, SymbolStatus>> SymbolStatuses() const override;
  uint64_t SymbolsVersion() const override { return symbols_version_.load(); }
  std::vector<ExecutableInfo> Executables() const override;
  const std::string& directory() const override { return dir_; }
  bool read_only() const override { return read_only_; }

 private:
  absl::Status LoadDictionary();
  absl::Status LoadMeta();
  // Schema 1 kept four fixed sample kinds in a key byte; rewrites its block
  // keys and counters for sample types.
  absl::Status UpgradeFromSchema1();
  absl::Status LoadSymbolStatuses();
  // Before a write of about `bytes`: the disk guard's answer, logged when
  // it changes.
  absl::Status AdmitWrite(uint64_t bytes);
  // After every successful write: what the settling thread decides from.
  void NoteWrite();
  absl::Status WriteAndNote(rocksdb::WriteBatch* batch, std::string_view what) {
    if (absl::Status admitted = AdmitWrite(batch->GetDataSize()); !admitted.ok()) return admitted;
    rocksdb::Status written = db_->Write(rocksdb::WriteOptions(), batch);
    if (!written.ok() && disk_) disk_->NoteWriteError(written.ToString());
    absl::Status s = FromRocks(written, what);
    if (s.ok()) NoteWrite();
    return s;
  }
  void SettleLoop();
  // The table stored for `key` (following an alias), loaded on first use;
  // null when there is none or it cannot be read.
  std::shared_ptr<const SymbolTable> SymbolTableFor(const std::string& key) const;
  // The table for an executable of the global dictionary under any of its
  // keys, or null. Caller holds dict_mutex_.
  std::shared_ptr<const SymbolTable> SymbolTableForExecutable(const Executable& e) const;
  bool HasSymbols() const;
  // Visits every stored sample of the query's sample type in its time
  // range that passes its filters. The range is cut into contiguous time
  // shards scanned side by side, one thread each (a scan is decompression
  // and decoding bound; cores are idle otherwise): `make(stack_count)`
  // makes a shard's state (stack_count bounds every stack id seen),
  // `visit(state, sample)` runs on the shard's thread, and `states` gets
  // them in time order, so merging them in order gives what one
  // sequential scan would.
  template <typename State, typename Make, typename Visit>
  absl::Status Scan(const Query& query, const Make& make, const Visit& visit, std::vector<State>* states) const;

  rocksdb::ColumnFamilyHandle* meta_cf() const { return handles_[0]; }
  rocksdb::ColumnFamilyHandle* blocks_cf() const { return handles_[1]; }
  rocksdb::ColumnFamilyHandle* log_cf() const { return handles_[2]; }
  // Null for a store opened read-only that was written before symbols
  // existed.
  rocksdb::ColumnFamilyHandle* symbols_cf() const { return handles_.size() > 3 ? handles_[3] : nullptr; }

  const std::string dir_;
  const bool read_only_;
  const StoreOptions options_;
  rocksdb::DB* db_ = nullptr;

  // Settling (StoreOptions): Unix ns of the last write and of the first
  // write not yet flushed (0 = everything flushed).
  std::atomic<int64_t> last_write_ns_{0};
  std::atomic<int64_t> first_unflushed_ns_{0};
  std::atomic<uint64_t> data_version_{0};
  std::atomic<uint64_t> retention_deleted_{0};
  std::mutex retention_mutex_;       // one retention pass at a time
  mutable std::mutex loss_mutex_;
  std::vector<uint64_t> losses_;     // guarded by loss_mutex_; at least kDataLossCount
  std::unique_ptr<DiskGuard> disk_;  // read-write stores
  std::mutex settle_mu_;
  std::condition_variable settle_cv_;
  bool settle_stop_ = false;  // guarded by settle_mu_
  std::thread settle_thread_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;

  std::mutex write_mutex_;                // serializes Write()
  mutable std::shared_mutex dict_mutex_;  // guards dict_ and counters_
  GlobalDictionary dict_;
  Counters counters_;
  std::atomic<uint64_t> next_log_seq_{1};
  std::mutex log_mutex_;

  // Symbols: statuses are small and all in memory; tables are loaded when a
  // query first needs them and then shared by every later query.
  mutable std::mutex symbols_mutex_;
  std::map<std::string, SymbolStatus> symbol_statuses_;
  mutable absl::flat_hash_map<std::string, std::shared_ptr<const SymbolTable>> symbol_tables_;
  std::atomic<uint64_t> symbols_version_{0};
};

// ============================================================================
// [SECTION] Open
// ============================================================================

namespace {

// RocksDB's diagnostic LOG file, written through stdio. RocksDB's own
// logger asserts (and Debian's build aborts) when it writes again after a
// write to LOG failed, which a full disk makes happen exactly when RocksDB
// logs its ENOSPC error; a failed fwrite here is just a lost line.
class StdioInfoLog final : public rocksdb::Logger {
 public:
  static std::shared_ptr<rocksdb::Logger> Open(const std::string& dir) {
    namespace fs = std::filesystem;
    const fs::path path = fs::path(dir) / "LOG";
    std::error_code ec;
    // One generation kept: the file is for diagnosing the last runs.
    if (fs::file_size(path, ec) > kMaxBytes) fs::rename(path, fs::path(dir) / "LOG.old", ec);
    std::FILE* f = std::fopen(path.c_str(), "ae");
    if (f == nullptr) return nullptr;  // RocksDB then makes its own
    return std::make_shared<StdioInfoLog>(f);
  }
  explicit StdioInfoLog(std::FILE* f) : rocksdb::Logger(rocksdb::InfoLogLevel::INFO_LEVEL), file_(f) {}
  ~StdioInfoLog() override { std::fclose(file_); }
  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    std::lock_guard lock(mu_);
    std::vfprintf(file_, format, ap);
    std::fputc('\n', file_);
    std::fflush(file_);
    std::clearerr(file_);  // the next line tries again
  }

 private:
  static constexpr uintmax_t kMaxBytes = 8 << 20;
  std::mutex mu_;
  std::FILE* file_;
};

}  // namespace

absl::Status RocksStore::OpenDb() {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (read_only_) {
    if (!fs::exists(fs::path(dir_) / "CURRENT", ec)) {
      return absl::NotFoundError(absl::StrCat("no kiln store in ", dir_, " (start kiln with --data-dir ",
                                              dir_, " or import a capture first)"));
    }
  } else {
    fs::create_directories(dir_, ec);
    if (ec) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot create data directory ", dir_, ": ", ec.message()));
    }
  }

  rocksdb::DBOptions db_options;
  db_options.create_if_missing = !read_only_;
  db_options.create_missing_column_families = !read_only_;
  db_options.max_background_jobs = 2;
  db_options.keep_log_file_num = 3;
  if (!read_only_) db_options.info_log = StdioInfoLog::Open(dir_);
  // Column families that rarely write (the log, symbols) would otherwise
  // keep every WAL file since their last flush alive; past this total,
  // RocksDB flushes them so old WAL files can go.
  db_options.max_total_wal_size = 64 << 20;

  rocksdb::ColumnFamilyOptions meta_options;
  meta_options.compression = rocksdb::kLZ4Compression;
  rocksdb::ColumnFamilyOptions block_options;
  // Blocks are written once and read in order: zstd at a high-ish level
  // pays for itself in disk bytes per sample. Level 12 at the bottom keeps
  // compaction affordable on a laptop (level 19 saves ~2% more for 5x the
  // CPU).
  block_options.compression = rocksdb::kZSTD;
  block_options.bottommost_compression = rocksdb::kZSTD;
  block_options.compression_opts.level = 6;
  block_options.bottommost_compression_opts.level = 12;
  block_options.bottommost_compression_opts.enabled = true;
  rocksdb::BlockBasedTableOptions table;
  table.block_size = 256 * 1024;
  // Decompressed blocks, kept: the window scans the same range several
  // times per update (timeline, heat map, the slice), and zstd is a third
  // of a scan. 128 MiB holds about 15 M samples' blocks.
  table.block_cache = rocksdb::NewLRUCache(128 << 20);
  block_options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  rocksdb::ColumnFamilyOptions log_options;
  log_options.compression = rocksdb::kLZ4Compression;
  // Symbol tables are large values (MBs for a big C++ binary), written once
  // and read whole: blob files keep them out of the LSM tree's compactions.
  rocksdb::ColumnFamilyOptions symbol_options;
  symbol_options.compression = rocksdb::kLZ4Compression;
  symbol_options.enable_blob_files = true;
  symbol_options.min_blob_size = 4096;
  symbol_options.blob_compression_type = rocksdb::kZSTD;

  std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {
      {rocksdb::kDefaultColumnFamilyName, meta_options},
      {"blocks", block_options},
      {"log", log_options},
      {"symbols", symbol_options},
  };
  rocksdb::Status s;
  if (read_only_) {
    // A store from before symbols existed has no "symbols" family, and a
    // read-only open cannot create it.
    std::vector<std::string> existing;
    if (rocksdb::DB::ListColumnFamilies(db_options, dir_, &existing).ok() &&
        std::find(existing.begin(), existing.end(), "symbols") == existing.end()) {
      cfs.pop_back();
    }
    s = rocksdb::DB::OpenForReadOnly(db_options, dir_, cfs, &handles_, &db_);
  } else {
    s = rocksdb::DB::Open(db_options, dir_, cfs, &handles_, &db_);
  }
  if (!s.ok()) {
    std::string text = s.ToString();
    if (s.IsIOError() && text.find("lock") != std::string::npos) {
      return absl::UnavailableError(
          absl::StrCat("data directory ", dir_,
                       " is in use by another kiln process; stop it, or read it with `kiln export`/`kiln "
                       "stats` (they open it read-only), or choose another --data-dir"));
    }
    return absl::InternalError(absl::StrCat("cannot open kiln store in ", dir_, ": ", text));
  }

  std::string version;
  s = db_->Get(rocksdb::ReadOptions(), meta_cf(), kSchemaKey, &version);
  if (s.IsNotFound()) {
    if (read_only_) {
      return absl::FailedPreconditionError(
          absl::StrCat(dir_, " is not a kiln store (no schema version key)"));
    }
    std::string v;
    PutBigEndian32(&v, kSchemaVersion);
    rocksdb::WriteOptions wo;
    wo.sync = true;
    if (auto st = FromRocks(db_->Put(wo, meta_cf(), kSchemaKey, v), "writing schema version"); !st.ok()) {
      return st;
    }
  } else if (!s.ok()) {
    return FromRocks(s, "reading schema version");
  } else {
    uint32_t found = version.size() == 4 ? GetBigEndian32(version.data()) : 0;
    if (found == 1 && read_only_) {
      return absl::FailedPreconditionError(
          absl::StrCat("kiln store in ", dir_,
                       " was written by an older kiln (schema 1); open it once with kiln --data-dir ", dir_,
                       " (or `kiln import`) to upgrade it, then read it"));
    }
    if (found == 1) {
      if (auto st = UpgradeFromSchema1(); !st.ok()) return st;
      found = kSchemaVersion;
    }
    if (found != kSchemaVersion) {
      return absl::FailedPreconditionError(absl::StrCat("kiln store in ", dir_, " has schema version ", found,
                                                        "; this kiln reads version ", kSchemaVersion,
                                                        ". Use a kiln that matches, or a new --data-dir."));
    }
  }
  if (auto st = LoadMeta(); !st.ok()) return st;
  if (auto st = LoadSymbolStatuses(); !st.ok()) return st;
  return LoadDictionary();
}

absl::Status RocksStore::UpgradeFromSchema1() {
  // Schema 1's kinds, in key-byte order, as the sample types their data
  // was sent as. "other" folded every unrecognized type together, so its
  // unit is unknown.
  const SampleTypeInfo kLegacy[4] = {{OnCpuSamples()}, {OffCpuTime()}, {ProbeEvents()}, {{"other", ""}}};
  Counters old;
  std::string v;
  if (rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), meta_cf(), kStatsKey, &v); s.ok()) {
    if (!old.Decode(v, /*legacy_kinds=*/true)) return absl::DataLossError("store statistics key is corrupt");
  } else if (!s.IsNotFound()) {
    return FromRocks(s, "reading statistics");
  }
  old.samples_by_type.resize(4, 0);  // a store that never counted (no stats key yet)
  // Kind 0 becomes sample type 0 (on-CPU samples, implicit); the others get
  // ids in kind order, where they have samples.
  uint32_t ids[4] = {0, 0, 0, 0};
  Counters counters = old;
  counters.samples_by_type.assign(1, old.samples_by_type[0]);
  rocksdb::WriteBatch wb;
  auto id_of = [&](uint32_t kind) {
    if (kind != 0 && ids[kind] == 0) {
      ids[kind] = static_cast<uint32_t>(counters.samples_by_type.size());
      counters.samples_by_type.push_back(old.samples_by_type[kind]);
      wb.Put(meta_cf(), DictKey(kTagSampleType, ids[kind]), EncodeSampleType(kLegacy[kind]));
    }
    return ids[kind];
  };
  for (uint32_t k = 1; k < 4; ++k) {
    if (old.samples_by_type[k] != 0) id_of(k);
  }
  // Old keys are 17 bytes, new ones 20: an upgrade cut short by a crash
  // resumes where it stopped (the version key is written last).
  rocksdb::WriteOptions wo;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), blocks_cf()));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    rocksdb::Slice key = it->key();
    if (key.size() != 17) continue;
    const auto kind = static_cast<uint8_t>(key[0]);
    if (kind >= 4) return absl::DataLossError("store block key of an unknown kind");
    std::string moved;
    PutBigEndian32(&moved, id_of(kind));
    moved.append(key.data() + 1, 16);
    wb.Put(blocks_cf(), moved, it->value());
    wb.Delete(blocks_cf(), key);
    if (wb.GetDataSize() > (8u << 20)) {
      if (auto st = FromRocks(db_->Write(wo, &wb), "upgrading the store"); !st.ok()) return st;
      wb.Clear();
    }
  }
  if (!it->status().ok()) return FromRocks(it->status(), "upgrading the store");
  wb.Put(meta_cf(), kStatsKey, counters.Encode());
  std::string version;
  PutBigEndian32(&version, kSchemaVersion);
  wb.Put(meta_cf(), kSchemaKey, version);
  wo.sync = true;
  return FromRocks(db_->Write(wo, &wb), "upgrading the store");
}

absl::Status RocksStore::LoadMeta() {
  std::string v;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), meta_cf(), kStatsKey, &v);
  if (s.ok()) {
    if (!counters_.Decode(v)) return absl::DataLossError("store statistics key is corrupt");
  } else if (!s.IsNotFound()) {
    return FromRocks(s, "reading statistics");
  }
  losses_.assign(kDataLossCount, 0);
  if (db_->Get(rocksdb::ReadOptions(), meta_cf(), kLossKey, &v).ok()) {
    ValueReader r{v.data(), v.data() + v.size()};
    const uint64_t n = r.Next();
    if (r.ok && n <= v.size()) {
      losses_.resize(std::max<size_t>(n, kDataLossCount), 0);
      for (uint64_t i = 0; i < n; ++i) losses_[i] = r.Next();
    }
  }
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), log_cf()));
  it->SeekToLast();
  if (it->Valid() && it->key().size() == 8) next_log_seq_ = GetBigEndian64(it->key().data()) + 1;
  return absl::OkStatus();
}

absl::Status RocksStore::AddDataLoss(const DataLossCounts& counts) {
  if (read_only_) return absl::FailedPreconditionError("store is open read-only");
  std::lock_guard lock(loss_mutex_);
  bool any = false;
  for (size_t i = 0; i < counts.size(); ++i) any = any || counts[i] != 0;
  if (!any) return absl::OkStatus();
  std::vector<uint64_t> next = losses_;
  for (size_t i = 0; i < counts.size(); ++i) next[i] += counts[i];
  std::string v;
  PutVarint(&v, next.size());
  for (uint64_t k : next) PutVarint(&v, k);
  absl::Status s =
      FromRocks(db_->Put(rocksdb::WriteOptions(), meta_cf(), kLossKey, v), "writing data-loss counts");
  // Kept in memory even when the disk refuses: `kiln stats` of a running
  // store may lag, the window does not.
  losses_ = std::move(next);
  return s;
}

absl::Status RocksStore::LoadDictionary() {
  GlobalDictionary& g = dict_;
  ProfileDictionary& d = g.dict;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), meta_cf()));
  // Entries of each table are written with consecutive ids, so they load in
  // id order; a gap means a damaged store.
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    rocksdb::Slice key = it->key();
    if (key.size() != 5) continue;  // meta:* keys
    char tag = key[0];
    uint32_t id = GetBigEndian32(key.data() + 1);
    rocksdb::Slice val = it->value();
    ValueReader r{val.data(), val.data() + val.size()};
    switch (tag) {
      case kTagString: {
        if (id != d.strings.size()) return Corrupt("string", id);
        d.strings.emplace_back(val.data(), val.size());
        g.string_ids.emplace(d.strings.back(), id);
        break;
      }
      case kTagExecutable: {
        if (id != d.executables.size()) return Corrupt("executable", id);
        Executable e;
        e.file_name = static_cast<uint32_t>(r.Next());
        e.htlhash = static_cast<uint32_t>(r.Next());
        e.gnu_build_id = static_cast<uint32_t>(r.Next());
        e.go_build_id = static_cast<uint32_t>(r.Next());
        if (!r.ok) return Corrupt("executable", id);
        d.executables.push_back(e);
        g.executable_ids.emplace(e, id);
        break;
      }
      case kTagFrame: {
        if (id != d.frames.size()) return Corrupt("frame", id);
        Frame f;
        f.function = static_cast<uint32_t>(r.Next());
        f.file = static_cast<uint32_t>(r.Next());
        f.executable = static_cast<uint32_t>(r.Next());
        f.line = UnZigZag(r.Next());
        f.address = r.Next();
        f.type = static_cast<FrameType>(r.Byte());
        f.inlined = r.Byte() != 0;
        if (!r.ok) return Corrupt("frame", id);
        d.frames.push_back(f);
        g.frame_ids.emplace(f, id);
        break;
      }
      case kTagStack: {
        if (id != d.StackCount()) return Corrupt("stack", id);
        uint64_t n = r.Next();
        if (n > val.size()) return Corrupt("stack", id);
        for (uint64_t i = 0; i < n; ++i) d.stack_frames.push_back(static_cast<uint32_t>(r.Next()));
        if (!r.ok) return Corrupt("stack", id);
        d.stack_offsets.push_back(static_cast<uint32_t>(d.stack_frames.size()));
        g.stack_ids.emplace(std::string(val.data(), val.size()), id);
        break;
      }
      case kTagAttributeSet: {
        if (id != d.AttributeSetCount()) return Corrupt("attribute set", id);
        uint64_t n = r.Next();
        if (n > val.size()) return Corrupt("attribute set", id);
        for (uint64_t i = 0; i < n; ++i) {
          Attribute a;
          a.key = static_cast<uint32_t>(r.Next());
          a.value = static_cast<uint32_t>(r.Next());
          d.attributes.push_back(a);
        }
        if (!r.ok) return Corrupt("attribute set", id);
        for (size_t i = d.attribute_set_offsets.back(); i < d.attributes.size(); ++i) {
          g.values_by_key[d.attributes[i].key].insert(d.attributes[i].value);
        }
        d.attribute_set_offsets.push_back(static_cast<uint32_t>(d.attributes.size()));
        g.attribute_set_ids.emplace(std::string(val.data(), val.size()), id);
        break;
      }
      case kTagSampleType: {
        // Id 0 (on-CPU samples) exists before anything is stored; its entry
        // only carries a period.
        if (id > d.sample_types.size()) return Corrupt("sample type", id);
        SampleTypeInfo t;
        if (!DecodeSampleType(std::string_view(val.data(), val.size()), &t)) return Corrupt("sample type", id);
        if (id == d.sample_types.size()) {
          d.sample_types.push_back(t);
        } else {
          d.sample_types[id] = t;
        }
        break;
      }
      case kTagLink: {
        if (id != d.links.size()) return Corrupt("link", id);
        uint64_t n = r.Next();
        if (!r.ok || n > static_cast<uint64_t>(r.end - r.p)) return Corrupt("link", id);
        Link l;
        l.trace_id.assign(r.p, n);
        l.span_id.assign(r.p + n, r.end);
        d.links.push_back(l);
        g.link_ids.emplace(std::string(val.data(), val.size()), id);
        break;
      }
      default:
        break;
    }
  }
  if (!it->status().ok()) return FromRocks(it->status(), "loading dictionary");
  // Every reference must point at an entry that exists.
  for (size_t i = 0; i < d.frames.size(); ++i) {
    const Frame& f = d.frames[i];
    if (f.function >= d.strings.size() || f.file >= d.strings.size() ||
        f.executable >= d.executables.size()) {
      return Corrupt("frame", static_cast<uint32_t>(i));
    }
  }
  for (uint32_t f : d.stack_frames) {
    if (f >= d.frames.size()) return absl::DataLossError("store dictionary: stack refers to a missing frame");
  }
  for (const Attribute& a : d.attributes) {
    if (a.key >= d.strings.size() || a.value >= d.strings.size()) {
      return absl::DataLossError("store dictionary: attribute refers to a missing string");
    }
  }
  for (const Executable& e : d.executables) {
    uint32_t n = static_cast<uint32_t>(d.strings.size());
    if (e.file_name >= n || e.htlhash >= n || e.gnu_build_id >= n || e.go_build_id >= n) {
      return absl::DataLossError("store dictionary: executable refers to a missing string");
    }
  }
  return absl::OkStatus();
}

}  // namespace

bool IsStoreInUse(const absl::Status& status) { return absl::IsUnavailable(status); }

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& dir, Mode mode,
                                                   const StoreOptions& options) {
  auto store = std::make_unique<RocksStore>(dir, mode == Mode::kReadOnly, options);
  if (auto s = store->OpenDb(); !s.ok()) return s;
  if (mode == Mode::kReadWrite) store->StartSettling();
  return std::unique_ptr<Store>(std::move(store));
}

void RocksStore::NoteWrite() {
  data_version_.fetch_add(1);
  const int64_t now = UnixNowNs();
  last_write_ns_.store(now);
  int64_t none = 0;
  first_unflushed_ns_.compare_exchange_strong(none, now);
}

void RocksStore::StartSettling() {
  disk_ = std::make_unique<DiskGuard>(dir_, options_.disk_reserve_bytes);
  // After ENOSPC (or a read-only directory) RocksDB refuses every write
  // until resumed; the guard resumes it once space is back.
  disk_->SetRecovery([this] { return db_->Resume().ok(); });
  settle_thread_ = std::thread([this] { SettleLoop(); });
}

absl::Status RocksStore::AdmitWrite(uint64_t bytes) {
  bool changed = false;
  absl::Status s = disk_ ? disk_->Admit(bytes, &changed) : absl::OkStatus();
  // Said once per change in the Log, not per refused request.
  if (changed) {
    (void)AppendLog(s.ok() ? LogLevel::kInfo : LogLevel::kError,
                    s.ok() ? "storing works again: new data is accepted"
                           : "new data is refused: " + std::string(s.message()));
  }
  return s;
}

void RocksStore::SettleLoop() {
  const auto idle = options_.settle_after_idle;
  const auto max_age = options_.settle_max_age;
  // Looks often enough to act within a tenth of the shorter limit.
  const auto period = std::clamp<std::chrono::milliseconds>(
      std::min(idle, max_age) / 10, std::chrono::milliseconds(10), std::chrono::seconds(5));
  const bool retention = (options_.retention_age.count() > 0 || options_.retention_size_bytes > 0) &&
                         options_.retention_interval.count() > 0;
  // Retention at open, then every minute.
  int64_t next_retention_ns = 0;
  std::unique_lock lock(settle_mu_);
  while (!settle_cv_.wait_for(lock, next_retention_ns == 0 ? std::chrono::milliseconds(0) : period,
                              [this] { return settle_stop_; })) {
    if (retention && UnixNowNs() >= next_retention_ns) {
      lock.unlock();
      absl::StatusOr<RetentionReport> r = ApplyRetention(UnixNowNs());
      if (!r.ok())
        (void)AppendLog(LogLevel::kError, "retention failed: " + std::string(r.status().message()));
      lock.lock();
      next_retention_ns = UnixNowNs() + std::chrono::nanoseconds(options_.retention_interval).count();
    } else if (next_retention_ns == 0) {
      next_retention_ns = 1;  // no retention: just the normal period from now on
    }
    const int64_t first = first_unflushed_ns_.load();
    if (first == 0) continue;
    const int64_t now = UnixNowNs();
    const bool settled = now - last_write_ns_.load() >= std::chrono::nanoseconds(idle).count();
    const bool old = now - first >= std::chrono::nanoseconds(max_age).count();
    if (!settled && !old) continue;
    // Cleared before the flush: a write during it marks itself again.
    first_unflushed_ns_.store(0);
    lock.unlock();
    rocksdb::FlushOptions fo;
    if (rocksdb::Status flushed = db_->Flush(fo, handles_); !flushed.ok()) {
      if (disk_) disk_->NoteWriteError(flushed.ToString());
      // Kept for the next round (a full disk, say); the WAL still holds it.
      int64_t none = 0;
      first_unflushed_ns_.compare_exchange_strong(none, first);
    }
    lock.lock();
  }
}

namespace {

// ============================================================================
// [SECTION] Write
// ============================================================================

// Interns one batch into the global dictionary, queuing the new entries in
// `wb`, and remembers what it added so a failed write can be undone.
class BatchInterner {
 public:
  BatchInterner(GlobalDictionary* g, rocksdb::WriteBatch* wb, rocksdb::ColumnFamilyHandle* cf)
      : g_(*g), wb_(*wb), cf_(cf) {}

  absl::Status Intern(const ProfileDictionary& local) {
    const ProfileDictionary& l = local;
    ProfileDictionary& d = g_.dict;
    strings_.resize(l.strings.size());
    for (size_t i = 0; i < l.strings.size(); ++i) strings_[i] = InternString(l.strings[i]);

    executables_.resize(l.executables.size());
    for (size_t i = 0; i < l.executables.size(); ++i) {
      Executable e = l.executables[i];
      if (!MapString(&e.file_name) || !MapString(&e.htlhash) || !MapString(&e.gnu_build_id) ||
          !MapString(&e.go_build_id)) {
        return Bad("executable", i, "string index out of range");
      }
      auto [it, added] = g_.executable_ids.try_emplace(e, static_cast<uint32_t>(d.executables.size()));
      if (added) {
        d.executables.push_back(e);
        new_executables_.push_back(e);
        wb_.Put(cf_, DictKey(kTagExecutable, it->second), EncodeExecutable(e));
      }
      executables_[i] = it->second;
    }

    frames_.resize(l.frames.size());
    for (size_t i = 0; i < l.frames.size(); ++i) {
      Frame f = l.frames[i];
      if (!MapString(&f.function) || !MapString(&f.file)) return Bad("frame", i, "string index out of range");
      if (f.executable >= executables_.size()) return Bad("frame", i, "executable index out of range");
      f.executable = executables_[f.executable];
      auto [it, added] = g_.frame_ids.try_emplace(f, static_cast<uint32_t>(d.frames.size()));
      if (added) {
        d.frames.push_back(f);
        new_frames_.push_back(f);
        wb_.Put(cf_, DictKey(kTagFrame, it->second), EncodeFrame(f));
      }
      frames_[i] = it->second;
    }

    if (l.stack_offsets.size() < 2 || l.stack_offsets.back() != l.stack_frames.size()) {
      return absl::InvalidArgumentError("batch stack table is malformed");
    }
    stacks_.resize(l.StackCount());
    std::vector<uint32_t> ids;
    std::string key;
    for (uint32_t i = 0; i < l.StackCount(); ++i) {
      if (l.stack_offsets[i] > l.stack_offsets[i + 1]) return Bad("stack", i, "offsets decrease");
      ids.clear();
      for (uint32_t f : l.Stack(i)) {
        if (f >= frames_.size()) return Bad("stack", i, "frame index out of range");
        ids.push_back(frames_[f]);
      }
      key = EncodeIds(ids.data(), ids.data() + ids.size());
      stacks_[i] =
          InternKey(&g_.stack_ids, key, static_cast<uint32_t>(d.StackCount()), kTagStack, &new_stacks_);
      if (stacks_[i] == d.StackCount()) {
        d.stack_frames.insert(d.stack_frames.end(), ids.begin(), ids.end());
        d.stack_offsets.push_back(static_cast<uint32_t>(d.stack_frames.size()));
      }
    }

    if (l.attribute_set_offsets.size() < 2 || l.attribute_set_offsets.back() != l.attributes.size()) {
      return absl::InvalidArgumentError("batch attribute set table is malformed");
    }
    attribute_sets_.resize(l.AttributeSetCount());
    std::vector<Attribute> attrs;
    for (uint32_t i = 0; i < l.AttributeSetCount(); ++i) {
      if (l.attribute_set_offsets[i] > l.attribute_set_offsets[i + 1]) {
        return Bad("attribute set", i, "offsets decrease");
      }
      attrs.clear();
      for (const Attribute& a : l.AttributeSet(i)) {
        Attribute g = a;
        if (!MapString(&g.key) || !MapString(&g.value))
          return Bad("attribute set", i, "string index out of range");
        if (!ApplyCaps(&g)) continue;
        attrs.push_back(g);
      }
      // Global ids sort differently from the producer's strings; key order by
      // id keeps the encoding canonical so equal sets dedupe.
      std::sort(attrs.begin(), attrs.end(),
                [](const Attribute& a, const Attribute& b) { return a.key < b.key; });
      key = EncodeAttributes(attrs.data(), attrs.data() + attrs.size());
      attribute_sets_[i] = InternKey(&g_.attribute_set_ids, key, static_cast<uint32_t>(d.AttributeSetCount()),
                                     kTagAttributeSet, &new_attribute_sets_);
      if (attribute_sets_[i] == d.AttributeSetCount()) {
        d.attributes.insert(d.attributes.end(), attrs.begin(), attrs.end());
        d.attribute_set_offsets.push_back(static_cast<uint32_t>(d.attributes.size()));
      }
    }

    sample_types_.resize(l.sample_types.size());
    for (size_t i = 0; i < l.sample_types.size(); ++i) {
      // AddSampleType's rule (the newest period is the one shown); an
      // entry is written when it is new or its period changed.
      const size_t known = d.sample_types.size();
      const std::optional<uint32_t> old = d.SampleTypeIndex(l.sample_types[i].type);
      const SampleTypeInfo before = old ? d.sample_types[*old] : SampleTypeInfo{};
      const uint32_t id = d.AddSampleType(l.sample_types[i]);
      if (id == known || !(d.sample_types[id] == before)) {
        wb_.Put(cf_, DictKey(kTagSampleType, id), EncodeSampleType(d.sample_types[id]));
      }
      sample_types_[i] = id;
    }

    links_.resize(l.links.size());
    for (size_t i = 0; i < l.links.size(); ++i) {
      key = EncodeLink(l.links[i]);
      links_[i] = InternKey(&g_.link_ids, key, static_cast<uint32_t>(d.links.size()), kTagLink, &new_links_);
      if (links_[i] == d.links.size()) d.links.push_back(l.links[i]);
    }
    return absl::OkStatus();
  }

  // Removes everything Intern() added (after a failed RocksDB write).
  void Undo(const GlobalDictionary::Mark& mark) {
    ProfileDictionary& d = g_.dict;
    for (auto [key, value] : new_key_values_) {
      auto it = g_.values_by_key.find(key);
      if (it == g_.values_by_key.end()) continue;
      it->second.erase(value);
      if (it->second.empty()) g_.values_by_key.erase(it);
    }
    for (size_t i = mark.strings; i < d.strings.size(); ++i) g_.string_ids.erase(d.strings[i]);
    for (const Executable& e : new_executables_) g_.executable_ids.erase(e);
    for (const Frame& f : new_frames_) g_.frame_ids.erase(f);
    for (const std::string& k : new_stacks_) g_.stack_ids.erase(k);
    for (const std::string& k : new_attribute_sets_) g_.attribute_set_ids.erase(k);
    for (const std::string& k : new_links_) g_.link_ids.erase(k);
    d.strings.resize(mark.strings);
    d.executables.resize(mark.executables);
    d.frames.resize(mark.frames);
    d.stack_offsets.resize(mark.stacks);
    d.stack_frames.resize(mark.stack_frames);
    d.attribute_set_offsets.resize(mark.attribute_sets);
    d.attributes.resize(mark.attributes);
    d.links.resize(mark.links);
    d.sample_types = mark.sample_types;
  }

  // Attribute values folded or keys left out by the caps in this batch.
  uint64_t capped_ = 0;
  size_t max_values_per_key_ = SIZE_MAX, max_keys_ = SIZE_MAX;

  // Batch-local to global id maps, valid after Intern().
  std::vector<uint32_t> strings_, executables_, frames_, stacks_, attribute_sets_, links_, sample_types_;

 private:
  // Looks `key` up in `ids`; a new key gets `next_id`, is queued for
  // RocksDB under `tag` and remembered in `added` for Undo().
  uint32_t InternKey(absl::flat_hash_map<std::string, uint32_t>* ids, const std::string& key,
                     uint32_t next_id, char tag, std::vector<std::string>* added) {
    if (auto it = ids->find(key); it != ids->end()) return it->second;
    ids->emplace(key, next_id);
    wb_.Put(cf_, DictKey(tag, next_id), key);
    added->push_back(key);
    return next_id;
  }

  // The cardinality caps (StoreOptions) on one attribute with global ids:
  // false to leave it out; its value may become "other".
  bool ApplyCaps(Attribute* a) {
    auto it = g_.values_by_key.find(a->key);
    if (it == g_.values_by_key.end()) {
      if (g_.values_by_key.size() >= max_keys_) {
        ++capped_;
        return false;
      }
      it = g_.values_by_key.try_emplace(a->key).first;
    }
    if (it->second.contains(a->value)) return true;
    if (it->second.size() >= max_values_per_key_) {
      ++capped_;
      a->value = InternString("other");
      if (it->second.contains(a->value)) return true;
    }
    it->second.insert(a->value);
    new_key_values_.emplace_back(a->key, a->value);
    return true;
  }
  std::vector<std::pair<uint32_t, uint32_t>> new_key_values_;  // for Undo

  uint32_t InternString(const std::string& s) {
    auto it = g_.string_ids.find(s);
    if (it != g_.string_ids.end()) return it->second;
    auto id = static_cast<uint32_t>(g_.dict.strings.size());
    g_.dict.strings.push_back(s);
    g_.string_ids.emplace(s, id);
    wb_.Put(cf_, DictKey(kTagString, id), s);
    return id;
  }
  bool MapString(uint32_t* index) {
    if (*index >= strings_.size()) return false;
    *index = strings_[*index];
    return true;
  }
  static absl::Status Bad(std::string_view table, size_t i, std::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch ", std::string(table), " ", i, ": ", std::string(what)));
  }

  GlobalDictionary& g_;
  rocksdb::WriteBatch& wb_;
  rocksdb::ColumnFamilyHandle* cf_;
  std::vector<Executable> new_executables_;
  std::vector<Frame> new_frames_;
  std::vector<std::string> new_stacks_, new_attribute_sets_, new_links_;
};

absl::Status RocksStore::Write(const ProfileBatch& batch) {
  if (read_only_) return absl::FailedPreconditionError("store is open read-only");
  // About what a sample costs in the WAL, to re-read the free space sooner
  // while big batches arrive.
  if (absl::Status admitted = AdmitWrite(batch.samples.size() * 8); !admitted.ok()) return admitted;
  std::lock_guard write_lock(write_mutex_);
  const ProfileDictionary& l = batch.dict;
  // Check the samples before touching anything shared.
  for (size_t i = 0; i < batch.samples.size(); ++i) {
    const Sample& s = batch.samples[i];
    if (s.stack >= l.StackCount() || s.attribute_set >= l.AttributeSetCount() || s.link >= l.links.size() ||
        s.sample_type >= l.sample_types.size()) {
      return absl::InvalidArgumentError(absl::StrCat("batch sample ", i, " has an index out of range"));
    }
  }

  rocksdb::WriteBatch wb;
  // Queries hold dict_mutex_ shared while they pin a RocksDB snapshot and
  // read the dictionary, so holding it here across the RocksDB write means a
  // query never sees a block whose ids are not yet in memory.
  std::unique_lock dict_lock(dict_mutex_);
  GlobalDictionary::Mark mark = dict_.Snapshot();
  BatchInterner interner(&dict_, &wb, meta_cf());
  interner.max_values_per_key_ = options_.max_values_per_attribute_key;
  interner.max_keys_ = options_.max_attribute_keys;
  if (auto s = interner.Intern(l); !s.ok()) {
    interner.Undo(mark);
    return s;
  }

  // Group samples by (sample type, bucket) and sort each group by time.
  struct Keyed {
    uint32_t sample_type;
    int64_t bucket;
    BlockSample sample;
  };
  std::vector<Keyed> keyed;
  keyed.reserve(batch.samples.size());
  for (const Sample& s : batch.samples) {
    keyed.push_back(
        {interner.sample_types_[s.sample_type], FloorDiv(s.time_ns, kBucketNs),
         BlockSample{s.time_ns, interner.stacks_[s.stack], interner.attribute_sets_[s.attribute_set],
                     interner.links_[s.link], s.value}});
  }
  std::sort(keyed.begin(), keyed.end(), [](const Keyed& a, const Keyed& b) {
    if (a.sample_type != b.sample_type) return a.sample_type < b.sample_type;
    return a.bucket < b.bucket;  // EncodeSampleBlock orders each block itself
  });
  Counters counters = counters_;
  std::vector<BlockSample> run;
  for (size_t i = 0; i < keyed.size();) {
    size_t j = i;
    run.clear();
    while (j < keyed.size() && keyed[j].sample_type == keyed[i].sample_type && keyed[j].bucket == keyed[i].bucket &&
           run.size() < kMaxBlockSamples) {
      run.push_back(keyed[j].sample);
      ++j;
    }
    std::string key = BlockKeyPrefix(keyed[i].sample_type, keyed[i].bucket);
    PutBigEndian64(&key, counters.next_block_seq++);
    wb.Put(blocks_cf(), key, EncodeSampleBlock(run));
    counters.blocks++;
    counters.Add(keyed[i].sample_type, run.size());
    int64_t first = run.front().time_ns, last = run.front().time_ns;
    for (const BlockSample& b : run) {
      first = std::min(first, b.time_ns);
      last = std::max(last, b.time_ns);
    }
    if (counters.samples() == run.size() || first < counters.first_sample_ns)
      counters.first_sample_ns = first;
    if (counters.samples() == run.size() || last > counters.last_sample_ns) counters.last_sample_ns = last;
    i = j;
  }
  wb.Put(meta_cf(), kStatsKey, counters.Encode());

  // sync=false: the WAL write reaches the OS before Write() returns, which
  // survives a crash (even kill -9) of this process; only a power loss or
  // kernel crash could lose the last writes.
  rocksdb::WriteOptions wo;
  rocksdb::Status s = db_->Write(wo, &wb);
  if (!s.ok()) {
    interner.Undo(mark);
    if (disk_) disk_->NoteWriteError(s.ToString());
    return FromRocks(s, "writing samples");
  }
  counters_ = counters;
  NoteWrite();
  if (interner.capped_ > 0) {
    DataLossCounts capped{};
    capped[static_cast<size_t>(DataLoss::kAttributeCapped)] = interner.capped_;
    (void)AddDataLoss(capped);
  }
  return absl::OkStatus();
}

// ============================================================================
// [SECTION] Queries
// ============================================================================

namespace {

// Shards of a scan: no more than the cores, and none smaller than a few
// buckets (a thread costs more than scanning a short range).
int ScanShardCount(int64_t buckets) {
  constexpr int64_t kMinBucketsPerShard = 4;
  const int64_t cores = std::clamp<int64_t>(std::thread::hardware_concurrency(), 1, 8);
  return static_cast<int>(std::clamp<int64_t>(buckets / kMinBucketsPerShard, 1, cores));
}

}  // namespace

template <typename State, typename Make, typename Visit>
absl::Status RocksStore::Scan(const Query& query, const Make& make, const Visit& visit,
                              std::vector<State>* states) const {
  states->clear();
  if (query.to_ns <= query.from_ns) return absl::OkStatus();
  std::optional<SampleSelector> selector;
  uint32_t type_id = 0;
  size_t stack_count = 0;
  size_t set_count = 0;
  // Shard s covers keys [bounds[s], bounds[s + 1]).
  std::vector<std::string> bounds;
  // One snapshot for every shard: together they see one state of the store.
  std::shared_ptr<const rocksdb::Snapshot> snapshot;
  {
    std::shared_lock lock(dict_mutex_);
    selector.emplace(dict_.dict, query);
    if (!selector->any_type()) return absl::OkStatus();  // never stored: nothing to see
    type_id = selector->sample_type();
    stack_count = dict_.dict.StackCount();
    set_count = dict_.dict.AttributeSetCount();
    snapshot = std::shared_ptr<const rocksdb::Snapshot>(db_->GetSnapshot(),
                                                        [db = db_](const rocksdb::Snapshot* s) {
                                                          db->ReleaseSnapshot(s);
                                                        });
    const int64_t first_bucket = FloorDiv(query.from_ns, kBucketNs);
    // The shards split the buckets that hold samples; the first and last
    // keep the query's own ends (data may arrive past the last sample
    // known here, and the snapshot then decides).
    const int64_t lo = std::max(first_bucket, FloorDiv(counters_.first_sample_ns, kBucketNs));
    const int64_t hi = std::min(query.to_ns == std::numeric_limits<int64_t>::max()
                                    ? std::numeric_limits<int64_t>::max()
                                    : FloorDiv(query.to_ns - 1, kBucketNs),
                                FloorDiv(counters_.last_sample_ns, kBucketNs));
    const int shards = hi > lo ? ScanShardCount(hi - lo + 1) : 1;
    bounds.push_back(BlockKeyPrefix(type_id, first_bucket));
    for (int k = 1; k < shards; ++k) {
      bounds.push_back(BlockKeyPrefix(type_id, lo + (hi - lo + 1) * k / shards));
    }
    // Upper bound: the first block key past the bucket holding to_ns - 1,
    // or the end of this type's keys for an open-ended range.
    std::string upper;
    if (query.to_ns == std::numeric_limits<int64_t>::max()) {
      PutBigEndian32(&upper, type_id + 1);
    } else {
      upper = BlockKeyPrefix(type_id, FloorDiv(query.to_ns - 1, kBucketNs) + 1);
    }
    bounds.push_back(std::move(upper));
  }
  const size_t shards = bounds.size() - 1;
  states->reserve(shards);
  for (size_t k = 0; k < shards; ++k) states->push_back(make(stack_count));
  std::vector<absl::Status> statuses(shards);
  auto scan_shard = [&](size_t k) {
    rocksdb::ReadOptions ro;
    ro.snapshot = snapshot.get();
    rocksdb::Slice upper(bounds[k + 1]);
    ro.iterate_upper_bound = &upper;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, blocks_cf()));
    std::vector<BlockSample> samples;
    State& state = (*states)[k];
    for (it->Seek(bounds[k]); it->Valid(); it->Next()) {
      rocksdb::Slice key = it->key();
      if (key.size() != kBlockKeySize || GetBigEndian32(key.data()) != type_id) break;
      if (auto s = DecodeSampleBlock(std::string_view(it->value().data(), it->value().size()), &samples);
          !s.ok()) {
        statuses[k] = s;
        return;
      }
      for (const BlockSample& s : samples) {
        if (s.attribute_set >= set_count || s.stack >= stack_count) {
          statuses[k] = absl::DataLossError("sample block refers to a stack or attribute set that does not exist");
          return;
        }
        if (selector->Selects(type_id, s.time_ns, s.attribute_set)) visit(state, s);
      }
    }
    statuses[k] = FromRocks(it->status(), "reading sample blocks");
  };
  std::vector<std::thread> threads;
  for (size_t k = 1; k < shards; ++k) threads.emplace_back(scan_shard, k);
  scan_shard(0);
  for (std::thread& t : threads) t.join();
  for (const absl::Status& s : statuses) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const ProfileSlice>> RocksStore::Run(const Query& query) const {
  auto slice = std::make_shared<ProfileSlice>();
  slice->from_ns = query.from_ns;
  slice->to_ns = query.to_ns;

  // Aggregate by (stack, attribute set) first: the tree is then built from
  // distinct stacks, not from samples. Each shard aggregates its own part;
  // the parts merge in time order.
  struct Part {
    std::unique_ptr<ProfileSlice> slice = std::make_unique<ProfileSlice>();
    std::unique_ptr<SliceAggregator> aggregator;
  };
  std::vector<Part> parts;
  absl::Status s = Scan(
      query,
      [&query](size_t stack_count) {
        Part part;
        part.aggregator = std::make_unique<SliceAggregator>(part.slice.get(), stack_count, query.keep_samples);
        return part;
      },
      [](Part& part, const BlockSample& b) { part.aggregator->Add(b.stack, b.attribute_set, b.time_ns, b.value); },
      &parts);
  if (!s.ok()) return s;
  for (size_t k = 1; k < parts.size(); ++k) parts[0].aggregator->Merge(*parts[k].slice);
  if (!parts.empty()) {
    parts[0].slice->from_ns = slice->from_ns;
    parts[0].slice->to_ns = slice->to_ns;
    *slice = std::move(*parts[0].slice);
  }

  // Copy the referenced dictionary entries, renumbered densely.
  std::shared_lock lock(dict_mutex_);
  const ProfileDictionary& g = dict_.dict;
  const std::optional<uint32_t> type_id = g.SampleTypeIndex(query.sample_type);
  slice->sample_type = type_id ? g.sample_types[*type_id] : SampleTypeInfo{query.sample_type};
  ProfileDictionary& out = slice->dict;
  constexpr uint32_t kNone = UINT32_MAX;
  std::vector<uint32_t> string_map(g.strings.size(), kNone), exec_map(g.executables.size(), kNone),
      frame_map(g.frames.size(), kNone), stack_map(g.StackCount(), kNone),
      set_map(g.AttributeSetCount(), kNone);
  string_map[0] = 0;
  exec_map[0] = 0;
  frame_map[0] = 0;
  stack_map[0] = 0;
  set_map[0] = 0;
  auto map_string = [&](uint32_t id) {
    if (string_map[id] == kNone) {
      string_map[id] = static_cast<uint32_t>(out.strings.size());
      out.strings.push_back(g.strings[id]);
    }
    return string_map[id];
  };
  auto map_exec = [&](uint32_t id) {
    if (exec_map[id] == kNone) {
      const Executable& e = g.executables[id];
      exec_map[id] = static_cast<uint32_t>(out.executables.size());
      out.executables.push_back({map_string(e.file_name), map_string(e.htlhash), map_string(e.gnu_build_id),
                                 map_string(e.go_build_id)});
    }
    return exec_map[id];
  };
  // Names from symbol tables are interned into the slice beside the copied
  // strings; a table outlives this call (held in `tables`).
  absl::flat_hash_map<absl::string_view, uint32_t> symbol_strings;
  auto map_symbol_string = [&](std::string_view text) -> uint32_t {
    if (text.empty()) return 0;
    auto [it, inserted] = symbol_strings.try_emplace(AsAbsl(text), 0);
    if (inserted) {
      it->second = static_cast<uint32_t>(out.strings.size());
      out.strings.emplace_back(text);
    }
    return it->second;
  };
  // Tables are looked up per executable when its first frame needs one,
  // and held here for the rest of the call.
  const bool has_symbols = HasSymbols();
  std::vector<std::shared_ptr<const SymbolTable>> tables;
  std::vector<uint8_t> table_looked_up;
  if (has_symbols) {
    tables.resize(g.executables.size());
    table_looked_up.resize(g.executables.size());
  }
  auto table_for = [&](const Frame& f) -> const SymbolTable* {
    if (!has_symbols || !SymbolizableFrame(f)) return nullptr;
    if (!table_looked_up[f.executable]) {
      tables[f.executable] = SymbolTableForExecutable(g.executables[f.executable]);
      table_looked_up[f.executable] = 1;
    }
    return tables[f.executable].get();
  };
  // A stored frame becomes one slice frame, or with symbols its inline
  // chain: frame_map holds the first of its slice frames (consecutive, root
  // first) and frame_span how many.
  std::vector<uint8_t> frame_span(g.frames.size(), 1);
  std::vector<SymbolizedFrame> chain;
  auto map_frame = [&](uint32_t id) {
    if (frame_map[id] == kNone) {
      Frame f = g.frames[id];
      const SymbolTable* table = table_for(f);
      if (table != nullptr && table->Lookup(f.address, &chain)) {
        // Chains are innermost first; stacks are root first. Deeper than
        // 255 levels of inlining is not real code: keep the outermost.
        size_t n = std::min<size_t>(chain.size(), 255);
        frame_map[id] = static_cast<uint32_t>(out.frames.size());
        frame_span[id] = static_cast<uint8_t>(n);
        uint32_t exec = map_exec(f.executable);
        for (size_t i = chain.size(); i-- > chain.size() - n;) {
          Frame sf = f;
          sf.function = map_symbol_string(chain[i].function);
          sf.file = map_symbol_string(chain[i].file);
          sf.line = chain[i].line;
          sf.executable = exec;
          sf.inlined = i != chain.size() - 1;
          out.frames.push_back(sf);
        }
      } else {
        f.function = map_string(f.function);
        f.file = map_string(f.file);
        f.executable = map_exec(f.executable);
        frame_map[id] = static_cast<uint32_t>(out.frames.size());
        out.frames.push_back(f);
      }
    }
    return frame_map[id];
  };
  std::vector<uint32_t> frames;
  for (StackWeight& w : slice->weights) {
    if (w.stack >= stack_map.size() || w.attribute_set >= set_map.size()) {
      return absl::DataLossError("sample block refers to a stack that does not exist");
    }
    if (stack_map[w.stack] == kNone) {
      frames.clear();
      for (uint32_t f : g.Stack(w.stack)) {
        uint32_t first = map_frame(f);
        for (uint32_t i = 0; i < frame_span[f]; ++i) frames.push_back(first + i);
      }
      stack_map[w.stack] = out.AddStack(frames);
    }
    if (set_map[w.attribute_set] == kNone) {
      std::vector<Attribute> attrs;
      for (const Attribute& a : g.AttributeSet(w.attribute_set)) {
        attrs.push_back({map_string(a.key), map_string(a.value)});
      }
      set_map[w.attribute_set] = out.AddAttributeSet(std::move(attrs));
    }
    w.stack = stack_map[w.stack];
    w.attribute_set = set_map[w.attribute_set];
  }
  return std::shared_ptr<const ProfileSlice>(std::move(slice));
}

// ============================================================================
// [SECTION] Symbols
// ============================================================================

absl::Status RocksStore::LoadSymbolStatuses() {
  if (symbols_cf() == nullptr) return absl::OkStatus();
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), symbols_cf()));
  std::string prefix(1, kSymbolStatusTag);
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    SymbolStatus st;
    std::string key = it->key().ToString().substr(1);
    if (!DecodeSymbolStatus(std::string_view(it->value().data(), it->value().size()), &st)) {
      return absl::DataLossError(absl::StrCat("store: symbol status of ", key, " is corrupt"));
    }
    symbol_statuses_[key] = std::move(st);
  }
  return FromRocks(it->status(), "reading symbol statuses");
}

std::shared_ptr<const SymbolTable> RocksStore::SymbolTableFor(const std::string& key) const {
  {
    std::lock_guard lock(symbols_mutex_);
    if (auto it = symbol_tables_.find(key); it != symbol_tables_.end()) return it->second;
  }
  std::shared_ptr<const SymbolTable> table;
  if (symbols_cf() != nullptr) {
    std::string target, bytes;
    rocksdb::Status s =
        db_->Get(rocksdb::ReadOptions(), symbols_cf(), SymbolRecordKey(kSymbolAliasTag, key), &target);
    if (!s.ok()) target = key;
    s = db_->Get(rocksdb::ReadOptions(), symbols_cf(), SymbolRecordKey(kSymbolTableTag, target), &bytes);
    if (s.ok()) {
      auto parsed = SymbolTable::Deserialize(bytes);
      // A damaged table leaves frames unnamed rather than failing queries.
      if (parsed.ok()) table = std::make_shared<const SymbolTable>(std::move(*parsed));
    }
  }
  std::lock_guard lock(symbols_mutex_);
  return symbol_tables_.try_emplace(key, std::move(table)).first->second;
}

bool RocksStore::HasSymbols() const {
  std::lock_guard lock(symbols_mutex_);
  return !symbol_statuses_.empty();
}

std::shared_ptr<const SymbolTable> RocksStore::SymbolTableForExecutable(const Executable& e) const {
  const ProfileDictionary& d = dict_.dict;
  for (const std::string& key : SymbolKeys(d.strings[e.htlhash], d.strings[e.gnu_build_id])) {
    {
      std::lock_guard lock(symbols_mutex_);
      auto st = symbol_statuses_.find(key);
      if (st == symbol_statuses_.end() || st->second.state != SymbolStatus::State::kSymbolized) continue;
    }
    if (auto table = SymbolTableFor(key)) return table;
  }
  return nullptr;
}

absl::Status RocksStore::PutSymbols(const std::vector<std::string>& keys, SymbolTable table,
                                    const SymbolStatus& status) {
  if (read_only_) return absl::FailedPreconditionError("store is open read-only");
  if (keys.empty()) return absl::InvalidArgumentError("symbols need at least one executable key");
  SymbolStatus st = status;
  st.state = SymbolStatus::State::kSymbolized;
  st.functions = table.function_count();
  // One copy of the table under the first key; the others point to it.
  rocksdb::WriteBatch wb;
  wb.Put(symbols_cf(), SymbolRecordKey(kSymbolTableTag, keys[0]), table.Serialize());
  wb.Delete(symbols_cf(), SymbolRecordKey(kSymbolAliasTag, keys[0]));
  for (size_t i = 1; i < keys.size(); ++i) {
    wb.Delete(symbols_cf(), SymbolRecordKey(kSymbolTableTag, keys[i]));
    wb.Put(symbols_cf(), SymbolRecordKey(kSymbolAliasTag, keys[i]), keys[0]);
  }
  for (const std::string& key : keys) {
    wb.Put(symbols_cf(), SymbolRecordKey(kSymbolStatusTag, key), EncodeSymbolStatus(st));
  }
  if (auto s = WriteAndNote(&wb, "writing symbols"); !s.ok()) {
    return s;
  }
  auto shared = std::make_shared<const SymbolTable>(std::move(table));
  {
    std::lock_guard lock(symbols_mutex_);
    for (const std::string& key : keys) {
      symbol_statuses_[key] = st;
      symbol_tables_[key] = shared;
    }
  }
  symbols_version_.fetch_add(1);
  return absl::OkStatus();
}

absl::Status RocksStore::PutSymbolStatus(const std::vector<std::string>& keys, const SymbolStatus& status,
                                         bool drop_table) {
  if (read_only_) return absl::FailedPreconditionError("store is open read-only");
  rocksdb::WriteBatch wb;
  std::vector<SymbolStatus> written;
  {
    std::lock_guard lock(symbols_mutex_);
    for (const std::string& key : keys) {
      SymbolStatus st = status;
      auto old = symbol_statuses_.find(key);
      bool has_table = old != symbol_statuses_.end() && old->second.state == SymbolStatus::State::kSymbolized;
      if (has_table && !drop_table) {
        // The table stays in use: keep it described as it is, with the new
        // attempt's outcome as detail.
        st = old->second;
        st.detail = status.detail.empty() ? st.detail : status.detail;
        st.updated_ns = status.updated_ns;
      } else if (has_table) {
        wb.Delete(symbols_cf(), SymbolRecordKey(kSymbolTableTag, key));
        wb.Delete(symbols_cf(), SymbolRecordKey(kSymbolAliasTag, key));
      }
      wb.Put(symbols_cf(), SymbolRecordKey(kSymbolStatusTag, key), EncodeSymbolStatus(st));
      written.push_back(st);
    }
  }
  if (auto s = WriteAndNote(&wb, "writing symbol status"); !s.ok()) {
    return s;
  }
  {
    std::lock_guard lock(symbols_mutex_);
    for (size_t i = 0; i < keys.size(); ++i) {
      symbol_statuses_[keys[i]] = written[i];
      if (drop_table) symbol_tables_.erase(keys[i]);
    }
  }
  symbols_version_.fetch_add(1);
  return absl::OkStatus();
}

std::vector<std::pair<std::string, SymbolStatus>> RocksStore::SymbolStatuses() const {
  std::lock_guard lock(symbols_mutex_);
  return {symbol_statuses_.begin(), symbol_statuses_.end()};
}

std::vector<ExecutableInfo> RocksStore::Executables() const {
  std::shared_lock lock(dict_mutex_);
  const ProfileDictionary& d = dict_.dict;
  std::vector<ExecutableInfo> out;
  for (size_t e = 1; e < d.executables.size(); ++e) {
    const Executable& x = d.executables[e];
    out.push_back(
        {d.strings[x.file_name], d.strings[x.htlhash], d.strings[x.gnu_build_id], d.strings[x.go_build_id]});
  }
  return out;
}

absl::StatusOr<Timeline> RocksStore::RunTimeline(const Query& query, int bucket_count) const {
  if (bucket_count <= 0) return absl::InvalidArgumentError("timeline needs at least one bucket");
  TimeSpan span;
  {
    std::shared_lock lock(dict_mutex_);
    span = TimelineSpan(query, counters_.first_sample_ns, counters_.last_sample_ns);
  }
  Timeline t = EmptyTimeline(span, bucket_count);
  Query q = query;
  q.from_ns = span.from_ns;
  q.to_ns = span.to_ns;
  std::vector<Timeline> parts;
  absl::Status s = Scan(
      q, [&t](size_t) { return t; },
      [](Timeline& part, const BlockSample& b) { AddToTimeline(&part, b.time_ns, b.value); }, &parts);
  if (!s.ok()) return s;
  for (const Timeline& part : parts) {
    for (size_t i = 0; i < t.weights.size(); ++i) {
      t.weights[i] += part.weights[i];
      t.events[i] += part.events[i];
    }
  }
  return t;
}

// ============================================================================
// [SECTION] Log, stats, maintenance
// ============================================================================

StoreStats RocksStore::Stats() const {
  StoreStats st;
  {
    std::shared_lock lock(dict_mutex_);
    for (size_t k = 0; k < counters_.samples_by_type.size() && k < dict_.dict.sample_types.size(); ++k) {
      if (counters_.samples_by_type[k] != 0) {
        st.sample_types.push_back({dict_.dict.sample_types[k], counters_.samples_by_type[k]});
      }
    }
    st.samples = counters_.samples();
    st.blocks = counters_.blocks;
    st.first_sample_ns = counters_.first_sample_ns;
    st.last_sample_ns = counters_.last_sample_ns;
    st.stacks = dict_.dict.StackCount() - 1;
    st.frames = dict_.dict.frames.size() - 1;
    st.strings = dict_.dict.strings.size() - 1;
    st.attribute_sets = dict_.dict.AttributeSetCount() - 1;
  }
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir_, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec)) st.disk_bytes += it->file_size(ec);
  }
  st.data_version = data_version_.load();
  st.retention_age_ns = options_.retention_age.count();
  st.retention_size_bytes = options_.retention_size_bytes;
  st.samples_deleted_by_retention = retention_deleted_.load();
  if (disk_) {
    const DiskState d = disk_->state();
    st.disk_free_bytes = d.free_bytes;
    st.disk_reserve_bytes = d.reserve_bytes;
    st.writes_refused = d.refusal;
  }
  return st;
}

std::vector<std::string> RocksStore::AttributeKeys() const {
  std::shared_lock lock(dict_mutex_);
  const ProfileDictionary& d = dict_.dict;
  std::vector<uint32_t> ids;
  for (const Attribute& a : d.attributes) ids.push_back(a.key);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::vector<std::string> keys;
  for (uint32_t id : ids) keys.push_back(d.strings[id]);
  std::sort(keys.begin(), keys.end());
  return keys;
}

std::vector<std::string> RocksStore::AttributeValues(std::string_view key, size_t max) const {
  std::shared_lock lock(dict_mutex_);
  const ProfileDictionary& d = dict_.dict;
  auto key_it = dict_.string_ids.find(AsAbsl(key));
  if (key_it == dict_.string_ids.end()) return {};
  std::vector<uint32_t> ids;
  for (const Attribute& a : d.attributes) {
    if (a.key == key_it->second) ids.push_back(a.value);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::vector<std::string> values;
  for (uint32_t id : ids) values.push_back(d.strings[id]);
  std::sort(values.begin(), values.end());
  if (values.size() > max) values.resize(max);
  return values;
}

std::vector<std::vector<std::string>> RocksStore::AttributeCombinations(const std::vector<std::string>& keys,
                                                                        size_t max) const {
  std::shared_lock lock(dict_mutex_);
  const ProfileDictionary& d = dict_.dict;
  std::vector<uint32_t> key_ids;
  for (const std::string& k : keys) {
    auto it = dict_.string_ids.find(k);
    key_ids.push_back(it == dict_.string_ids.end() ? UINT32_MAX : it->second);
  }
  std::set<std::vector<uint32_t>> combos;
  std::vector<uint32_t> values(keys.size());
  for (uint32_t s = 1; s < d.AttributeSetCount(); ++s) {
    std::fill(values.begin(), values.end(), 0);
    for (const Attribute& a : d.AttributeSet(s)) {
      for (size_t k = 0; k < key_ids.size(); ++k) {
        if (a.key == key_ids[k]) values[k] = a.value;
      }
    }
    combos.insert(values);
  }
  std::vector<std::vector<std::string>> out;
  for (const std::vector<uint32_t>& c : combos) {
    std::vector<std::string> row;
    for (uint32_t v : c) row.push_back(d.strings[v]);
    out.push_back(std::move(row));
  }
  std::sort(out.begin(), out.end());
  if (out.size() > max) out.resize(max);
  return out;
}

absl::Status RocksStore::AppendLog(LogLevel level, std::string_view message) {
  if (read_only_) return absl::FailedPreconditionError("store is open read-only");
  int64_t now = UnixNowNs();
  std::string key, value;
  PutBigEndian64(&key, next_log_seq_.fetch_add(1));
  PutVarint(&value, ZigZag(now));
  value.push_back(static_cast<char>(level));
  value.append(message);
  absl::Status s = FromRocks(db_->Put(rocksdb::WriteOptions(), log_cf(), key, value), "writing log");
  if (s.ok()) NoteWrite();
  return s;
}

std::vector<LogEntry> RocksStore::ReadLog(size_t max) const {
  std::vector<LogEntry> entries;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), log_cf()));
  for (it->SeekToLast(); it->Valid() && entries.size() < max; it->Prev()) {
    if (it->key().size() != 8) continue;
    LogEntry e;
    e.sequence = GetBigEndian64(it->key().data());
    ValueReader r{it->value().data(), it->value().data() + it->value().size()};
    e.time_ns = UnZigZag(r.Next());
    e.level = static_cast<LogLevel>(std::min<uint8_t>(r.Byte(), 3));
    if (!r.ok) continue;
    e.message.assign(r.p, r.end);
    entries.push_back(std::move(e));
  }
  return entries;
}

// ============================================================================
// [SECTION] Retention
// ============================================================================

absl::StatusOr<RetentionReport> RocksStore::ApplyRetention(int64_t now_ns) {
  RetentionReport report;
  if (read_only_) return report;
  std::lock_guard pass(retention_mutex_);
  int64_t first_bucket = 0, last_bucket = 0;
  uint64_t samples = 0;
  {
    std::shared_lock lock(dict_mutex_);
    samples = counters_.samples();
    first_bucket = FloorDiv(counters_.first_sample_ns, kBucketNs);
    last_bucket = FloorDiv(counters_.last_sample_ns, kBucketNs);
  }
  if (samples == 0) return report;
  // Buckets before `cut` go.
  int64_t cut = std::numeric_limits<int64_t>::min();
  if (options_.retention_age.count() > 0) {
    const int64_t age_cut = FloorDiv(now_ns - options_.retention_age.count(), kBucketNs);
    if (age_cut > first_bucket) {
      cut = age_cut;
      report.reason = "age";
    }
  }
  if (options_.retention_size_bytes > 0) {
    // The tables only: the memtables are flushed within minutes
    // (StoreOptions::settle_max_age), and their arenas would make a small
    // store look large. Only sample blocks can be deleted (the dictionary
    // is kept whole), so the share to delete is of the blocks' bytes.
    uint64_t bytes = 0, block_bytes = 0;
    for (auto* h : handles_) {
      uint64_t v = 0;
      if (db_->GetIntProperty(h, "rocksdb.total-sst-files-size", &v)) bytes += v;
      if (h == blocks_cf()) block_bytes = v;
    }
    if (bytes > options_.retention_size_bytes && block_bytes > 0) {
      // The oldest share of the time span that brings the store to 90% of
      // the limit, assuming samples are spread evenly; the next pass (after
      // compaction freed the space) corrects the guess.
      const double over =
          static_cast<double>(bytes) - 0.9 * static_cast<double>(options_.retention_size_bytes);
      const double excess = std::min(1.0, over / static_cast<double>(block_bytes));
      const int64_t span = last_bucket - first_bucket + 1;
      const int64_t size_cut =
          first_bucket + std::max<int64_t>(1, static_cast<int64_t>(std::ceil(excess * span)));
      if (size_cut > cut) {
        cut = size_cut;
        report.reason = "size";
      }
    }
  }
  if (report.reason.empty()) return report;

  // Under the write lock: no Write() changes the counters meanwhile.
  std::lock_guard write_lock(write_mutex_);
  Counters counters;
  std::vector<uint32_t> types;
  {
    std::shared_lock lock(dict_mutex_);
    counters = counters_;
  }
  for (uint32_t t = 0; t < counters.samples_by_type.size(); ++t) {
    if (counters.samples_by_type[t] != 0) types.push_back(t);
  }
  rocksdb::WriteBatch wb;
  int64_t new_first = std::numeric_limits<int64_t>::max();
  std::vector<BlockSample> decoded;
  for (uint32_t t : types) {
    const std::string begin = BlockKeyPrefix(t, std::numeric_limits<int64_t>::min());
    const std::string end = BlockKeyPrefix(t, cut);
    rocksdb::ReadOptions ro;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, blocks_cf()));
    uint64_t deleted = 0;
    for (it->Seek(begin); it->Valid() && it->key().compare(end) < 0; it->Next()) {
      absl::StatusOr<uint64_t> n = SampleBlockCount(std::string_view(it->value().data(), it->value().size()));
      if (!n.ok()) return absl::DataLossError("retention: " + std::string(n.status().message()));
      deleted += *n;
      ++report.blocks_deleted;
    }
    // The first block left decides where this type now starts.
    if (it->Valid() && it->key().size() == kBlockKeySize && GetBigEndian32(it->key().data()) == t) {
      if (DecodeSampleBlock(std::string_view(it->value().data(), it->value().size()), &decoded).ok()) {
        for (const BlockSample& b : decoded) new_first = std::min(new_first, b.time_ns);
      }
    }
    if (!it->status().ok()) return FromRocks(it->status(), "retention: reading sample blocks");
    if (deleted == 0) continue;
    wb.DeleteRange(blocks_cf(), begin, end);
    counters.samples_by_type[t] -= std::min(deleted, counters.samples_by_type[t]);
    report.samples_deleted += deleted;
  }
  if (report.blocks_deleted == 0) {
    report.reason.clear();
    return report;
  }
  counters.blocks -= std::min(report.blocks_deleted, counters.blocks);
  if (counters.samples() == 0) {
    counters.first_sample_ns = counters.last_sample_ns = 0;
  } else if (new_first != std::numeric_limits<int64_t>::max()) {
    counters.first_sample_ns = new_first;
  }
  wb.Put(meta_cf(), kStatsKey, counters.Encode());
  if (rocksdb::Status s = db_->Write(rocksdb::WriteOptions(), &wb); !s.ok()) {
    if (disk_) disk_->NoteWriteError(s.ToString());
    return FromRocks(s, "retention: deleting sample blocks");
  }
  {
    std::unique_lock lock(dict_mutex_);
    counters_ = counters;
  }
  NoteWrite();
  retention_deleted_.fetch_add(report.samples_deleted);
  DataLossCounts deleted{};
  deleted[static_cast<size_t>(DataLoss::kRetentionDeleted)] = report.samples_deleted;
  (void)AddDataLoss(deleted);
  report.deleted_before_ns = cut == std::numeric_limits<int64_t>::min() ? 0 : cut * kBucketNs;
  (void)AppendLog(
      LogLevel::kInfo,
      absl::StrCat("retention (", report.reason, " limit): deleted ", report.samples_deleted, " samples in ",
                   report.blocks_deleted, " blocks from before ",
                   absl::FormatTime(absl::FromUnixNanos(report.deleted_before_ns), absl::UTCTimeZone())));
  // Frees the disk now rather than at some later compaction.
  rocksdb::CompactRangeOptions co;
  co.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  for (uint32_t t : types) {
    const std::string begin = BlockKeyPrefix(t, std::numeric_limits<int64_t>::min());
    const std::string end = BlockKeyPrefix(t, cut);
    rocksdb::Slice b(begin), e(end);
    (void)db_->CompactRange(co, blocks_cf(), &b, &e);
  }
  return report;
}

absl::Status RocksStore::Flush() {
  if (read_only_) return absl::OkStatus();
  rocksdb::FlushOptions fo;
  return FromRocks(db_->Flush(fo, handles_), "flushing");
}

absl::Status RocksStore::Compact() {
  if (auto s = Flush(); !s.ok()) return s;
  if (read_only_) return absl::OkStatus();
  rocksdb::CompactRangeOptions co;
  co.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  for (auto* h : handles_) {
    if (auto s = FromRocks(db_->CompactRange(co, h, nullptr, nullptr), "compacting"); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace kiln::storage
