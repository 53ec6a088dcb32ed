// ForwardPart: what kiln owes each forwarding destination (kiln --forward).
#include <algorithm>
#include <memory>

#include "storage/store_internal.h"

namespace kiln::storage::store_internal {

// Key: destination bytes, '\0', u64 sequence (big-endian), so one
// destination's entries are contiguous and in order. Value: varint zigzag
// Unix ns when accepted, then the request's bytes.

std::string ForwardPart::Key(const std::string& destination, uint64_t seq) {
  std::string key = destination;
  key.push_back('\0');
  PutBigEndian64(&key, seq);
  return key;
}

void ForwardPart::PopThrough(Queue* q, uint64_t seq) {
  while (!q->entries.empty() && q->entries.front().seq <= seq) {
    q->bytes -= q->entries.front().bytes;
    q->entries.pop_front();
  }
}

absl::Status ForwardPart::Load() {
  if (cf_ == nullptr) return absl::OkStatus();
  std::lock_guard lock(mutex_);
  rocksdb::ReadOptions ro;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, cf_));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const rocksdb::Slice key = it->key();
    if (key.size() < 9 || key[key.size() - 9] != '\0') continue;  // not ours: left alone
    const std::string destination(key.data(), key.size() - 9);
    const uint64_t seq = GetBigEndian64(key.data() + key.size() - 8);
    const rocksdb::Slice value = it->value();
    VarintReader r{value.data(), value.data() + value.size()};
    const int64_t enqueued = UnZigZag(r.Next());
    if (!r.ok) continue;
    Queue& q = queues_[destination];
    const uint64_t bytes = static_cast<uint64_t>(value.data() + value.size() - r.p);
    q.entries.push_back({seq, bytes, enqueued});
    q.bytes += bytes;
    q.next_seq = std::max(q.next_seq, seq + 1);
  }
  if (!it->status().ok()) return FromRocks(it->status(), "reading the forward queues");
  return absl::OkStatus();
}

absl::Status ForwardPart::Append(const std::vector<std::string>& destinations, std::string_view request,
                                 int64_t now_ns, rocksdb::WriteBatch* wb, Pending* pending) {
  if (cf_ == nullptr) return absl::FailedPreconditionError("this store cannot hold a forward queue");
  std::string value;
  PutVarint(&value, ZigZag(now_ns));
  value.append(request);
  std::lock_guard lock(mutex_);
  for (const std::string& destination : destinations) {
    // Numbers are taken now (under the store's write lock, so in write
    // order); a failed write leaves a gap, which nothing minds.
    Queue& q = queues_[destination];
    const Meta meta{q.next_seq++, request.size(), now_ns};
    wb->Put(cf_, Key(destination, meta.seq), value);
    pending->push_back({destination, meta});
  }
  return absl::OkStatus();
}

void ForwardPart::Publish(const Pending& pending) {
  std::lock_guard lock(mutex_);
  for (const auto& [destination, meta] : pending) {
    Queue& q = queues_[destination];
    q.entries.push_back(meta);
    q.bytes += meta.bytes;
  }
}

absl::StatusOr<uint64_t> ForwardPart::Bound(uint64_t max_bytes) {
  if (cf_ == nullptr || max_bytes == 0) return 0;
  rocksdb::WriteBatch wb;
  uint64_t dropped = 0;
  std::vector<std::pair<std::string, uint64_t>> cuts;  // destination, last dropped seq
  {
    std::lock_guard lock(mutex_);
    for (auto& [destination, q] : queues_) {
      uint64_t bytes = q.bytes;
      size_t n = 0;
      // The newest request always stays: a bound below one request's size
      // still forwards something.
      while (bytes > max_bytes && n + 1 < q.entries.size()) bytes -= q.entries[n++].bytes;
      if (n == 0) continue;
      wb.DeleteRange(cf_, Key(destination, 0), Key(destination, q.entries[n - 1].seq + 1));
      cuts.push_back({destination, q.entries[n - 1].seq});
      dropped += n;
    }
  }
  if (cuts.empty()) return 0;
  // Deleting must work on a full disk: it is what makes room.
  if (absl::Status s = writer_->CommitAlways(&wb, "dropping forward requests over the bound"); !s.ok()) return s;
  std::lock_guard lock(mutex_);
  for (const auto& [destination, last] : cuts) {
    Queue& q = queues_[destination];
    const size_t before = q.entries.size();
    PopThrough(&q, last);
    q.dropped += before - q.entries.size();
  }
  return dropped;
}

std::vector<ForwardEntry> ForwardPart::Peek(const std::string& destination, size_t max) const {
  std::vector<ForwardEntry> out;
  if (cf_ == nullptr || max == 0) return out;
  std::vector<Meta> metas;
  {
    std::lock_guard lock(mutex_);
    auto it = queues_.find(destination);
    if (it == queues_.end()) return out;
    for (size_t i = 0; i < it->second.entries.size() && i < max; ++i) metas.push_back(it->second.entries[i]);
  }
  for (const Meta& m : metas) {
    std::string value;
    if (!db_->Get(rocksdb::ReadOptions(), cf_, Key(destination, m.seq), &value).ok()) break;
    VarintReader r{value.data(), value.data() + value.size()};
    const int64_t enqueued = UnZigZag(r.Next());
    if (!r.ok) break;
    out.push_back({m.seq, enqueued, value.substr(static_cast<size_t>(r.p - value.data()))});
  }
  return out;
}

absl::Status ForwardPart::Ack(const std::string& destination, uint64_t seq) {
  if (cf_ == nullptr) return absl::OkStatus();
  rocksdb::WriteBatch wb;
  wb.DeleteRange(cf_, Key(destination, 0), Key(destination, seq + 1));
  if (absl::Status s = writer_->CommitAlways(&wb, "acknowledging forwarded requests"); !s.ok()) return s;
  std::lock_guard lock(mutex_);
  auto it = queues_.find(destination);
  if (it == queues_.end()) return absl::OkStatus();
  PopThrough(&it->second, seq);
  return absl::OkStatus();
}

ForwardBacklog ForwardPart::Backlog(const std::string& destination) const {
  std::lock_guard lock(mutex_);
  auto it = queues_.find(destination);
  if (it == queues_.end()) return {};
  const Queue& q = it->second;
  return {q.entries.size(), q.bytes, q.entries.empty() ? 0 : q.entries.front().enqueued_ns, q.dropped};
}

std::vector<std::string> ForwardPart::Destinations() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [destination, q] : queues_) out.push_back(destination);
  return out;
}

}  // namespace kiln::storage::store_internal
