// RocksStore queries: the sharded scan of sample blocks, slices, timelines.
#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <optional>
#include <thread>

#include "storage/store_internal.h"

namespace kiln::storage::store_internal {

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
    snapshot = std::shared_ptr<const rocksdb::Snapshot>(
        db_->GetSnapshot(), [db = db_](const rocksdb::Snapshot* s) { db->ReleaseSnapshot(s); });
    const int64_t first_bucket = FloorDiv(query.from_ns, kBucketNs);
    // The shards split the buckets that hold samples; the first and last
    // keep the query's own ends (data may arrive past the last sample
    // known here, and the snapshot then decides).
    const int64_t lo = std::max(first_bucket, FloorDiv(counters_.first_sample_ns, kBucketNs));
    const int64_t hi =
        std::min(query.to_ns == std::numeric_limits<int64_t>::max() ? std::numeric_limits<int64_t>::max()
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
          statuses[k] =
              absl::DataLossError("sample block refers to a stack or attribute set that does not exist");
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
        part.aggregator =
            std::make_unique<SliceAggregator>(part.slice.get(), stack_count, query.keep_samples);
        return part;
      },
      [](Part& part, const BlockSample& b) {
        part.aggregator->Add(b.stack, b.attribute_set, b.time_ns, b.value);
      },
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

}  // namespace kiln::storage::store_internal
