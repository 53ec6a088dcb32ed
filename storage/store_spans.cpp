// The span index: which sample blocks hold a trace's or a span's samples,
// so that `--filter trace_id=HEX` (and the window's span filter) reads
// those blocks, not the whole range (issue 31).
//
// The "spans" family holds empty values under "t<trace hex>\0<block key>"
// and "s<span hex>\0<block key>", written in the same RocksDB write as the
// blocks, for batches that carry spans at all (an agent that sends none
// pays a scan of its batch's links and attribute keys). A block that
// retention deleted leaves its entries behind until a compaction, whose
// filter drops entries of buckets before the first one kept; a lookup
// that finds a deleted block skips it. Blocks written before the index
// existed (an older store) are not in it: the meta key says from which
// sample time on it is complete, and a query reaching before that scans.
#include <rocksdb/compaction_filter.h>

#include <algorithm>
#include <limits>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "storage/model/spans.h"
#include "storage/store_internal.h"

namespace kiln::storage::store_internal {
namespace {

constexpr char kSpanIndexSinceKey[] = "meta:span_index_since";
constexpr char kTraceTag = 't', kSpanTag = 's';

std::string IndexKey(char tag, std::string_view hex, std::string_view block_key) {
  std::string key(1, tag);
  key.append(hex);
  key.push_back('\0');
  key.append(block_key);
  return key;
}

class SpanIndexFilter : public rocksdb::CompactionFilter {
 public:
  explicit SpanIndexFilter(std::shared_ptr<std::atomic<int64_t>> floor) : floor_(std::move(floor)) {}
  bool Filter(int, const rocksdb::Slice& key, const rocksdb::Slice&, std::string*, bool*) const override {
    if (key.size() < kBlockKeySize + 2) return false;
    return KeyBucket(key.data() + key.size() - kBlockKeySize) < floor_->load(std::memory_order_relaxed);
  }
  const char* Name() const override { return "kiln.SpanIndexFilter"; }

 private:
  std::shared_ptr<std::atomic<int64_t>> floor_;
};

// Whether any sample of `batch` can be in a span: a link with ids, or an
// attribute named trace_id or span_id.
bool MayHaveSpans(const ProfileBatch& batch) {
  const ProfileDictionary& d = batch.dict;
  for (size_t l = 1; l < d.links.size(); ++l) {
    if (!d.links[l].trace_id.empty() || !d.links[l].span_id.empty()) return true;
  }
  for (const Attribute& a : d.attributes) {
    if (a.key < d.strings.size() && (d.strings[a.key] == attr::kTraceId || d.strings[a.key] == attr::kSpanId)) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::unique_ptr<rocksdb::CompactionFilter> NewSpanIndexFilter(std::shared_ptr<std::atomic<int64_t>> floor) {
  return std::make_unique<SpanIndexFilter>(std::move(floor));
}

void RocksStore::IndexSpans(const ProfileBatch& batch,
                            const std::vector<std::pair<std::string, std::vector<uint32_t>>>& runs,
                            rocksdb::WriteBatch* wb) const {
  if (spans_cf() == nullptr || !MayHaveSpans(batch)) return;
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>, SpanIdentity> ids;  // (link, set), batch-local
  std::set<std::pair<char, std::string>> keys;
  for (const auto& [block_key, samples] : runs) {
    keys.clear();
    for (uint32_t i : samples) {
      const Sample& s = batch.samples[i];
      auto [it, added] = ids.try_emplace(std::pair{s.link, s.attribute_set});
      if (added) it->second = SpanOf(batch.dict, s.link, s.attribute_set);
      if (!it->second.trace.empty()) keys.emplace(kTraceTag, it->second.trace);
      if (!it->second.span.empty()) keys.emplace(kSpanTag, it->second.span);
    }
    for (const auto& [tag, hex] : keys) wb->Put(spans_cf(), IndexKey(tag, hex, block_key), rocksdb::Slice());
  }
}

std::optional<std::vector<std::string>> RocksStore::IndexedBlocks(const SampleSelector& selector, uint32_t type_id,
                                                                  int64_t first, int64_t end, int64_t from_ns,
                                                                  const rocksdb::Snapshot* snapshot) const {
  if (spans_cf() == nullptr || selector.spans().empty() || from_ns < span_index_since_ns_) return std::nullopt;
  // Every span filter must pass: the blocks of the one with the fewest
  // values are enough to read (each holds all of that filter's samples).
  const AttributeFilter* f = &selector.spans().front();
  for (const AttributeFilter& g : selector.spans()) {
    if (g.values.size() < f->values.size()) f = &g;
  }
  const char tag = f->key == attr::kTraceId ? kTraceTag : kSpanTag;
  const std::string lower_block = BlockKeyPrefix(type_id, first);
  const std::string upper_block = end == std::numeric_limits<int64_t>::max()
                                      ? BlockKeyPrefix(type_id + 1, std::numeric_limits<int64_t>::min())
                                      : BlockKeyPrefix(type_id, end);
  std::vector<std::string> blocks;
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot;
  for (const std::string& hex : f->values) {
    const std::string prefix = IndexKey(tag, hex, "");
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, spans_cf()));
    for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
      const rocksdb::Slice key = it->key();
      if (key.size() != prefix.size() + kBlockKeySize) continue;
      std::string block(key.data() + prefix.size(), kBlockKeySize);
      if (block >= lower_block && block < upper_block) blocks.push_back(std::move(block));
    }
    if (!it->status().ok()) return std::nullopt;  // the scan answers instead
  }
  std::sort(blocks.begin(), blocks.end());
  blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());
  return blocks;
}

absl::Status RocksStore::OpenSpanIndex() {
  if (spans_cf() == nullptr) return absl::OkStatus();
  const Counters counters = samples_.Get();
  if (counters.samples() > 0) span_index_floor_->store(BucketOf(counters.first_sample_ns));
  std::string v;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), meta_cf(), kSpanIndexSinceKey, &v);
  if (s.ok() && v.size() == 8) {
    span_index_since_ns_ = static_cast<int64_t>(GetBigEndian64(v.data()));
    return absl::OkStatus();
  }
  if (read_only_) return absl::OkStatus();  // an older store: no index to use
  // From now on: every block written before holds samples up to the last
  // one known, so samples after it are all indexed.
  span_index_since_ns_ =
      counters.samples() == 0 ? std::numeric_limits<int64_t>::min() : counters.last_sample_ns + 1;
  std::string since;
  PutBigEndian64(&since, static_cast<uint64_t>(span_index_since_ns_));
  return FromRocks(db_->Put(rocksdb::WriteOptions(), meta_cf(), kSpanIndexSinceKey, since),
                   "writing the span index's start");
}

}  // namespace kiln::storage::store_internal
