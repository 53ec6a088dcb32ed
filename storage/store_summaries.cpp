// RocksStore summaries (storage/stack_summary.h, storage/README.md "Long
// ranges"): the index of which hours have one, building them, and keeping
// them true when writes or retention touch their hour.
#include <limits>

#include "storage/store_internal.h"

namespace kiln::storage::store_internal {

absl::Status SummariesPart::Load(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf) {
  if (cf == nullptr) return absl::OkStatus();
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions(), cf));
  std::lock_guard lock(mutex_);
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    rocksdb::Slice key = it->key();
    if (key.size() != kSummaryKeySize) continue;
    hours_.insert({GetBigEndian32(key.data()), KeyBucket(key.data())});
  }
  return FromRocks(it->status(), "listing summaries");
}

void RocksStore::InvalidateSummaries(uint32_t sample_type, int64_t first_hour, int64_t last_hour,
                                     rocksdb::WriteBatch* wb) {
  if (summaries_cf() == nullptr || first_hour > last_hour) return;
  if (summaries_.target.active && summaries_.target.sample_type == sample_type &&
      summaries_.target.hour >= first_hour && summaries_.target.hour <= last_hour) {
    summaries_.target.invalidated = true;
  }
  if (first_hour == last_hour) {
    // A write: one hour, and usually one with no summary yet (the hour
    // still running), which costs no tombstone.
    if (summaries_.Erase(sample_type, first_hour, first_hour)) {
      wb->Delete(summaries_cf(), SummaryKey(sample_type, first_hour));
    }
    return;
  }
  wb->DeleteRange(summaries_cf(), SummaryKey(sample_type, first_hour),
                  SummaryKey(sample_type, last_hour + 1));
  summaries_.Erase(sample_type, first_hour, last_hour);
}

absl::Status RocksStore::BuildSummary(uint32_t sample_type, int64_t hour) {
  const rocksdb::Snapshot* snapshot = nullptr;
  // Stable while summarize_mutex_ is held (the caller's): only a
  // forgetting pass changes it, and it holds that mutex too.
  std::shared_ptr<const IdRemaps> remaps;
  {
    std::lock_guard lock(write_mutex_);
    summaries_.target = {true, false, sample_type, hour};
    snapshot = db_->GetSnapshot();
    remaps = dictionary_.RemapsForWriter();
  }
  StackSummaryBuilder builder(hour);
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot;
  ro.fill_cache = false;  // background passes read each block once: leave the cache to queries
  const std::string upper = BlockKeyPrefix(sample_type, (hour + 1) * kBucketsPerSummary);
  rocksdb::Slice upper_slice(upper);
  ro.iterate_upper_bound = &upper_slice;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, blocks_cf()));
  std::vector<BlockSample> samples;
  absl::Status status;
  for (it->Seek(BlockKeyPrefix(sample_type, hour * kBucketsPerSummary)); it->Valid() && status.ok();
       it->Next()) {
    status = DecodeSampleBlock(std::string_view(it->value().data(), it->value().size()), &samples);
    if (it->key().size() == kBlockKeySize) remaps->Translate(KeySeq(it->key().data()), &samples);
    for (const BlockSample& s : samples) builder.Add(s);
  }
  if (status.ok()) status = FromRocks(it->status(), "summarizing: reading sample blocks");
  it.reset();
  const std::string value = status.ok() ? EncodeStackSummary(std::move(builder).Finish()) : std::string();
  std::lock_guard lock(write_mutex_);
  db_->ReleaseSnapshot(snapshot);
  const bool stale = summaries_.target.invalidated;
  summaries_.target = {};
  if (!status.ok() || stale) return status;
  // Not a change of the data (no data_version bump): the same answers,
  // sooner. Not through the disk guard either: a refused summary costs
  // only speed, and is tried again after the next write.
  if (absl::Status put =
          FromRocks(db_->Put(rocksdb::WriteOptions(), summaries_cf(), SummaryKey(sample_type, hour), value),
                    "storing a summary");
      !put.ok()) {
    return put;
  }
  summaries_.Insert(sample_type, hour);
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> RocksStore::Summarize() {
  if (read_only_ || summaries_cf() == nullptr) return 0;
  std::lock_guard pass(summarize_mutex_);
  summaries_.summarized_version = data_version_.load();
  const Counters counters = samples_.Get();
  if (counters.samples() == 0) return 0;
  // The last hour that is over: ended kSummaryGraceNs before the newest sample.
  const int64_t last_hour = HourOf(counters.last_sample_ns - kSummaryGraceNs) - 1;
  uint64_t built = 0;
  for (uint32_t type = 0; type < counters.samples_by_type.size(); ++type) {
    if (counters.samples_by_type[type] == 0) continue;
    // Walks the hours that hold samples: one seek each, so gaps of months
    // between imported captures cost nothing.
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), blocks_cf()));
    int64_t hour = HourOf(counters.first_sample_ns);
    while (hour <= last_hour && !stopping_) {
      it->Seek(BlockKeyPrefix(type, hour * kBucketsPerSummary));
      if (!it->Valid() || it->key().size() != kBlockKeySize || GetBigEndian32(it->key().data()) != type)
        break;
      const auto bucket = KeyBucket(it->key().data());
      hour = FloorDiv(bucket, kBucketsPerSummary);
      if (hour > last_hour) break;
      if (!summaries_.Has(type, hour)) {
        if (absl::Status s = BuildSummary(type, hour); !s.ok()) return s;
        ++built;
      }
      ++hour;
    }
    if (!it->status().ok()) return FromRocks(it->status(), "summarizing: listing sample blocks");
  }
  return built;
}

}  // namespace kiln::storage::store_internal
