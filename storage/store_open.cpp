// RocksStore: opening a store (schema, upgrade, dictionary), and settling:
// flushing the WAL once ingest pauses, the disk guard, retention passes.
#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <optional>

#include <rocksdb/convenience.h>

#include "storage/store_internal.h"

namespace kiln::storage::store_internal {

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
  // One older generation is kept beside LOG: the file is for diagnosing
  // the last hours. It is bounded while kiln runs, not only at open: a
  // busy store's RocksDB writes about 1 MiB of it a minute (every flush
  // and compaction, with statistics), and the store's size limit counts it.
  static std::shared_ptr<rocksdb::Logger> Open(const std::string& dir, uint64_t max_bytes) {
    auto log = std::make_shared<StdioInfoLog>(std::filesystem::path(dir), max_bytes);
    return log->file_ != nullptr ? log : nullptr;  // RocksDB then makes its own
  }
  StdioInfoLog(std::filesystem::path dir, uint64_t max_bytes)
      : rocksdb::Logger(rocksdb::InfoLogLevel::INFO_LEVEL), dir_(std::move(dir)), max_bytes_(max_bytes) {
    std::error_code ec;
    written_ = std::filesystem::file_size(dir_ / "LOG", ec);
    if (ec) written_ = 0;
    if (written_ > max_bytes_) Rotate();
    else file_ = std::fopen((dir_ / "LOG").c_str(), "ae");
  }
  ~StdioInfoLog() override {
    if (file_ != nullptr) std::fclose(file_);
  }
  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    std::lock_guard lock(mu_);
    if (written_ > max_bytes_) Rotate();
    if (file_ == nullptr) return;
    const int n = std::vfprintf(file_, format, ap);
    std::fputc('\n', file_);
    std::fflush(file_);
    std::clearerr(file_);  // the next line tries again
    written_ += n > 0 ? static_cast<uint64_t>(n) + 1 : 1;
  }

 private:
  void Rotate() {
    if (file_ != nullptr) std::fclose(file_);
    std::error_code ec;
    std::filesystem::rename(dir_ / "LOG", dir_ / "LOG.old", ec);
    file_ = std::fopen((dir_ / "LOG").c_str(), "ae");
    written_ = 0;
  }
  const std::filesystem::path dir_;
  const uint64_t max_bytes_;
  std::mutex mu_;
  std::FILE* file_ = nullptr;
  uint64_t written_ = 0;
};

// The LOG's bound: 8 MiB a generation, or a 64th of a size limit (LOG and
// LOG.old together a 32nd of it), never under 256 KiB.
uint64_t InfoLogMaxBytes(uint64_t retention_size_bytes) {
  constexpr uint64_t kMax = 8 << 20, kMin = 256 << 10;
  if (retention_size_bytes == 0) return kMax;
  return std::clamp<uint64_t>(retention_size_bytes / 64, kMin, kMax);
}

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
  if (!read_only_) {
    db_options.info_log = StdioInfoLog::Open(dir_, InfoLogMaxBytes(options_.retention_size_bytes));
  }
  // Column families that rarely write (the log, symbols) would otherwise
  // keep every WAL file since their last flush alive; past this total,
  // RocksDB flushes them so old WAL files can go.
  db_options.max_total_wal_size = MaxTotalWalSize(options_.retention_size_bytes);
  // Every column family's memtable may grow to 64 MiB (RocksDB's default)
  // before it is flushed, and the window's RSS held 50 MB of them minutes
  // after start-up. One budget for all: past it the largest is flushed.
  db_options.db_write_buffer_size = 32 << 20;

  rocksdb::ColumnFamilyOptions meta_options;
  meta_options.compression = rocksdb::kLZ4Compression;
  meta_options.level_compaction_dynamic_level_bytes = true;  // DictionaryLayout
  if (rocksdb::Status layout =
          rocksdb::GetColumnFamilyOptionsFromMap(rocksdb::ConfigOptions(), rocksdb::ColumnFamilyOptions(meta_options),
                                                 DictionaryLayout(options_.retention_size_bytes), &meta_options);
      !layout.ok()) {
    return FromRocks(layout, "setting the dictionary's table layout");
  }
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
  // A table (tens of MB serialized for a large C++ program) is flushed to
  // its blob file soon after it is written rather than kept in the
  // memtable, a second copy beside the loaded table.
  symbol_options.write_buffer_size = 4 << 20;
  // Summaries are read whole by key, and their keys alone are listed at
  // open: blob files keep that listing from reading the values.
  rocksdb::ColumnFamilyOptions summary_options;
  summary_options.compression = rocksdb::kLZ4Compression;
  summary_options.enable_blob_files = true;
  summary_options.min_blob_size = 256;
  summary_options.blob_compression_type = rocksdb::kZSTD;

  // Forwarded requests are written once, read once and deleted: blob
  // files keep their bytes out of compactions.
  rocksdb::ColumnFamilyOptions forward_options;
  forward_options.compression = rocksdb::kLZ4Compression;
  forward_options.enable_blob_files = true;
  forward_options.min_blob_size = 1024;
  forward_options.blob_compression_type = rocksdb::kZSTD;

  // The span index: small keys, no values; its filter drops the entries
  // of buckets retention deleted (store_spans.cpp).
  rocksdb::ColumnFamilyOptions span_options;
  span_options.compression = rocksdb::kLZ4Compression;
  span_index_filter_ = NewSpanIndexFilter(span_index_floor_);
  span_options.compaction_filter = span_index_filter_.get();

  std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {
      {rocksdb::kDefaultColumnFamilyName, meta_options},
      {"blocks", block_options},
      {"log", log_options},
      {"symbols", symbol_options},
      {"summaries", summary_options},
      {"forward", forward_options},
      {"spans", span_options},
  };
  rocksdb::Status s;
  if (read_only_) {
    // A store from before symbols (or summaries) existed lacks those
    // families, and a read-only open cannot create them; they are last.
    std::vector<std::string> existing;
    if (rocksdb::DB::ListColumnFamilies(db_options, dir_, &existing).ok()) {
      while (cfs.size() > 3 &&
             std::find(existing.begin(), existing.end(), cfs.back().name) == existing.end()) {
        cfs.pop_back();
      }
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
  PartWriter* writer = this;
  symbols_ = std::make_unique<SymbolsPart>(db_, symbols_cf(), writer, options_.symbol_cache_bytes);
  log_ = std::make_unique<LogPart>(db_, log_cf(), writer);
  losses_ = std::make_unique<LossesPart>(db_, meta_cf(), writer);
  forward_ = std::make_unique<ForwardPart>(db_, forward_cf(), writer);

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
    // Schema 2 lacks only the summaries: opened read-write, the family is
    // created above and the summaries are built in the background; read
    // only, queries read every sample as before. Schema 3 lacks only the
    // remaps of forgetting, and has none to apply; schema 4's dictionary
    // has no gaps, so its disk ids are its ids. Both are read as they are,
    // and marked 5 when opened read-write (an older kiln must then refuse
    // it: it would misread remapped blocks, or gaps as damage).
    const bool compatible = found == 2 || found == 3 || found == 4;
    if (compatible && !read_only_) {
      std::string v;
      PutBigEndian32(&v, kSchemaVersion);
      rocksdb::WriteOptions wo;
      wo.sync = true;
      if (auto st = FromRocks(db_->Put(wo, meta_cf(), kSchemaKey, v), "upgrading the schema version");
          !st.ok()) {
        return st;
      }
    }
    if (compatible) found = kSchemaVersion;
    if (found != kSchemaVersion) {
      return absl::FailedPreconditionError(absl::StrCat("kiln store in ", dir_, " has schema version ", found,
                                                        "; this kiln reads version ", kSchemaVersion,
                                                        ". Use a kiln that matches, or a new --data-dir."));
    }
  }
  if (auto st = LoadMeta(); !st.ok()) return st;
  if (auto st = losses_->Load(); !st.ok()) return st;
  if (auto st = log_->Load(); !st.ok()) return st;
  if (auto st = symbols_->Load(); !st.ok()) return st;
  if (auto st = forward_->Load(); !st.ok()) return st;
  if (auto st = summaries_.Load(db_, summaries_cf()); !st.ok()) return st;
  if (auto st = dictionary_.Load(db_, meta_cf()); !st.ok()) return st;
  return absl::OkStatus();
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
  if (auto st = samples_.Load(db_, meta_cf()); !st.ok()) return st;
  if (auto st = OpenSpanIndex(); !st.ok()) return st;
  // As the last pass left it, so `kiln stats` (read-only) shows it too.
  if (std::string v; db_->Get(rocksdb::ReadOptions(), meta_cf(), kRetentionProblemKey, &v).ok()) {
    retention_.SetProblem(std::move(v));
  }
  return absl::OkStatus();
}

void RocksStore::NoteWrite(uint64_t bytes) {
  data_version_.fetch_add(1);
  // A size limit is held between the minute's passes too: once a
  // twentieth of it was written since the last pass, the settling thread
  // runs one at its next look (seconds), so a burst cannot outgrow it.
  if (retention_.NoteWritten(bytes)) settle_cv_.notify_all();
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
  // Retention at open, then every minute, and at the next look (within
  // `period`) when its limits change (SetRetention).
  int64_t next_retention_ns = 0;
  std::unique_lock lock(settle_mu_);
  // Woken early by SetRetention and by writes past a twentieth of the size
  // limit (NoteWrite): a fast writer must not outrun the limit by a period.
  for (;;) {
    settle_cv_.wait_for(lock, next_retention_ns == 0 ? std::chrono::milliseconds(0) : period,
                        [this] { return settle_stop_ || retention_.RunSoonSet(); });
    if (settle_stop_) break;
    if (retention_.TakeRunSoon()) next_retention_ns = 0;
    const bool retention = (retention_.age_ns() > 0 || retention_.size_bytes() > 0 ||
                            options_.max_dictionary_memory > 0) &&
                           options_.retention_interval.count() > 0;
    if (retention && UnixNowNs() >= next_retention_ns) {
      lock.unlock();
      absl::StatusOr<RetentionReport> r = ApplyRetention(UnixNowNs());
      if (!r.ok())
        (void)AppendLog(LogLevel::kError, "retention failed: " + std::string(r.status().message()));
      if (r.ok() && r->samples_deleted > 0) dictionary_.NoteSamplesDeleted();
      if (dictionary_.PassDue()) {
        if (absl::StatusOr<ForgetReport> f = ForgetUnused(); !f.ok() && !stopping_) {
          (void)AppendLog(LogLevel::kWarning, "forgetting unused dictionary entries failed (tried again later): " +
                                                  std::string(f.status().message()));
        }
      }
      lock.lock();
      next_retention_ns = UnixNowNs() + std::chrono::nanoseconds(options_.retention_interval).count();
    } else if (next_retention_ns == 0) {
      next_retention_ns = 1;  // no retention: just the normal period from now on
    }
    // Summaries of the hours that are over, once data changed.
    if (options_.summarize_in_background && data_version_.load() != summaries_.summarized_version.load()) {
      lock.unlock();
      if (absl::StatusOr<uint64_t> built = Summarize(); !built.ok()) {
        (void)AppendLog(LogLevel::kWarning, "summarizing hours failed (queries read their samples): " +
                                                std::string(built.status().message()));
      }
      lock.lock();
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

}  // namespace kiln::storage::store_internal
