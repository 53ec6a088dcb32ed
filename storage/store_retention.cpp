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
  std::lock_guard pass(retention_mutex_);
  int64_t first_bucket = 0, last_bucket = 0;
  uint64_t samples = 0;
  {
    std::shared_lock lock(dict_mutex_);
    samples = counters_.samples();
    first_bucket = BucketOf(counters_.first_sample_ns);
    last_bucket = BucketOf(counters_.last_sample_ns);
  }
  if (samples == 0) return report;
  // Buckets before `cut` go.
  int64_t cut = std::numeric_limits<int64_t>::min();
  const int64_t age_ns = retention_age_ns_.load();
  const uint64_t size_limit = retention_size_bytes_.load();
  if (age_ns > 0) {
    const int64_t age_cut = BucketOf(now_ns - age_ns);
    if (age_cut > first_bucket) {
      cut = age_cut;
      report.reason = "age";
    }
  }
  if (size_limit > 0) {
    // The tables only: the memtables are flushed within minutes
    // (StoreOptions::settle_max_age), and their arenas would make a small
    // store look large. Only sample blocks can be deleted (the dictionary
    // is kept whole), so the share to delete is of the blocks' bytes.
    uint64_t bytes = 0, block_bytes = 0;
    for (auto* h : handles_) {
      uint64_t v = 0;
      if (h != blocks_cf() && db_->GetIntProperty(h, "rocksdb.total-sst-files-size", &v)) bytes += v;
    }
    // The blocks still kept, not the blocks' files: deleted buckets stay in
    // the files until compaction drops them, and a snapshot held by a query
    // or the summarizer keeps them there for a while; counting them would
    // make the next pass delete again what is already gone.
    {
      std::vector<std::string> bounds;
      for (uint32_t t : TypesWithSamples()) {
        bounds.push_back(BlockKeyPrefix(t, first_bucket));
        bounds.push_back(BlockKeyPrefix(t, std::numeric_limits<int64_t>::max()));
      }
      std::vector<rocksdb::Range> ranges;
      for (size_t i = 0; i + 1 < bounds.size(); i += 2) ranges.emplace_back(bounds[i], bounds[i + 1]);
      std::vector<uint64_t> sizes(ranges.size(), 0);
      rocksdb::SizeApproximationOptions so;
      so.include_files = true;
      so.include_memtables = false;
      if (!ranges.empty() && db_->GetApproximateSizes(so, blocks_cf(), ranges.data(),
                                                      static_cast<int>(ranges.size()), sizes.data())
                                 .ok()) {
        for (uint64_t v : sizes) block_bytes += v;
      }
    }
    bytes += block_bytes;
    if (bytes > size_limit && block_bytes > 0) {
      // The oldest share of the time span that brings the store to 90% of
      // the limit, assuming samples are spread evenly; the next pass (after
      // compaction freed the space) corrects the guess.
      const double over = static_cast<double>(bytes) - 0.9 * static_cast<double>(size_limit);
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

  // Count what goes from a snapshot, without the write lock: on a day of
  // blocks the count takes seconds, and writes waited for it (443 ms at
  // worst while 61 M samples went). Writes meanwhile are watched: one into
  // a bucket before the cut (data arriving already old) makes the count
  // stale, and then it is made again under the lock.
  const rocksdb::Snapshot* snapshot = nullptr;
  std::vector<uint32_t> types;
  {
    std::lock_guard write_lock(write_mutex_);
    retention_watch_ = RetentionWatch{.active = true, .cut = cut};
    snapshot = db_->GetSnapshot();
    types = TypesWithSamples();
  }
  DeletableCount count;
  absl::Status counted = CountDeletable(types, cut, snapshot, &count);
  db_->ReleaseSnapshot(snapshot);
  // Under the write lock from here until the counters are stored (not
  // through the compaction below): no Write() changes them meanwhile.
  std::unique_lock write_lock(write_mutex_);
  const RetentionWatch watch = retention_watch_;
  retention_watch_ = RetentionWatch{};
  if (!counted.ok()) return counted;
  if (watch.old_bucket_written) {
    types = TypesWithSamples();
    count = DeletableCount{};
    if (absl::Status s = CountDeletable(types, cut, nullptr, &count); !s.ok()) return s;
    report.recounted = true;
  }
  Counters counters;
  {
    std::shared_lock lock(dict_mutex_);
    counters = counters_;
  }
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
  wb.Put(meta_cf(), kStatsKey, counters.Encode());
  if (rocksdb::Status s = db_->Write(rocksdb::WriteOptions(), &wb); !s.ok()) {
    if (disk_) disk_->NoteWriteError(s.ToString());
    return FromRocks(s, "retention: deleting sample blocks");
  }
  {
    std::unique_lock lock(dict_mutex_);
    counters_ = counters;
  }
  write_lock.unlock();
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
  return report;
}

std::vector<uint32_t> RocksStore::TypesWithSamples() const {
  std::shared_lock lock(dict_mutex_);
  std::vector<uint32_t> types;
  for (uint32_t t = 0; t < counters_.samples_by_type.size(); ++t) {
    if (counters_.samples_by_type[t] != 0) types.push_back(t);
  }
  return types;
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
  retention_age_ns_ = age.count();
  retention_size_bytes_ = size_bytes;
  retention_changed_ = true;
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
