// RocksStore retention (storage/README.md), flush and compaction.
#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <optional>

#include "storage/store_internal.h"

namespace kiln::storage::store_internal {

// ============================================================================
// [SECTION] Retention
// ============================================================================

absl::StatusOr<RetentionReport> RocksStore::ApplyRetention(int64_t now_ns) {
  RetentionReport report;
  if (read_only_) return report;
  std::lock_guard pass(retention_.pass_mutex());
  log_->Trim();
  int64_t first_bucket = 0, last_bucket = 0;
  uint64_t samples = 0;
  {
    const Counters counters = samples_.Get();
    samples = counters.samples();
    first_bucket = BucketOf(counters.first_sample_ns);
    last_bucket = BucketOf(counters.last_sample_ns);
  }
  if (samples == 0) return report;
  // Buckets before `cut` go.
  int64_t cut = std::numeric_limits<int64_t>::min();
  const int64_t age_ns = retention_.age_ns();
  const uint64_t size_limit = retention_.size_bytes();
  if (age_ns > 0) {
    const int64_t age_cut = BucketOf(now_ns - age_ns);
    if (age_cut > first_bucket) {
      cut = age_cut;
      report.reason = "age";
    }
  }
  if (size_limit > 0) {
    retention_.PassStarted();
    if (absl::StatusOr<int64_t> size_cut = SizeCut(size_limit, first_bucket, last_bucket); !size_cut.ok()) {
      return size_cut.status();
    } else if (*size_cut > cut) {
      cut = *size_cut;
      report.reason = "size";
    }
  }
  if (const int64_t memory_cut = MemoryCut(first_bucket, last_bucket); memory_cut > cut) {
    cut = memory_cut;
    report.reason = "dictionary memory";
  }
  if (report.reason.empty()) return report;

  // Count what goes from a snapshot, without the write lock: on a day of
  // blocks the count takes seconds, and writes waited for it (443 ms at
  // worst while 61 M samples went). Writes meanwhile are watched: one into
  // a bucket before the cut (data arriving already old) makes the count
  // stale, and then it is made again under the lock.
  const rocksdb::Snapshot* snapshot = nullptr;
  std::vector<uint32_t> types;
  {
    std::lock_guard write_lock(write_mutex_);
    retention_.watch = RetentionPart::Watch{.active = true, .cut = cut};
    snapshot = db_->GetSnapshot();
    types = samples_.TypesWithSamples();
  }
  DeletableCount count;
  absl::Status counted = CountDeletable(types, cut, snapshot, &count);
  db_->ReleaseSnapshot(snapshot);
  // Under the write lock from here until the counters are stored (not
  // through the compaction below): no Write() changes them meanwhile.
  std::unique_lock write_lock(write_mutex_);
  const RetentionPart::Watch watch = retention_.watch;
  retention_.watch = RetentionPart::Watch{};
  if (!counted.ok()) return counted;
  if (watch.old_bucket_written) {
    types = samples_.TypesWithSamples();
    count = DeletableCount{};
    if (absl::Status s = CountDeletable(types, cut, nullptr, &count); !s.ok()) return s;
    report.recounted = true;
  }
  Counters counters = samples_.Get();
  // Without a recount, writes since the snapshot all went to kept buckets,
  // and the earliest of them may come before the first block the count saw
  // left. A recount saw them all (and the old ones go now).
  const int64_t new_first =
      watch.old_bucket_written ? count.new_first_ns : std::min(count.new_first_ns, watch.min_time_written_ns);
  report.blocks_deleted = count.blocks;
  rocksdb::WriteBatch wb;
  for (uint32_t t : types) {
    const uint64_t deleted = count.samples_by_type[t];
    if (deleted == 0) continue;
    wb.DeleteRange(blocks_cf(), BlockKeyPrefix(t, std::numeric_limits<int64_t>::min()),
                   BlockKeyPrefix(t, cut));
    // Every hour with a deleted bucket, the one holding the cut included.
    InvalidateSummaries(t, std::numeric_limits<int64_t>::min(), FloorDiv(cut - 1, kBucketsPerSummary), &wb);
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
  // The span index's entries of deleted buckets go at their next compaction.
  if (counters.samples() > 0) span_index_floor_->store(BucketOf(counters.first_sample_ns));
  wb.Put(meta_cf(), kStatsKey, counters.Encode());
  if (rocksdb::Status s = db_->Write(rocksdb::WriteOptions(), &wb); !s.ok()) {
    if (disk_) disk_->NoteWriteError(s.ToString());
    return FromRocks(s, "retention: deleting sample blocks");
  }
  samples_.Publish(counters);
  write_lock.unlock();
  TestStep("retention: deleted");
  NoteWrite();
  retention_.NoteDeleted(report.samples_deleted);
  DataLossCounts deleted{};
  deleted[static_cast<size_t>(DataLoss::kRetentionDeleted)] = report.samples_deleted;
  (void)AddDataLoss(deleted);
  report.deleted_before_ns = cut == std::numeric_limits<int64_t>::min() ? 0 : cut * kBucketNs;
  (void)AppendLog(
      LogLevel::kInfo,
      absl::StrCat("retention (", report.reason, " limit): deleted ", report.samples_deleted, " samples in ",
                   report.blocks_deleted, " blocks from before ",
                   absl::FormatTime(absl::FromUnixNanos(report.deleted_before_ns), absl::UTCTimeZone())));
  // Frees the disk now rather than at some later compaction. Not while a
  // summary is being built: its snapshot would make the compaction keep
  // the deleted samples.
  std::lock_guard no_summarizing(summarize_mutex_);
  rocksdb::CompactRangeOptions co;
  co.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  for (uint32_t t : types) {
    const std::string begin = BlockKeyPrefix(t, std::numeric_limits<int64_t>::min());
    const std::string end = BlockKeyPrefix(t, cut);
    rocksdb::Slice b(begin), e(end);
    (void)db_->CompactRange(co, blocks_cf(), &b, &e);
  }
  TestStep("retention: compacted");
  return report;
}

// ============================================================================
// [SECTION] What the size limit counts
// ============================================================================
//
// Everything in the directory counts: the tables and blob files of every
// part, the write-ahead log and RocksDB's own files, since that is what
// the user's disk holds. Only sample blocks are deleted; the dictionary
// goes with them (forgetting, after the pass), so it counts as a share of
// them; the rest (symbols, summaries, the log, RocksDB's own files) is
// "other". The blocks are measured over the key range still kept, not by
// their files: deleted buckets stay in the files until compaction drops
// them (later still while a query's or the summarizer's snapshot holds
// them), and counting them made the next pass delete again what was
// already gone.
//
//   limit ─────────────────────────────────────────────────┐
//   target (90 %) ─────────────────────────────────┐       │
//   | other: symbols, log, WAL, ... | kept blocks + dictionary |
//                                   └ room: at least a quarter of the limit
//
// The cut is the oldest bucket whose deletion brings the kept blocks
// under their share of the room, found by bisection over the measured
// sizes (not by assuming samples spread evenly over time: gaps between
// runs and a replayed WAL made that delete far more than needed). When
// "other" leaves less than a quarter of the limit, retention keeps the
// newest quarter anyway and says so (StoreStats::retention_problem):
// emptying the store would lose every sample and still not bring it under
// the limit.

RocksStore::StoreSizes RocksStore::MeasureDirectory() const {
  StoreSizes sizes;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir_, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const uint64_t bytes = it->file_size(ec);
    if (ec) continue;
    sizes.directory += bytes;
    // WAL files are <number>.log; RocksDB's diagnostic log is LOG.
    const std::filesystem::path ext = it->path().extension();
    if (ext == ".log") {
      sizes.wal += bytes;
    } else if (ext != ".sst" && ext != ".blob") {
      sizes.own += bytes;
    }
  }
  auto live = [&](rocksdb::ColumnFamilyHandle* cf) {
    uint64_t tables = 0, blobs = 0;
    if (cf == nullptr) return uint64_t{0};
    db_->GetIntProperty(cf, "rocksdb.live-sst-files-size", &tables);
    db_->GetIntProperty(cf, "rocksdb.live-blob-file-size", &blobs);
    return tables + blobs;
  };
  sizes.dictionary = live(meta_cf());
  sizes.kept_parts =
      live(log_cf()) + live(symbols_cf()) + live(summaries_cf()) + live(forward_cf()) + live(spans_cf());
  return sizes;
}

uint64_t RocksStore::KeptBlockBytes(const std::vector<uint32_t>& types, int64_t cut) const {
  std::vector<std::string> bounds;
  for (uint32_t t : types) {
    bounds.push_back(BlockKeyPrefix(t, cut));
    bounds.push_back(BlockKeyPrefix(t, std::numeric_limits<int64_t>::max()));
  }
  std::vector<rocksdb::Range> ranges;
  for (size_t i = 0; i + 1 < bounds.size(); i += 2) ranges.emplace_back(bounds[i], bounds[i + 1]);
  std::vector<uint64_t> sizes(ranges.size(), 0);
  rocksdb::SizeApproximationOptions so;
  so.include_files = true;
  so.include_memtables = false;
  uint64_t bytes = 0;
  if (!ranges.empty() &&
      db_->GetApproximateSizes(so, blocks_cf(), ranges.data(), static_cast<int>(ranges.size()), sizes.data())
          .ok()) {
    for (uint64_t v : sizes) bytes += v;
  }
  return bytes;
}

absl::StatusOr<int64_t> RocksStore::SizeCut(uint64_t limit, int64_t first_bucket, int64_t last_bucket) {
  StoreSizes sizes = MeasureDirectory();
  // The WAL holds the newest data at about twice its settled size, and
  // only a flush makes it tables that can be measured and deleted: when it
  // is a noticeable share of the limit, flush first.
  if (sizes.wal > limit / 16) {
    if (absl::Status s = Flush(); !s.ok()) return s;
    first_unflushed_ns_.store(0);
    sizes = MeasureDirectory();
  }
  const std::vector<uint32_t> types = samples_.TypesWithSamples();
  const uint64_t kept = KeptBlockBytes(types, first_bucket);
  // The dictionary follows the samples kept (forgetting, after this pass),
  // so it counts as a share of them; the rest (symbols, summaries, the
  // log, the WAL, RocksDB's own files) retention cannot delete.
  const uint64_t dictionary = sizes.dictionary;
  const uint64_t other = sizes.other();
  const uint64_t target = limit / 10 * 9;
  const uint64_t floor = limit / 4;
  // A pass leaves room for what arrives before the next can delete: a
  // churning fleet brought a quarter of a 32 MiB limit in one bucket's
  // time, all of it dictionary, and the store peaked at 1.2-1.3x its limit
  // for that. At most a quarter of the limit is set aside.
  const uint64_t reserve = std::min(retention_.GrowthPerBucket(UnixNowNs(), sizes.directory), limit / 4);
  const uint64_t aim = target - std::min(target, reserve);
  const uint64_t room = aim > other ? std::max(aim - other, floor) : floor;
  // The WAL is there for the moment (a flush turns it into tables): what
  // is said to be beyond retention is the rest.
  const uint64_t stuck = other - std::min(other, sizes.wal);
  if (target < stuck + floor) {
    SetRetentionProblem(absl::StrCat(
        "the store cannot keep to its size limit: ", stuck >> 20, " MiB of it is symbols, summaries, the log ",
        "and RocksDB's own files, which retention does not delete, leaving samples ", room >> 20, " MiB of the ",
        limit >> 20, " MiB limit; the newest samples are kept. Raise the limit (--retention-size, or File > "
        "Store settings) or start a new store (--data-dir)"));
  } else {
    SetRetentionProblem("");
  }
  if (other + dictionary + kept + reserve <= limit || kept + dictionary <= room) {
    retention_.dictionary_steps = 0;
    return std::numeric_limits<int64_t>::min();
  }
  // The kept blocks may fill the room in proportion to their share of
  // what follows the samples.
  uint64_t budget = static_cast<uint64_t>(static_cast<double>(kept) * static_cast<double>(room) /
                                          static_cast<double>(kept + dictionary));
  // Mostly dictionary: how much of it goes with the oldest samples is known
  // only after forgetting (a churning fleet's is spread over time, a one-off
  // burst of names sits in a few buckets). A quarter of the step, then
  // forgetting, then another pass at the settling thread's next look (woken
  // below once this one deletes): the cut converges without deleting much
  // more than it must. Passes that still find the dictionary over take
  // half the step, then all of it (as if the dictionary spread evenly over
  // the samples, as a churning fleet's does): where forgetting is slow
  // against the churn (a busy or slow machine; ASan in CI, 15 s a pass) a
  // quarter a pass fell behind what arrived, and the store stayed at 2.3x
  // its limit.
  const bool step = dictionary > kept;
  if (step) {
    const int shift = std::max(0, 2 - retention_.dictionary_steps++);
    budget = kept - ((kept - std::min(kept, budget)) >> shift);
  } else {
    retention_.dictionary_steps = 0;
  }
  // A pass that deletes while the dictionary is a large share: forget at
  // the settling thread's next look rather than after it grew by half.
  if (dictionary > limit / 4) dictionary_.ForgetSoon();
  const int64_t lo = CutKeeping(types, budget, first_bucket, last_bucket);
  if (step && lo > first_bucket) retention_.RunSoon();
  return lo;
}

int64_t RocksStore::CutKeeping(const std::vector<uint32_t>& types, uint64_t budget, int64_t first_bucket,
                               int64_t last_bucket) const {
  // Kept bytes only fall as the cut moves later.
  int64_t lo = first_bucket + 1, hi = last_bucket;
  if (KeptBlockBytes(types, hi) > budget) return hi;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (KeptBlockBytes(types, mid) <= budget) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

// ============================================================================
// [SECTION] The dictionary's memory
// ============================================================================
//
// The dictionary is held in memory whole, and a churning fleet's grows with
// the samples kept: at 100 MiB on disk it was 7.5 M entries and most of
// kiln's 750 MiB. Past its budget, retention deletes the oldest quarter of
// the kept samples, forgetting drops what only they used, and the next look
// measures again: quarter steps, so no more goes than must.

int64_t RocksStore::MemoryCut(int64_t first_bucket, int64_t last_bucket) {
  const uint64_t budget = options_.max_dictionary_memory;
  if (budget == 0) return std::numeric_limits<int64_t>::min();
  if (dictionary_.Read().MemoryBytes() <= budget) return std::numeric_limits<int64_t>::min();
  // The blocks are measured in their tables: the memtables' go there first.
  if (absl::Status s = Flush(); !s.ok()) return std::numeric_limits<int64_t>::min();  // next look
  first_unflushed_ns_.store(0);
  const std::vector<uint32_t> types = samples_.TypesWithSamples();
  const uint64_t kept = KeptBlockBytes(types, first_bucket);
  const int64_t cut = CutKeeping(types, kept - kept / 4, first_bucket, last_bucket);
  if (cut > first_bucket) {
    dictionary_.ForgetSoon();  // forgetting at the settling thread's next look,
    retention_.RunSoon();      // and another pass after it, if still over
  }
  return cut;
}

void RocksStore::SetRetentionProblem(std::string problem) {
  if (!retention_.SetProblem(problem)) return;
  rocksdb::Status kept = problem.empty() ? db_->Delete(rocksdb::WriteOptions(), meta_cf(), kRetentionProblemKey)
                                         : db_->Put(rocksdb::WriteOptions(), meta_cf(), kRetentionProblemKey, problem);
  (void)kept;  // only `kiln stats` (read-only) reads it back; the Log line below says it anyway
  (void)AppendLog(problem.empty() ? LogLevel::kInfo : LogLevel::kError,
                  problem.empty() ? "retention keeps the store within its size limit again" : problem);
}

absl::Status RocksStore::CountDeletable(const std::vector<uint32_t>& types, int64_t cut,
                                        const rocksdb::Snapshot* snapshot, DeletableCount* out) {
  std::vector<BlockSample> decoded;
  for (uint32_t t : types) {
    if (out->samples_by_type.size() <= t) out->samples_by_type.resize(t + 1);
    const std::string begin = BlockKeyPrefix(t, std::numeric_limits<int64_t>::min());
    const std::string end = BlockKeyPrefix(t, cut);
    rocksdb::ReadOptions ro;
    ro.snapshot = snapshot;
    ro.fill_cache = false;  // background passes read each block once: leave the cache to queries
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, blocks_cf()));
    for (it->Seek(begin); it->Valid() && it->key().compare(end) < 0; it->Next()) {
      absl::StatusOr<uint64_t> n = SampleBlockCount(std::string_view(it->value().data(), it->value().size()));
      if (!n.ok()) return absl::DataLossError("retention: " + std::string(n.status().message()));
      out->samples_by_type[t] += *n;
      ++out->blocks;
    }
    // The first block left decides where this type now starts.
    if (it->Valid() && it->key().size() == kBlockKeySize && GetBigEndian32(it->key().data()) == t) {
      if (DecodeSampleBlock(std::string_view(it->value().data(), it->value().size()), &decoded).ok()) {
        for (const BlockSample& b : decoded) out->new_first_ns = std::min(out->new_first_ns, b.time_ns);
      }
    }
    if (!it->status().ok()) return FromRocks(it->status(), "retention: reading sample blocks");
  }
  return absl::OkStatus();
}

void RocksStore::SetRetention(std::chrono::nanoseconds age, uint64_t size_bytes) {
  if (!read_only_) {
    (void)db_->SetDBOptions({{"max_total_wal_size", std::to_string(MaxTotalWalSize(size_bytes))}});
    (void)db_->SetOptions(meta_cf(), DictionaryLayout(size_bytes));
  }
  retention_.SetLimits(age, size_bytes);
  settle_cv_.notify_all();
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

}  // namespace kiln::storage::store_internal
