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

// What a scan reads, in time order: buckets [b0, b1) of samples, or the
// summary of the hour starting at bucket b0.
struct ScanItem {
  int64_t b0 = 0, b1 = 0;
  bool summary = false;
};

// A summary whose ids the dictionary does not have is not used (its
// hour's samples are read, and report the damage if they share it).
bool SummaryIdsValid(const StackSummary& s, size_t stack_count, size_t set_count) {
  for (const StackSummary::Set& e : s.sets) {
    if (e.attribute_set >= set_count) return false;
  }
  for (const StackSummary::Weight& w : s.stacks) {
    if (w.attribute_set >= set_count || w.key >= stack_count) return false;
  }
  for (const StackSummary::Weight& w : s.buckets) {
    if (w.attribute_set >= set_count) return false;
  }
  return true;
}

}  // namespace

template <typename State, typename Make, typename Visit, typename VisitSummary>
absl::Status RocksStore::Scan(const Query& query, bool use_summaries, const Make& make, const Visit& visit,
                              const VisitSummary& visit_summary, std::vector<State>* states) const {
  states->clear();
  if (query.to_ns <= query.from_ns) return absl::OkStatus();
  std::optional<SampleSelector> selector;
  uint32_t type_id = 0;
  size_t stack_count = 0;
  size_t set_count = 0;
  std::vector<ScanItem> items;
  int64_t lo = 0, hi = 0;  // the buckets from the first to the last sample known
  // With span filters: the blocks the span index names, read instead of
  // the range (store_spans.cpp); none when it cannot answer.
  std::optional<std::vector<std::string>> indexed;
  // One snapshot for every shard: together they see one state of the store.
  std::shared_ptr<const rocksdb::Snapshot> snapshot;
  // The ids of blocks written before the last forgetting pass, as of the
  // same moment as the snapshot and the dictionary.
  std::shared_ptr<const IdRemaps> remaps;
  {
    const DictionaryPart::Reader read = dictionary_.Read();
    remaps = read.remaps();
    selector.emplace(read.dict(), query);
    if (!selector->any_type()) return absl::OkStatus();  // never stored: nothing to see
    type_id = selector->sample_type();
    stack_count = read.dict().StackCount();
    set_count = read.dict().AttributeSetCount();
    snapshot = std::shared_ptr<const rocksdb::Snapshot>(
        db_->GetSnapshot(), [db = db_](const rocksdb::Snapshot* s) { db->ReleaseSnapshot(s); });
    // Buckets [first, end) hold the range; lo..hi those that hold samples
    // (data may arrive past the last sample known here, and the snapshot
    // then decides, so the range's own ends are kept).
    const int64_t first = BucketOf(query.from_ns);
    const int64_t end = query.to_ns == std::numeric_limits<int64_t>::max()
                            ? std::numeric_limits<int64_t>::max()
                            : BucketOf(query.to_ns - 1) + 1;
    const Counters counters = samples_.Get();
    lo = BucketOf(counters.first_sample_ns);
    hi = BucketOf(counters.last_sample_ns);
    indexed = IndexedBlocks(*selector, type_id, first, end, std::max(query.from_ns, counters.first_sample_ns),
                            snapshot.get());
    // Raw ranges are cut in pieces so that shards can share them out.
    auto add_raw = [&](int64_t a, int64_t b) {
      if (a >= b) return;
      const int64_t ca = std::max(a, lo), cb = std::min(b, hi + 1);
      const int pieces = cb - ca > 1 ? ScanShardCount(cb - ca) : 1;
      for (int k = 1; k < pieces; ++k) {
        const int64_t cut = ca + (cb - ca) * k / pieces;
        items.push_back({a, cut, false});
        a = cut;
      }
      items.push_back({a, b, false});
    };
    int64_t cur = first;
    // A summary has no links: span filters read the samples themselves.
    if (use_summaries && options_.use_summaries && hi >= lo && selector->spans().empty()) {
      // Hours wholly inside the range (clamped to the hours that hold
      // data first, so that the arithmetic stays far from int64's ends).
      const int64_t from = std::max(query.from_ns, FloorDiv(lo, kBucketsPerSummary) * kSummaryNs);
      const int64_t to = std::min(query.to_ns, (FloorDiv(hi, kBucketsPerSummary) + 1) * kSummaryNs);
      const int64_t first_hour = -FloorDiv(-from, kSummaryNs);  // rounded up
      const int64_t end_hour = FloorDiv(to, kSummaryNs);
      for (int64_t h = first_hour; h < end_hour; ++h) {
        if (!summaries_.Has(type_id, h)) continue;
        add_raw(cur, h * kBucketsPerSummary);
        items.push_back({h * kBucketsPerSummary, (h + 1) * kBucketsPerSummary, true});
        cur = (h + 1) * kBucketsPerSummary;
      }
    }
    add_raw(cur, end);
  }

  // One block's selected samples into `state`.
  auto read_block = [&](State& state, const char* key, std::string_view value,
                        std::vector<BlockSample>* samples) -> absl::Status {
    if (auto s = DecodeSampleBlock(value, samples); !s.ok()) return s;
    blocks_read_.fetch_add(1, std::memory_order_relaxed);
    remaps->Translate(KeySeq(key), samples);
    for (const BlockSample& s : *samples) {
      if (s.attribute_set >= set_count || s.stack >= stack_count) {
        return absl::DataLossError("sample block refers to a stack or attribute set that does not exist");
      }
      if (selector->Selects(type_id, s.time_ns, s.attribute_set, s.link)) visit(state, s);
    }
    return absl::OkStatus();
  };
  if (indexed) {
    states->push_back(make(stack_count));
    rocksdb::ReadOptions ro;
    ro.snapshot = snapshot.get();
    std::vector<BlockSample> samples;
    std::string value;
    for (const std::string& key : *indexed) {
      const rocksdb::Status got = db_->Get(ro, blocks_cf(), key, &value);
      if (got.IsNotFound()) continue;  // retention deleted it; its index entries go at a compaction
      if (!got.ok()) return FromRocks(got, "reading sample blocks");
      if (auto s = read_block(states->front(), key.data(), value, &samples); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  // Contiguous runs of items per shard, of about equal cost: a bucket that
  // may hold samples counts 1 (an open end of the range counts only up to
  // the data), a summary 360 / 16 (a busy hour's summary holds about a
  // sixteenth as many entries as samples: a guess that only balances the
  // threads).
  auto cost = [lo, hi](const ScanItem& item) -> int64_t {
    if (item.summary) return kBucketsPerSummary / 16;
    return std::max<int64_t>(1, std::min(item.b1, hi + 1) - std::max(item.b0, lo));
  };
  int64_t total = 0;
  for (const ScanItem& item : items) total += cost(item);
  const size_t shards = std::min<size_t>(items.size(), ScanShardCount(total));
  std::vector<size_t> shard_begin = {0};
  int64_t acc = 0;
  for (size_t i = 0; i + 1 < items.size() && shard_begin.size() < shards; ++i) {
    acc += cost(items[i]);
    if (acc * static_cast<int64_t>(shards) >= total * static_cast<int64_t>(shard_begin.size())) {
      shard_begin.push_back(i + 1);
    }
  }
  shard_begin.push_back(items.size());
  const size_t shard_count = shard_begin.size() - 1;
  states->reserve(shard_count);
  for (size_t k = 0; k < shard_count; ++k) states->push_back(make(stack_count));
  std::vector<absl::Status> statuses(shard_count);

  auto scan_shard = [&](size_t k) {
    State& state = (*states)[k];
    std::vector<BlockSample> samples;
    std::vector<int64_t> raw_buckets;
    StackSummary summary;
    std::string value;
    auto scan_raw = [&](int64_t b0, int64_t b1) -> absl::Status {
      rocksdb::ReadOptions ro;
      ro.snapshot = snapshot.get();
      const std::string lower = BlockKeyPrefix(type_id, b0), upper = BlockKeyPrefix(type_id, b1);
      rocksdb::Slice upper_slice(upper);
      ro.iterate_upper_bound = &upper_slice;
      std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, blocks_cf()));
      for (it->Seek(lower); it->Valid(); it->Next()) {
        rocksdb::Slice key = it->key();
        if (key.size() != kBlockKeySize || GetBigEndian32(key.data()) != type_id) break;
        if (auto s = read_block(state, key.data(), std::string_view(it->value().data(), it->value().size()),
                                &samples);
            !s.ok()) {
          return s;
        }
      }
      return FromRocks(it->status(), "reading sample blocks");
    };
    for (size_t i = shard_begin[k]; i < shard_begin[k + 1]; ++i) {
      const ScanItem& item = items[i];
      absl::Status s;
      bool summarized = false;
      if (item.summary) {
        rocksdb::ReadOptions ro;
        ro.snapshot = snapshot.get();
        const int64_t hour = item.b0 / kBucketsPerSummary;
        // Gone from the snapshot (a write since the index was read) or
        // damaged: the hour's samples answer instead.
        if (db_->Get(ro, summaries_cf(), SummaryKey(type_id, hour), &value).ok() &&
            DecodeStackSummary(value, hour, &summary).ok() &&
            SummaryIdsValid(summary, stack_count, set_count)) {
          raw_buckets.clear();
          summarized = visit_summary(state, summary, *selector, &raw_buckets);
          if (summarized) summaries_.hours_read.fetch_add(1, std::memory_order_relaxed);
          for (size_t j = 0; summarized && j < raw_buckets.size() && s.ok(); ++j) {
            s = scan_raw(raw_buckets[j], raw_buckets[j] + 1);
          }
        }
      }
      if (!summarized) s = scan_raw(item.b0, item.b1);
      if (!s.ok()) {
        statuses[k] = s;
        return;
      }
    }
  };
  std::vector<std::thread> threads;
  for (size_t k = 1; k < shard_count; ++k) threads.emplace_back(scan_shard, k);
  if (shard_count > 0) scan_shard(0);
  for (std::thread& t : threads) t.join();
  for (const absl::Status& s : statuses) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const ProfileSlice>> RocksStore::Run(const Query& query) const {
  // A forgetting pass between the scan and the naming of its ids renumbers
  // the dictionary under the query: it runs again (passes are minutes apart).
  for (int attempt = 0;; ++attempt) {
    absl::StatusOr<std::shared_ptr<const ProfileSlice>> slice = RunOnce(query, dictionary_.Epoch());
    if (slice.ok() || !absl::IsAborted(slice.status()) || attempt == 4) return slice;
  }
}

absl::StatusOr<std::shared_ptr<const ProfileSlice>> RocksStore::RunOnce(const Query& query,
                                                                        uint64_t epoch) const {
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
      query, /*use_summaries=*/!query.keep_samples,  // a summary has no sample times
      [&query](size_t stack_count) {
        Part part;
        part.aggregator =
            std::make_unique<SliceAggregator>(part.slice.get(), stack_count, query.keep_samples);
        return part;
      },
      [](Part& part, const BlockSample& b) {
        part.aggregator->Add(b.stack, b.attribute_set, b.time_ns, b.value, b.link);
      },
      [](Part& part, const StackSummary& summary, const SampleSelector& selector, std::vector<int64_t>*) {
        if (!summary.has_stacks) return false;
        for (const StackSummary::Set& set : summary.sets) {
          if (selector.SelectsSet(set.attribute_set)) part.aggregator->AddTimes(set.first_ns, set.last_ns);
        }
        for (const StackSummary::Weight& w : summary.stacks) {
          if (selector.SelectsSet(w.attribute_set))
            part.aggregator->AddSummed(w.key, w.attribute_set, w.weight, w.events);
        }
        return true;
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
  const DictionaryPart::Reader read = dictionary_.Read();
  if (dictionary_.Epoch() != epoch) return absl::AbortedError("the dictionary was renumbered during the query");
  const ProfileDictionary& g = read.dict();
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
  // Tables are looked up per executable when its first frame not named
  // before (named_frames_) needs one, and held here for the rest of the
  // call. The names kept are for this dictionary epoch and the symbols
  // versions read before any table is. A table replaced or dropped
  // meanwhile starts the next query afresh. Any other change (a status, a
  // table for an executable that had none) forgets only the frames kept
  // without a name: a developer's loop stores one for every program it
  // builds, and starting afresh at each made the next query load the
  // table of every executable in range at once (hundreds of MB with a
  // few builds of a large C++ program).
  const bool has_symbols = symbols_->Any();
  std::unique_lock named_lock(named_frames_.mu, std::defer_lock);
  if (has_symbols) {
    named_lock.lock();
    const uint64_t version = symbols_->Version();
    const uint64_t renames = symbols_->RenamesVersion();
    if (named_frames_.epoch != epoch || named_frames_.renames_version != renames ||
        named_frames_.frames.size() > NamedFrames::kMaxFrames) {
      named_frames_.frames.clear();
      named_frames_.strings.clear();
      named_frames_.epoch = epoch;
      named_frames_.renames_version = renames;
    } else if (named_frames_.symbols_version != version) {
      for (auto it = named_frames_.frames.begin(); it != named_frames_.frames.end();) {
        if (it->second.empty()) {
          named_frames_.frames.erase(it++);
        } else {
          ++it;
        }
      }
    }
    named_frames_.symbols_version = version;
  }
  auto keep_string = [&](std::string_view text) -> std::string_view {
    if (text.empty()) return {};
    return *named_frames_.strings.emplace(text).first;
  };
  std::vector<std::shared_ptr<const SymbolTable>> tables;
  std::vector<uint8_t> table_looked_up;
  if (has_symbols) {
    tables.resize(g.executables.size());
    table_looked_up.resize(g.executables.size());
  }
  auto table_for = [&](const Frame& f) -> const SymbolTable* {
    if (!has_symbols || !SymbolizableFrame(f)) return nullptr;
    if (!table_looked_up[f.executable]) {
      const Executable& e = g.executables[f.executable];
      tables[f.executable] = symbols_->TableFor(g.strings[e.htlhash], g.strings[e.gnu_build_id]);
      table_looked_up[f.executable] = 1;
    }
    return tables[f.executable].get();
  };
  // A stored frame becomes one slice frame, or with symbols its inline
  // chain: frame_map holds the first of its slice frames (consecutive, root
  // first) and frame_span how many.
  std::vector<uint8_t> frame_span(g.frames.size(), 1);
  std::vector<SymbolizedFrame> looked_up;
  // The frame's names, innermost first (empty: none), from named_frames_
  // or its table, kept for the next query.
  auto names_of = [&](uint32_t id, const Frame& f) -> const std::vector<NamedFrames::Name>* {
    if (!has_symbols || !SymbolizableFrame(f)) return nullptr;
    auto [it, inserted] = named_frames_.frames.try_emplace(id);
    if (inserted) {
      const SymbolTable* table = table_for(f);
      if (table != nullptr && table->Lookup(f.address, &looked_up)) {
        for (const SymbolizedFrame& s : looked_up) {
          it->second.push_back({keep_string(s.function), keep_string(s.file), s.line});
        }
      }
    }
    return &it->second;
  };
  auto map_frame = [&](uint32_t id) {
    if (frame_map[id] == kNone) {
      Frame f = g.frames[id];
      const std::vector<NamedFrames::Name>* names = names_of(id, f);
      if (names != nullptr && !names->empty()) {
        const std::vector<NamedFrames::Name>& chain = *names;
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
  // The kept samples' links (their traces and spans).
  if (!slice->samples.empty()) {
    absl::flat_hash_map<uint32_t, uint32_t> link_map;
    for (SliceSample& s : slice->samples) {
      if (s.link == 0) continue;
      if (s.link >= g.links.size()) return absl::DataLossError("sample block refers to a link that does not exist");
      auto [it, added] = link_map.try_emplace(s.link, static_cast<uint32_t>(out.links.size()));
      if (added) out.links.push_back(g.links[s.link]);
      s.link = it->second;
    }
  }
  return std::shared_ptr<const ProfileSlice>(std::move(slice));
}

absl::StatusOr<Timeline> RocksStore::RunTimeline(const Query& query, int bucket_count) const {
  if (bucket_count <= 0) return absl::InvalidArgumentError("timeline needs at least one bucket");
  TimeSpan span;
  {
    const Counters counters = samples_.Get();
    span = TimelineSpan(query, counters.first_sample_ns, counters.last_sample_ns);
  }
  Timeline t = EmptyTimeline(span, bucket_count);
  Query q = query;
  q.from_ns = span.from_ns;
  q.to_ns = span.to_ns;
  std::vector<Timeline> parts;
  absl::Status s = Scan(
      q, /*use_summaries=*/true, [&t](size_t) { return t; },
      [](Timeline& part, const BlockSample& b) { AddToTimeline(&part, b.time_ns, b.value); },
      [](Timeline& part, const StackSummary& summary, const SampleSelector& selector,
         std::vector<int64_t>* raw) {
        if (!summary.has_buckets) return false;
        // A 10 s bucket wholly inside one timeline bucket adds its sums
        // there; one that a timeline bucket edge cuts is read sample by
        // sample (listed in `raw`). Timelines finer than 10 s cut them all.
        std::vector<int64_t> index(kBucketsPerSummary, -1);
        for (int64_t off = 0; off < kBucketsPerSummary; ++off) {
          const int64_t start = (summary.hour * kBucketsPerSummary + off) * kBucketNs;
          const int64_t i = TimelineIndex(part, start);
          if (i >= 0 && i == TimelineIndex(part, start + kBucketNs - 1)) {
            index[off] = i;
          } else {
            raw->push_back(summary.hour * kBucketsPerSummary + off);
          }
        }
        if (raw->size() == static_cast<size_t>(kBucketsPerSummary)) return false;
        for (const StackSummary::Weight& w : summary.buckets) {
          if (index[w.key] < 0 || !selector.SelectsSet(w.attribute_set)) continue;
          part.weights[index[w.key]] += w.weight;
          part.events[index[w.key]] += w.events;
        }
        return true;
      },
      &parts);
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
