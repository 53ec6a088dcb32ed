// LogPart and LossesPart: the Log's entries and the data-loss totals.
#include <algorithm>
#include <memory>

#include "storage/store_internal.h"

namespace kiln::storage::store_internal {

// ============================================================================
// [SECTION] LogPart
// ============================================================================
//
// Key: u64 sequence (big-endian); value: zigzag Unix ns, u8 level, message.

absl::Status LogPart::Load() {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), cf_));
  it->SeekToLast();
  if (it->Valid() && it->key().size() == 8) next_seq_ = GetBigEndian64(it->key().data()) + 1;
  return FromRocks(it->status(), "reading the log");
}

absl::Status LogPart::Append(LogLevel level, std::string_view message) {
  std::string key, value;
  PutBigEndian64(&key, next_seq_.fetch_add(1));
  PutVarint(&value, ZigZag(UnixNowNs()));
  value.push_back(static_cast<char>(level));
  value.append(message);
  rocksdb::WriteBatch wb;
  wb.Put(cf_, key, value);
  return writer_->CommitAlways(&wb, "writing log");
}

std::vector<LogEntry> LogPart::Read(size_t max) const {
  std::vector<LogEntry> entries;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), cf_));
  for (it->SeekToLast(); it->Valid() && entries.size() < max; it->Prev()) {
    if (it->key().size() != 8) continue;
    LogEntry e;
    e.sequence = GetBigEndian64(it->key().data());
    VarintReader r{it->value().data(), it->value().data() + it->value().size()};
    e.time_ns = UnZigZag(r.Next());
    e.level = static_cast<LogLevel>(std::min<uint8_t>(r.Byte(), 3));
    if (!r.ok) continue;
    e.message.assign(r.p, r.end);
    entries.push_back(std::move(e));
  }
  return entries;
}

void LogPart::Trim() {
  std::lock_guard lock(trim_mutex_);
  const uint64_t next = next_seq_.load();
  if (next < kMaxEntries || next - kMaxEntries < trimmed_before_ + kMaxEntries / 8) return;
  std::string begin, end;
  PutBigEndian64(&begin, 0);
  PutBigEndian64(&end, next - kMaxEntries);
  if (db_->DeleteRange(rocksdb::WriteOptions(), cf_, begin, end).ok()) {
    trimmed_before_ = next - kMaxEntries;
    rocksdb::Slice b(begin), e(end);
    (void)db_->CompactRange(rocksdb::CompactRangeOptions(), cf_, &b, &e);
  }
}

// ============================================================================
// [SECTION] LossesPart
// ============================================================================

absl::Status LossesPart::Load() {
  std::lock_guard lock(mutex_);
  losses_.assign(kDataLossCount, 0);
  std::string v;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), cf_, kLossKey, &v);
  if (s.IsNotFound()) return absl::OkStatus();
  if (!s.ok()) return FromRocks(s, "reading data-loss counts");
  VarintReader r{v.data(), v.data() + v.size()};
  const uint64_t n = r.Next();
  if (r.ok && n <= v.size()) {
    losses_.resize(std::max<size_t>(n, kDataLossCount), 0);
    for (uint64_t i = 0; i < n; ++i) losses_[i] = r.Next();
  }
  return absl::OkStatus();
}

absl::Status LossesPart::Add(const DataLossCounts& counts) {
  std::lock_guard lock(mutex_);
  bool any = false;
  for (size_t i = 0; i < counts.size(); ++i) any = any || counts[i] != 0;
  if (!any) return absl::OkStatus();
  std::vector<uint64_t> next = losses_;
  for (size_t i = 0; i < counts.size(); ++i) next[i] += counts[i];
  std::string v;
  PutVarint(&v, next.size());
  for (uint64_t k : next) PutVarint(&v, k);
  rocksdb::WriteBatch wb;
  wb.Put(cf_, kLossKey, v);
  absl::Status s = writer_->CommitAlways(&wb, "writing data-loss counts");
  // Kept in memory even when the disk refuses: `kiln stats` of a running
  // store may lag, the window does not.
  losses_ = std::move(next);
  return s;
}

DataLossCounts LossesPart::Totals() const {
  std::lock_guard lock(mutex_);
  DataLossCounts out{};
  for (size_t i = 0; i < out.size() && i < losses_.size(); ++i) out[i] = losses_[i];
  return out;
}

}  // namespace kiln::storage::store_internal
