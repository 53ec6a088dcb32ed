// RocksStore::ForgetUnused: the dictionary forgets what no kept sample
// uses (storage/README.md, "Forgetting"; the remaps in store_internal.h).
//
//   1. From a snapshot, without the write lock: every kept block (its ids
//      translated to the current ones) and every summary marks the stacks,
//      attribute sets and links it uses. Writes meanwhile mark theirs
//      (ForgetWatch), and every id made after the snapshot is kept.
//   2. Under the write lock: frames, executables and strings used by what
//      is kept are marked too; the kept entries are renumbered in their old
//      order, and one RocksDB batch replaces the dictionary's keys, rewrites
//      the summaries in the new ids and stores the remaps (older ones
//      composed with this one). Then the new dictionary is swapped in.
//
// The summarizer is held off for the whole pass (summarize_mutex_): a
// summary built from the snapshot's blocks would be in the old ids.
#include <algorithm>
#include <chrono>
#include <limits>
#include <memory>

#include "absl/strings/str_format.h"
#include "storage/release_memory.h"
#include "storage/store_internal.h"

namespace kiln::storage::store_internal {

namespace {

constexpr uint32_t kGone = UINT32_MAX;

// Old id -> new id for the marked entries, in their old order; unmarked
// ones map to kGone. Entry 0 (the empty one) is always kept as 0.
std::vector<uint32_t> Renumber(std::vector<uint8_t>* marks) {
  std::vector<uint32_t> map(marks->size(), kGone);
  uint32_t next = 0;
  if (!marks->empty()) (*marks)[0] = 1;
  for (size_t i = 0; i < marks->size(); ++i) {
    if ((*marks)[i]) map[i] = next++;
  }
  return map;
}

uint32_t Kept(const std::vector<uint32_t>& map, uint32_t id) {
  return id < map.size() && map[id] != kGone ? map[id] : 0;
}

void MarkSummary(const StackSummary& s, std::vector<uint8_t>* stacks, std::vector<uint8_t>* sets) {
  auto mark = [](std::vector<uint8_t>* v, uint32_t id) {
    if (id < v->size()) (*v)[id] = 1;
  };
  for (const StackSummary::Set& set : s.sets) mark(sets, set.attribute_set);
  for (const StackSummary::Weight& w : s.stacks) {
    mark(sets, w.attribute_set);
    mark(stacks, w.key);
  }
  for (const StackSummary::Weight& w : s.buckets) mark(sets, w.attribute_set);
}

// A summary in the new ids: renumbering keeps the old order of ids, but a
// forgotten-then-zero id could still reorder; sorting again is cheap.
void RenumberSummary(StackSummary* s, const std::vector<uint32_t>& stacks, const std::vector<uint32_t>& sets) {
  for (StackSummary::Set& set : s->sets) set.attribute_set = Kept(sets, set.attribute_set);
  for (StackSummary::Weight& w : s->stacks) {
    w.attribute_set = Kept(sets, w.attribute_set);
    w.key = Kept(stacks, w.key);
  }
  for (StackSummary::Weight& w : s->buckets) w.attribute_set = Kept(sets, w.attribute_set);
  std::sort(s->sets.begin(), s->sets.end(),
            [](const StackSummary::Set& a, const StackSummary::Set& b) { return a.attribute_set < b.attribute_set; });
  auto by_set_key = [](const StackSummary::Weight& a, const StackSummary::Weight& b) {
    return a.attribute_set != b.attribute_set ? a.attribute_set < b.attribute_set : a.key < b.key;
  };
  std::sort(s->stacks.begin(), s->stacks.end(), by_set_key);
  std::sort(s->buckets.begin(), s->buckets.end(), by_set_key);
}

std::string RemapKey(uint64_t before_seq) {
  std::string key = kRemapKeyPrefix;
  PutBigEndian64(&key, before_seq);
  return key;
}

}  // namespace

absl::StatusOr<ForgetReport> RocksStore::ForgetUnused() {
  ForgetReport report;
  if (read_only_) return report;
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  auto since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  std::lock_guard pass(summarize_mutex_);
  dictionary_.PassStarted();

  // --- 1. What kept samples use, from a snapshot ----------------------------
  const rocksdb::Snapshot* snapshot = nullptr;
  std::shared_ptr<const IdRemaps> remaps;
  std::vector<uint8_t> live_stacks, live_sets, live_links;
  {
    std::lock_guard write_lock(write_mutex_);
    const DictionaryPart::Reader read = dictionary_.Read();
    snapshot = db_->GetSnapshot();
    remaps = read.remaps();
    live_stacks.assign(read.dict().StackCount(), 0);
    live_sets.assign(read.dict().AttributeSetCount(), 0);
    live_links.assign(read.dict().links.size(), 0);
    dictionary_.watch() = DictionaryPart::Watch{.active = true, .stacks = live_stacks,
                                                .attribute_sets = live_sets, .links = live_links};
  }
  absl::Status counted;
  uint64_t min_seq = std::numeric_limits<uint64_t>::max();
  {
    rocksdb::ReadOptions ro;
    ro.snapshot = snapshot;
    ro.fill_cache = false;  // background passes read each block once: leave the cache to queries
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, blocks_cf()));
    std::vector<BlockSample> samples;
    for (it->SeekToFirst(); it->Valid() && counted.ok() && !stopping_; it->Next()) {
      if (it->key().size() != kBlockKeySize) continue;
      const uint64_t seq = KeySeq(it->key().data());
      min_seq = std::min(min_seq, seq);
      counted = DecodeSampleBlock(std::string_view(it->value().data(), it->value().size()), &samples);
      remaps->Translate(seq, &samples);
      for (const BlockSample& s : samples) {
        if (s.stack < live_stacks.size()) live_stacks[s.stack] = 1;
        if (s.attribute_set < live_sets.size()) live_sets[s.attribute_set] = 1;
        if (s.link < live_links.size()) live_links[s.link] = 1;
      }
    }
    if (counted.ok()) counted = FromRocks(it->status(), "forgetting: reading sample blocks");
    if (counted.ok() && summaries_cf() != nullptr) {
      std::unique_ptr<rocksdb::Iterator> sit(db_->NewIterator(ro, summaries_cf()));
      StackSummary summary;
      for (sit->SeekToFirst(); sit->Valid() && counted.ok(); sit->Next()) {
        if (sit->key().size() != kSummaryKeySize) continue;
        counted = DecodeStackSummary(std::string_view(sit->value().data(), sit->value().size()),
                                     KeyBucket(sit->key().data()), &summary);
        MarkSummary(summary, &live_stacks, &live_sets);
      }
      if (counted.ok()) counted = FromRocks(sit->status(), "forgetting: reading summaries");
    }
  }
  db_->ReleaseSnapshot(snapshot);
  if (stopping_ && counted.ok()) counted = absl::CancelledError("the store is closing");

  TestStep("forgetting: counted");

  // --- 2. Renumber and swap, under the write lock ----------------------------
  std::unique_lock write_lock(write_mutex_);
  const Clock::time_point locked = Clock::now();
  const DictionaryPart::Watch watch = std::move(dictionary_.watch());
  dictionary_.watch() = DictionaryPart::Watch{};
  if (!counted.ok()) return counted;
  for (size_t i = 0; i < watch.stacks.size(); ++i) live_stacks[i] |= watch.stacks[i];
  for (size_t i = 0; i < watch.attribute_sets.size(); ++i) live_sets[i] |= watch.attribute_sets[i];
  for (size_t i = 0; i < watch.links.size(); ++i) live_links[i] |= watch.links[i];
  // Only writers change the dictionary, and this pass is one now: what
  // follows reads it without its lock until the swap.
  GlobalDictionary& current = dictionary_.ForWriter();
  const ProfileDictionary& d = current.dict;
  // Entries made since the snapshot are all kept.
  live_stacks.resize(d.StackCount(), 1);
  live_sets.resize(d.AttributeSetCount(), 1);
  live_links.resize(d.links.size(), 1);
  std::vector<uint8_t> live_frames(d.frames.size(), 0), live_execs(d.executables.size(), 0),
      live_strings(d.strings.size(), 0);
  live_stacks[0] = live_sets[0] = live_links[0] = 1;
  for (uint32_t s = 0; s < d.StackCount(); ++s) {
    if (!live_stacks[s]) continue;
    for (uint32_t f : d.Stack(s)) live_frames[f] = 1;
  }
  live_frames[0] = 1;
  for (size_t f = 0; f < d.frames.size(); ++f) {
    if (!live_frames[f]) continue;
    const Frame& frame = d.frames[f];
    live_execs[frame.executable] = 1;
    live_strings[frame.function] = live_strings[frame.file] = 1;
  }
  live_execs[0] = 1;
  for (size_t e = 0; e < d.executables.size(); ++e) {
    if (!live_execs[e]) continue;
    const Executable& x = d.executables[e];
    live_strings[x.file_name] = live_strings[x.htlhash] = live_strings[x.gnu_build_id] =
        live_strings[x.go_build_id] = 1;
  }
  for (uint32_t a = 0; a < d.AttributeSetCount(); ++a) {
    if (!live_sets[a]) continue;
    for (const Attribute& attr : d.AttributeSet(a)) live_strings[attr.key] = live_strings[attr.value] = 1;
  }
  report.entries_before = dictionary_.EntriesForWriter();
  report.stacks_before = d.StackCount() - 1;
  report.attribute_sets_before = d.AttributeSetCount() - 1;
  const std::vector<uint32_t> string_map = Renumber(&live_strings), exec_map = Renumber(&live_execs),
                              frame_map = Renumber(&live_frames), stack_map = Renumber(&live_stacks),
                              set_map = Renumber(&live_sets), link_map = Renumber(&live_links);
  auto count = [](const std::vector<uint8_t>& v) {
    return static_cast<uint64_t>(std::count(v.begin(), v.end(), uint8_t{1}));
  };
  report.entries_after = count(live_strings) + count(live_execs) + count(live_frames) + count(live_stacks) +
                         count(live_sets) + count(live_links);
  report.stacks_after = count(live_stacks) - 1;
  report.attribute_sets_after = count(live_sets) - 1;
  if (report.entries_after == report.entries_before) {
    dictionary_.PassEnded(report.entries_before, report.entries_after);
    return report;  // everything is used
  }

  // The old write indexes are half the dictionary's memory and only Write()
  // uses them, which waits for this pass: freed while the new dictionary
  // is built, and built again from the tables if the pass fails.
  current.DropWriteIndexes();
  struct RestoreIndexes {
    GlobalDictionary* dict;
    bool done = false;
    ~RestoreIndexes() {
      if (!done) dict->RebuildWriteIndexes();
    }
  } restore{&current};

  // One batch: the forgotten entries' keys deleted (kept ones keep their
  // disk ids and values), or, once disk ids near their end, every key
  // written again with disk ids equal to the new ids.
  auto batch = std::make_unique<rocksdb::WriteBatch>();
  rocksdb::WriteBatch& wb = *batch;
  const GlobalDictionary::DiskIds& od = current.disk;
  const bool rewrite = std::max({od.strings.back(), od.executables.back(), od.frames.back(), od.stacks.back(),
                                 od.attribute_sets.back(), od.links.back()}) >= options_.forget_rewrite_at_disk_id;
  report.rewrote = rewrite;
  // Per table, the key span from the first forgotten entry to the end of
  // the last: what the compaction below needs to rewrite.
  std::vector<std::pair<std::string, std::string>> forgotten_spans;
  if (rewrite) {
    for (char tag : {kTagString, kTagExecutable, kTagFrame, kTagStack, kTagAttributeSet, kTagLink}) {
      wb.DeleteRange(meta_cf(), std::string(1, tag), std::string(1, static_cast<char>(tag + 1)));
    }
  } else {
    // A run of forgotten entries is a run of keys (no kept key between).
    auto forget = [&](char tag, const std::vector<uint8_t>& live, const std::vector<uint32_t>& disk) {
      for (size_t i = 1; i < live.size();) {
        if (live[i]) {
          ++i;
          continue;
        }
        size_t end = i;
        while (end < live.size() && !live[end]) ++end;
        const uint32_t last = disk[end - 1];
        std::string from = DictKey(tag, disk[i]);
        std::string to = last == UINT32_MAX ? std::string(1, static_cast<char>(tag + 1)) : DictKey(tag, last + 1);
        wb.DeleteRange(meta_cf(), from, to);
        if (forgotten_spans.empty() || forgotten_spans.back().first[0] != tag) {
          forgotten_spans.emplace_back(std::move(from), std::move(to));
        } else {
          forgotten_spans.back().second = std::move(to);
        }
        i = end;
      }
    };
    forget(kTagString, live_strings, od.strings);
    forget(kTagExecutable, live_execs, od.executables);
    forget(kTagFrame, live_frames, od.frames);
    forget(kTagStack, live_stacks, od.stacks);
    forget(kTagAttributeSet, live_sets, od.attribute_sets);
    forget(kTagLink, live_links, od.links);
  }
  // `put` writes an entry again (rewrite only) and returns its disk id.
  auto put = [&](char tag, uint32_t old_disk_id, uint32_t id, auto&& value) {
    if (!rewrite) return old_disk_id;
    wb.Put(meta_cf(), DictKey(tag, id), value());
    return id;
  };
  // Only the tables (and the value counts) are built here: ReplaceWith
  // builds the indexes over them once they are in their home.
  GlobalDictionary nd;
  ProfileDictionary& n = nd.dict;
  n.sample_types = d.sample_types;  // few, never forgotten: their ids are in block keys
  for (size_t i = 1; i < d.strings.size(); ++i) {
    if (!live_strings[i]) continue;
    const uint32_t id = static_cast<uint32_t>(n.strings.size());
    n.strings.push_back(d.strings[i]);
    nd.disk.strings.push_back(put(kTagString, od.strings[i], id, [&] { return n.strings.back(); }));
  }
  for (size_t i = 1; i < d.executables.size(); ++i) {
    if (!live_execs[i]) continue;
    const Executable& o = d.executables[i];
    const Executable e{.file_name = string_map[o.file_name], .htlhash = string_map[o.htlhash],
                       .gnu_build_id = string_map[o.gnu_build_id], .go_build_id = string_map[o.go_build_id]};
    const uint32_t id = static_cast<uint32_t>(n.executables.size());
    n.executables.push_back(e);
    nd.disk.executables.push_back(put(kTagExecutable, od.executables[i], id, [&] { return EncodeExecutable(e); }));
  }
  for (size_t i = 1; i < d.frames.size(); ++i) {
    if (!live_frames[i]) continue;
    Frame f = d.frames[i];
    f.function = string_map[f.function];
    f.file = string_map[f.file];
    f.executable = exec_map[f.executable];
    const uint32_t id = static_cast<uint32_t>(n.frames.size());
    n.frames.push_back(f);
    nd.disk.frames.push_back(put(kTagFrame, od.frames[i], id, [&] { return EncodeFrame(f); }));
  }
  std::vector<uint32_t> ids;
  for (uint32_t s = 1; s < d.StackCount(); ++s) {
    if (!live_stacks[s]) continue;
    ids.clear();
    for (uint32_t f : d.Stack(s)) ids.push_back(frame_map[f]);
    const uint32_t id = static_cast<uint32_t>(n.StackCount());
    n.stack_frames.insert(n.stack_frames.end(), ids.begin(), ids.end());
    n.stack_offsets.push_back(static_cast<uint32_t>(n.stack_frames.size()));
    nd.disk.stacks.push_back(
        put(kTagStack, od.stacks[s], id, [&] { return EncodeIds(ids.data(), ids.data() + ids.size()); }));
  }
  std::vector<Attribute> attrs;
  for (uint32_t a = 1; a < d.AttributeSetCount(); ++a) {
    if (!live_sets[a]) continue;
    attrs.clear();
    // The new dictionary has no string index yet: its sender by the old ids.
    GlobalDictionary::SetSender sender = current.SenderOf(d.AttributeSet(a));
    if (sender.key != GlobalDictionary::kNoSender) sender.key = string_map[sender.key];
    if (sender.value != GlobalDictionary::kNoSender) sender.value = string_map[sender.value];
    // Keys stay in id order: renumbering keeps the strings' old order.
    for (const Attribute& o : d.AttributeSet(a)) {
      attrs.push_back({string_map[o.key], string_map[o.value]});
      nd.NoteValue(attrs.back().key, attrs.back().value, sender);  // n.strings holds it already
    }
    const uint32_t id = static_cast<uint32_t>(n.AttributeSetCount());
    n.attributes.insert(n.attributes.end(), attrs.begin(), attrs.end());
    n.attribute_set_offsets.push_back(static_cast<uint32_t>(n.attributes.size()));
    nd.disk.attribute_sets.push_back(put(kTagAttributeSet, od.attribute_sets[a], id, [&] {
      return EncodeAttributes(attrs.data(), attrs.data() + attrs.size());
    }));
  }
  for (size_t i = 1; i < d.links.size(); ++i) {
    if (!live_links[i]) continue;
    const uint32_t id = static_cast<uint32_t>(n.links.size());
    n.links.push_back(d.links[i]);
    nd.disk.links.push_back(put(kTagLink, od.links[i], id, [&] { return EncodeLink(d.links[i]); }));
  }

  // The remaps: older generations that still have blocks, composed with
  // this pass's map, and this pass's for every block written so far.
  auto composed = std::make_shared<IdRemaps>();
  auto compose = [](const std::vector<uint32_t>& older, const std::vector<uint32_t>& now) {
    std::vector<uint32_t> out(older.size());
    for (size_t i = 0; i < older.size(); ++i) out[i] = Kept(now, older[i]);
    return out;
  };
  for (const IdRemap& g : dictionary_.RemapsForWriter()->generations) {
    if (g.before_seq <= min_seq) continue;  // retention deleted all its blocks
    composed->generations.push_back({g.before_seq, compose(g.stacks, stack_map),
                                     compose(g.attribute_sets, set_map), compose(g.links, link_map)});
  }
  IdRemap now{.before_seq = samples_.Get().next_block_seq};
  for (auto [map, out] : {std::pair{&stack_map, &now.stacks}, {&set_map, &now.attribute_sets},
                          {&link_map, &now.links}}) {
    out->resize(map->size());
    for (size_t i = 0; i < map->size(); ++i) (*out)[i] = (*map)[i] == kGone ? 0 : (*map)[i];
  }
  composed->generations.push_back(std::move(now));
  const std::vector<std::string> symbol_keys = symbols_->ForgetRecords(LiveSymbolKeys(n), &wb);
  report.symbol_keys_forgotten = symbol_keys.size();
  const std::string prefix = kRemapKeyPrefix;
  std::string end = prefix;
  end.back() = static_cast<char>(end.back() + 1);
  wb.DeleteRange(meta_cf(), prefix, end);
  for (const IdRemap& g : composed->generations) wb.Put(meta_cf(), RemapKey(g.before_seq), g.Encode());

  // Summaries, as they are now (retention may have deleted some since the
  // snapshot; none was built), in the new ids.
  if (summaries_cf() != nullptr) {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), summaries_cf()));
    StackSummary summary;
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      if (it->key().size() != kSummaryKeySize) continue;
      if (!DecodeStackSummary(std::string_view(it->value().data(), it->value().size()),
                              KeyBucket(it->key().data()), &summary)
               .ok()) {
        wb.Delete(summaries_cf(), it->key());  // damaged: its hour's samples answer instead
        continue;
      }
      RenumberSummary(&summary, stack_map, set_map);
      wb.Put(summaries_cf(), it->key(), EncodeStackSummary(summary));
    }
    if (!it->status().ok()) return FromRocks(it->status(), "forgetting: rewriting summaries");
  }
  if (rocksdb::Status s = db_->Write(rocksdb::WriteOptions(), &wb); !s.ok()) {
    if (disk_) disk_->NoteWriteError(s.ToString());
    return FromRocks(s, "forgetting: writing the new dictionary");
  }
  TestStep("forgetting: written");
  const uint64_t written = wb.GetDataSize();
  batch.reset();
  dictionary_.Replace(std::move(nd), std::move(composed));
  symbols_->Forget(symbol_keys);
  restore.done = true;
  write_lock.unlock();
  report.write_lock_seconds = since(locked);
  report.ran = true;
  dictionary_.PassEnded(report.entries_before, report.entries_after);
  NoteWrite(written);
  // The deleted keys' space returns at the next compaction of the family;
  // ask for it now, as retention does for its blocks.
  rocksdb::CompactRangeOptions co;
  co.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  // Only the spans that forgot something: in small tables over several
  // levels (DictionaryLayout) the newest entries, which are kept, are not
  // rewritten. (In one large table, as before that layout, compacting
  // spans rewrote as much as compacting the whole family.)
  if (rewrite) {
    (void)db_->CompactRange(co, meta_cf(), nullptr, nullptr);
  } else {
    for (const auto& [from, to] : forgotten_spans) {
      const rocksdb::Slice b(from), e(to);
      (void)db_->CompactRange(co, meta_cf(), &b, &e);
    }
  }
  if (!symbol_keys.empty()) (void)db_->CompactRange(co, symbols_cf(), nullptr, nullptr);
  TestStep("forgetting: compacted");
  // The old dictionary's memory is free: kiln's size should follow what it holds.
  ReleaseFreedMemory();
  report.seconds = since(start);
  (void)AppendLog(LogLevel::kInfo,
                  absl::StrCat("dictionary: forgot ", report.entries_before - report.entries_after, " of ",
                               report.entries_before, " entries no kept sample uses (stacks ",
                               report.stacks_before, " -> ", report.stacks_after, ", attribute sets ",
                               report.attribute_sets_before, " -> ", report.attribute_sets_after, ")",
                               report.symbol_keys_forgotten == 0
                                   ? ""
                                   : absl::StrCat(" and the symbols of ", report.symbol_keys_forgotten,
                                                  " executable keys"),
                               " in ",
                               absl::StrFormat("%.1f", report.seconds), " s, writes held ",
                               absl::StrFormat("%.1f", report.write_lock_seconds), " s",
                               report.rewrote ? " (every kept entry written again under new disk ids)" : ""));
  return report;
}

}  // namespace kiln::storage::store_internal
