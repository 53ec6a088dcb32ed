// RocksStore::Write: a batch interned into the global dictionary and its
// samples written as blocks, in one RocksDB batch.
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
// [SECTION] Write
// ============================================================================

namespace {

// Interns one batch into the global dictionary, queuing the new entries in
// `wb`, and remembers what it added so a failed write can be undone.
class BatchInterner {
 public:
  BatchInterner(GlobalDictionary* g, rocksdb::WriteBatch* wb, rocksdb::ColumnFamilyHandle* cf)
      : g_(*g), wb_(*wb), cf_(cf) {}

  absl::Status Intern(const ProfileDictionary& local) {
    const ProfileDictionary& l = local;
    ProfileDictionary& d = g_.dict;
    // Strings are interned when something kept refers to them: a value
    // the caps turn into "other" must not be held anyway (40,000 distinct
    // 16 KB values were all held, 610 MiB, though 4,195 were kept).
    local_ = &l;
    strings_.assign(l.strings.size(), kAbsent);

    executables_.resize(l.executables.size());
    for (size_t i = 0; i < l.executables.size(); ++i) {
      Executable e = l.executables[i];
      if (!MapString(&e.file_name) || !MapString(&e.htlhash) || !MapString(&e.gnu_build_id) ||
          !MapString(&e.go_build_id)) {
        return Bad("executable", i, "string index out of range");
      }
      auto [it, added] = g_.executable_ids.try_emplace(e, static_cast<uint32_t>(d.executables.size()));
      if (added) {
        d.executables.push_back(e);
        new_executables_.push_back(e);
        wb_.Put(cf_, DictKey(kTagExecutable, GlobalDictionary::NextDiskId(&g_.disk.executables)),
                EncodeExecutable(g_.OnDisk(e)));
      }
      executables_[i] = it->second;
    }

    frames_.resize(l.frames.size());
    for (size_t i = 0; i < l.frames.size(); ++i) {
      Frame f = l.frames[i];
      if (!MapString(&f.function) || !MapString(&f.file)) return Bad("frame", i, "string index out of range");
      if (f.executable >= executables_.size()) return Bad("frame", i, "executable index out of range");
      f.executable = executables_[f.executable];
      if (auto it = g_.frame_ids.find(f); it != g_.frame_ids.end()) {
        frames_[i] = *it;
        continue;
      }
      const auto id = static_cast<uint32_t>(d.frames.size());
      d.frames.push_back(f);
      g_.frame_ids.insert(id);
      wb_.Put(cf_, DictKey(kTagFrame, GlobalDictionary::NextDiskId(&g_.disk.frames)), EncodeFrame(g_.OnDisk(f)));
      frames_[i] = id;
    }

    if (l.stack_offsets.size() < 2 || l.stack_offsets.back() != l.stack_frames.size()) {
      return absl::InvalidArgumentError("batch stack table is malformed");
    }
    stacks_.resize(l.StackCount());
    std::vector<uint32_t> ids;
    std::string key;
    for (uint32_t i = 0; i < l.StackCount(); ++i) {
      if (l.stack_offsets[i] > l.stack_offsets[i + 1]) return Bad("stack", i, "offsets decrease");
      ids.clear();
      for (uint32_t f : l.Stack(i)) {
        if (f >= frames_.size()) return Bad("stack", i, "frame index out of range");
        ids.push_back(frames_[f]);
      }
      if (auto known = g_.stack_ids.find(StackSpan(ids)); known != g_.stack_ids.end()) {
        stacks_[i] = *known;
        continue;
      }
      const auto id = static_cast<uint32_t>(d.StackCount());
      d.stack_frames.insert(d.stack_frames.end(), ids.begin(), ids.end());
      d.stack_offsets.push_back(static_cast<uint32_t>(d.stack_frames.size()));
      g_.stack_ids.insert(id);  // hashed over the table, so after the push
      wb_.Put(cf_, DictKey(kTagStack, GlobalDictionary::NextDiskId(&g_.disk.stacks)),
              g_.StackOnDisk(StackSpan(ids)));
      stacks_[i] = id;
    }

    if (l.attribute_set_offsets.size() < 2 || l.attribute_set_offsets.back() != l.attributes.size()) {
      return absl::InvalidArgumentError("batch attribute set table is malformed");
    }
    attribute_sets_.resize(l.AttributeSetCount());
    std::vector<Attribute> attrs;
    std::vector<PendingAttribute> pending;
    for (uint32_t i = 0; i < l.AttributeSetCount(); ++i) {
      if (l.attribute_set_offsets[i] > l.attribute_set_offsets[i + 1]) {
        return Bad("attribute set", i, "offsets decrease");
      }
      // Looked up without interning: a set with a string never seen is new.
      pending.clear();
      bool seen = true;
      for (const Attribute& a : l.AttributeSet(i)) {
        if (a.key >= l.strings.size() || a.value >= l.strings.size()) {
          return Bad("attribute set", i, "string index out of range");
        }
        pending.push_back({{PeekString(a.key), PeekString(a.value)}, a.key, a.value});
        seen = seen && pending.back().global.key != kAbsent && pending.back().global.value != kAbsent;
      }
      // Global ids sort differently from the producer's strings; key order by
      // id keeps the encoding canonical so equal sets dedupe.
      auto by_key = [](const Attribute& a, const Attribute& b) { return a.key < b.key; };
      if (seen) {
        attrs.clear();
        for (const PendingAttribute& p : pending) attrs.push_back(p.global);
        std::sort(attrs.begin(), attrs.end(), by_key);
        if (auto known = g_.attribute_set_ids.find(AttributesSpan(attrs)); known != g_.attribute_set_ids.end()) {
          attribute_sets_[i] = *known;
          continue;
        }
      }
      // A new set. Past the cap on sets, every value becomes "other": the
      // combinations of real values (pid x thread x ...) grow without a
      // bound the per-key caps would see; the keys' combinations do not.
      const bool fold = d.AttributeSetCount() - 1 >= max_sets_;
      if (fold) ++capped_;
      const GlobalDictionary::SetSender sender = fold ? GlobalDictionary::SetSender{} : SenderOf(&pending);
      attrs.clear();
      for (const PendingAttribute& p : pending) {
        Attribute g = p.global;
        if (fold) g.value = InternString("other");
        if (ApplyCaps(&g, l.strings[p.key], fold ? std::string_view("other") : std::string_view(l.strings[p.value]),
                      sender)) {
          attrs.push_back(g);
        }
      }
      std::sort(attrs.begin(), attrs.end(), by_key);
      // Folding can make it equal to a known set.
      if (auto known = g_.attribute_set_ids.find(AttributesSpan(attrs)); known != g_.attribute_set_ids.end()) {
        attribute_sets_[i] = *known;
        continue;
      }
      const auto id = static_cast<uint32_t>(d.AttributeSetCount());
      d.attributes.insert(d.attributes.end(), attrs.begin(), attrs.end());
      d.attribute_set_offsets.push_back(static_cast<uint32_t>(d.attributes.size()));
      g_.attribute_set_ids.insert(id);
      wb_.Put(cf_, DictKey(kTagAttributeSet, GlobalDictionary::NextDiskId(&g_.disk.attribute_sets)),
              g_.AttributesOnDisk(AttributesSpan(attrs)));
      attribute_sets_[i] = id;
    }

    sample_types_.resize(l.sample_types.size());
    for (size_t i = 0; i < l.sample_types.size(); ++i) {
      // AddSampleType's rule (the newest period is the one shown); an
      // entry is written when it is new or its period changed.
      const size_t known = d.sample_types.size();
      const std::optional<uint32_t> old = d.SampleTypeIndex(l.sample_types[i].type);
      const SampleTypeInfo before = old ? d.sample_types[*old] : SampleTypeInfo{};
      const uint32_t id = d.AddSampleType(l.sample_types[i]);
      if (id == known || !(d.sample_types[id] == before)) {
        wb_.Put(cf_, DictKey(kTagSampleType, id), EncodeSampleType(d.sample_types[id]));
      }
      sample_types_[i] = id;
    }

    links_.resize(l.links.size());
    for (size_t i = 0; i < l.links.size(); ++i) {
      key = EncodeLink(l.links[i]);
      if (auto known = g_.link_ids.find(key); known != g_.link_ids.end()) {
        links_[i] = known->second;
        continue;
      }
      links_[i] = static_cast<uint32_t>(d.links.size());
      d.links.push_back(l.links[i]);
      g_.link_ids.emplace(key, links_[i]);
      wb_.Put(cf_, DictKey(kTagLink, GlobalDictionary::NextDiskId(&g_.disk.links)), key);
    }
    return absl::OkStatus();
  }

  // Removes everything Intern() added (after a failed RocksDB write).
  void Undo(const GlobalDictionary::Mark& mark) {
    ProfileDictionary& d = g_.dict;
    for (auto [key, value, sender] : new_key_values_) {
      auto it = g_.values_by_key.find(key);
      if (it == g_.values_by_key.end()) continue;
      if (it->second.erase(value) > 0) {
        g_.value_bytes_by_key[key] -= g_.dict.strings[value].size();
        if (sender != kAbsent) g_.value_bytes_by_sender[sender] -= g_.dict.strings[value].size();
      }
      if (it->second.empty()) g_.values_by_key.erase(it);
    }
    for (size_t i = mark.strings; i < d.strings.size(); ++i) g_.string_ids.erase(static_cast<uint32_t>(i));
    for (const Executable& e : new_executables_) g_.executable_ids.erase(e);
    for (size_t i = mark.frames; i < d.frames.size(); ++i) g_.frame_ids.erase(static_cast<uint32_t>(i));
    // By id, before the tables shrink: the id-keyed sets hash over them.
    for (size_t i = mark.stacks - 1; i < d.StackCount(); ++i) g_.stack_ids.erase(static_cast<uint32_t>(i));
    for (size_t i = mark.attribute_sets - 1; i < d.AttributeSetCount(); ++i) {
      g_.attribute_set_ids.erase(static_cast<uint32_t>(i));
    }
    for (size_t i = mark.links; i < d.links.size(); ++i) g_.link_ids.erase(EncodeLink(d.links[i]));
    for (size_t i = mark.strings; i < d.strings.size(); ++i) g_.string_heap_bytes -= GlobalDictionary::HeapBytes(d.strings[i]);
    d.strings.resize(mark.strings);
    g_.disk.strings.resize(mark.strings);
    g_.disk.executables.resize(mark.executables);
    g_.disk.frames.resize(mark.frames);
    g_.disk.stacks.resize(mark.stacks - 1);
    g_.disk.attribute_sets.resize(mark.attribute_sets - 1);
    g_.disk.links.resize(mark.links);
    d.executables.resize(mark.executables);
    d.frames.resize(mark.frames);
    d.stack_offsets.resize(mark.stacks);
    d.stack_frames.resize(mark.stack_frames);
    d.attribute_set_offsets.resize(mark.attribute_sets);
    d.attributes.resize(mark.attributes);
    d.links.resize(mark.links);
    d.sample_types = mark.sample_types;
  }

  // Attribute values folded, keys left out and sets folded by the caps in
  // this batch.
  uint64_t capped_ = 0;
  size_t max_values_per_key_ = SIZE_MAX, max_keys_ = SIZE_MAX, max_sets_ = SIZE_MAX;
  uint64_t max_value_bytes_per_key_ = UINT64_MAX, max_value_bytes_per_sender_ = UINT64_MAX;

  // Batch-local to global id maps, valid after Intern().
  std::vector<uint32_t> strings_, executables_, frames_, stacks_, attribute_sets_, links_, sample_types_;

 private:
  // The cardinality caps (StoreOptions) on one attribute whose key and
  // value are global ids or kAbsent (then `key` and `value` are interned
  // if they are kept), in a set `sender` sent: false to leave it out; its
  // value may become "other".
  bool ApplyCaps(Attribute* a, std::string_view key, std::string_view value, GlobalDictionary::SetSender sender) {
    auto it = a->key == kAbsent ? g_.values_by_key.end() : g_.values_by_key.find(a->key);
    if (it == g_.values_by_key.end()) {
      if (g_.values_by_key.size() >= max_keys_) {
        ++capped_;
        return false;
      }
      if (a->key == kAbsent) a->key = InternString(key);
      it = g_.values_by_key.try_emplace(a->key).first;
    }
    if (a->value != kAbsent && it->second.contains(a->value)) return true;
    // A key's distinct values are bounded in number and in bytes (a sender
    // inventing 16 KiB values would otherwise hold memory at will), and a
    // sender's in bytes (so it cannot spread them over keys either).
    uint64_t& bytes = g_.value_bytes_by_key[a->key];
    const uint32_t payer = a->key == sender.key ? kAbsent : sender.value;
    uint64_t* sender_bytes = payer == kAbsent ? nullptr : &g_.value_bytes_by_sender[payer];
    if (it->second.size() >= max_values_per_key_ || bytes + value.size() > max_value_bytes_per_key_ ||
        (sender_bytes != nullptr && *sender_bytes + value.size() > max_value_bytes_per_sender_)) {
      ++capped_;
      a->value = InternString("other");
      if (it->second.contains(a->value)) return true;
    } else if (a->value == kAbsent) {
      a->value = InternString(value);
    }
    it->second.insert(a->value);
    bytes += g_.dict.strings[a->value].size();
    if (sender_bytes != nullptr) *sender_bytes += g_.dict.strings[a->value].size();
    new_key_values_.push_back({a->key, a->value, payer});
    return true;
  }
  struct NewValue {
    uint32_t key, value, sender;
  };
  std::vector<NewValue> new_key_values_;  // for Undo

  uint32_t InternString(std::string_view s) {
    auto it = g_.string_ids.find(s);
    if (it != g_.string_ids.end()) return *it;
    auto id = static_cast<uint32_t>(g_.dict.strings.size());
    g_.dict.strings.emplace_back(s);
    g_.string_heap_bytes += GlobalDictionary::HeapBytes(g_.dict.strings.back());
    g_.string_ids.insert(id);
    wb_.Put(cf_, DictKey(kTagString, GlobalDictionary::NextDiskId(&g_.disk.strings)), s);
    return id;
  }
  // The global id of batch string `index`, interning it.
  bool MapString(uint32_t* index) {
    if (*index >= strings_.size()) return false;
    if (strings_[*index] == kAbsent) strings_[*index] = InternString(local_->strings[*index]);
    *index = strings_[*index];
    return true;
  }
  // The global id of batch string `index` if it has one, else kAbsent.
  uint32_t PeekString(uint32_t index) {
    if (strings_[index] != kAbsent) return strings_[index];
    auto it = g_.string_ids.find(std::string_view(local_->strings[index]));
    return it == g_.string_ids.end() ? kAbsent : (strings_[index] = *it);
  }
  static absl::Status Bad(std::string_view table, size_t i, std::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch ", std::string(table), " ", i, ": ", std::string(what)));
  }

  static constexpr uint32_t kAbsent = UINT32_MAX;  // not (yet) in the global dictionary
  struct PendingAttribute {
    Attribute global;  // ids, or kAbsent
    uint32_t key, value;  // batch string indexes
  };
  // The sender of a new set (GlobalDictionary::value_bytes_by_sender): its
  // kiln.sender key and value, interned first so the set's other values
  // count against it.
  GlobalDictionary::SetSender SenderOf(std::vector<PendingAttribute>* pending) {
    for (PendingAttribute& p : *pending) {
      if (local_->strings[p.key] != attr::kKilnSender) continue;
      if (p.global.key == kAbsent) p.global.key = InternString(attr::kKilnSender);
      if (p.global.value == kAbsent) p.global.value = InternString(local_->strings[p.value]);
      return {p.global.key, p.global.value};
    }
    return {};
  }
  const ProfileDictionary* local_ = nullptr;
  GlobalDictionary& g_;
  rocksdb::WriteBatch& wb_;
  rocksdb::ColumnFamilyHandle* cf_;
  std::vector<Executable> new_executables_;
};

}  // namespace

absl::Status RocksStore::WriteImpl(const ProfileBatch& batch, std::string_view request,
                                   const std::vector<std::string>* destinations) {
  if (read_only_) return absl::FailedPreconditionError("store is open read-only");
  // About what a sample costs in the WAL, to re-read the free space sooner
  // while big batches arrive.
  const uint64_t forwarded = destinations != nullptr ? request.size() * destinations->size() : 0;
  if (absl::Status admitted = AdmitWrite(batch.samples.size() * 8 + forwarded); !admitted.ok()) return admitted;
  std::lock_guard write_lock(write_mutex_);
  const ProfileDictionary& l = batch.dict;
  // Check the samples before touching anything shared.
  for (size_t i = 0; i < batch.samples.size(); ++i) {
    const Sample& s = batch.samples[i];
    if (s.stack >= l.StackCount() || s.attribute_set >= l.AttributeSetCount() || s.link >= l.links.size() ||
        s.sample_type >= l.sample_types.size()) {
      return absl::InvalidArgumentError(absl::StrCat("batch sample ", i, " has an index out of range"));
    }
  }

  rocksdb::WriteBatch wb;
  // Queries hold the dictionary's lock shared while they pin a RocksDB
  // snapshot and read the dictionary, so holding it here across the RocksDB
  // write means a query never sees a block whose ids are not yet in memory.
  std::unique_lock publishing = dictionary_.Publishing();
  GlobalDictionary& dict = dictionary_.ForWriter();
  GlobalDictionary::Mark mark = dict.Snapshot();
  BatchInterner interner(&dict, &wb, meta_cf());
  interner.max_values_per_key_ = options_.max_values_per_attribute_key;
  interner.max_keys_ = options_.max_attribute_keys;
  interner.max_sets_ = options_.max_attribute_sets;
  interner.max_value_bytes_per_key_ = options_.max_attribute_value_bytes_per_key;
  interner.max_value_bytes_per_sender_ = options_.max_attribute_value_bytes_per_sender;
  if (auto s = interner.Intern(l); !s.ok()) {
    interner.Undo(mark);
    return s;
  }

  // Group samples by (sample type, bucket) and sort each group by time.
  struct Keyed {
    uint32_t sample_type;
    int64_t bucket;
    BlockSample sample;
    uint32_t index;  // in batch.samples: the span index reads the batch's own ids
  };
  std::vector<Keyed> keyed;
  keyed.reserve(batch.samples.size());
  for (const Sample& s : batch.samples) {
    keyed.push_back(
        {interner.sample_types_[s.sample_type], BucketOf(s.time_ns),
         BlockSample{s.time_ns, interner.stacks_[s.stack], interner.attribute_sets_[s.attribute_set],
                     interner.links_[s.link], s.value},
         static_cast<uint32_t>(keyed.size())});
    // A forgetting pass is counting from a snapshot: these ids are in use.
    if (dictionary_.watch().active) dictionary_.watch().Note(keyed.back().sample);
  }
  std::sort(keyed.begin(), keyed.end(), [](const Keyed& a, const Keyed& b) {
    if (a.sample_type != b.sample_type) return a.sample_type < b.sample_type;
    return a.bucket < b.bucket;  // EncodeSampleBlock orders each block itself
  });
  Counters counters = samples_.Get();
  std::vector<BlockSample> run;
  std::vector<std::pair<std::string, std::vector<uint32_t>>> span_runs;  // block key, batch samples
  for (size_t i = 0; i < keyed.size();) {
    size_t j = i;
    run.clear();
    while (j < keyed.size() && keyed[j].sample_type == keyed[i].sample_type &&
           keyed[j].bucket == keyed[i].bucket && run.size() < kMaxBlockSamples) {
      run.push_back(keyed[j].sample);
      ++j;
    }
    // The hour's summary no longer holds all of it.
    InvalidateSummaries(keyed[i].sample_type, FloorDiv(keyed[i].bucket, kBucketsPerSummary),
                        FloorDiv(keyed[i].bucket, kBucketsPerSummary), &wb);
    std::string key = BlockKeyPrefix(keyed[i].sample_type, keyed[i].bucket);
    PutBigEndian64(&key, counters.next_block_seq++);
    wb.Put(blocks_cf(), key, EncodeSampleBlock(run));
    if (spans_cf() != nullptr) {
      std::vector<uint32_t> members;
      members.reserve(j - i);
      for (size_t k = i; k < j; ++k) members.push_back(keyed[k].index);
      span_runs.emplace_back(key, std::move(members));
    }
    counters.blocks++;
    counters.Add(keyed[i].sample_type, run.size());
    int64_t first = run.front().time_ns, last = run.front().time_ns;
    for (const BlockSample& b : run) {
      first = std::min(first, b.time_ns);
      last = std::max(last, b.time_ns);
    }
    retention_.watch.Note(keyed[i].bucket, first);
    if (counters.samples() == run.size() || first < counters.first_sample_ns)
      counters.first_sample_ns = first;
    if (counters.samples() == run.size() || last > counters.last_sample_ns) counters.last_sample_ns = last;
    i = j;
  }
  IndexSpans(batch, span_runs, &wb);
  wb.Put(meta_cf(), kStatsKey, counters.Encode());
  // The request owed to each destination, in the same write: acknowledged
  // to its sender means stored and owed.
  ForwardPart::Pending forward_pending;
  if (destinations != nullptr && !destinations->empty()) {
    if (absl::Status s = forward_->Append(*destinations, request, UnixNowNs(), &wb, &forward_pending); !s.ok()) {
      interner.Undo(mark);
      return s;
    }
  }

  // sync=false: the WAL write reaches the OS before Write() returns, which
  // survives a crash (even kill -9) of this process; only a power loss or
  // kernel crash could lose the last writes.
  rocksdb::WriteOptions wo;
  rocksdb::Status s = db_->Write(wo, &wb);
  if (!s.ok()) {
    interner.Undo(mark);
    if (disk_) disk_->NoteWriteError(s.ToString());
    return FromRocks(s, "writing samples");
  }
  samples_.Publish(counters);
  forward_->Publish(forward_pending);
  NoteWrite(wb.GetDataSize());
  if (interner.capped_ > 0) {
    DataLossCounts capped{};
    capped[static_cast<size_t>(DataLoss::kAttributeCapped)] = interner.capped_;
    (void)AddDataLoss(capped);
  }
  if (!forward_pending.empty()) {
    // A destination down for long owes more than the bound: its oldest go.
    absl::StatusOr<uint64_t> dropped = forward_->Bound(options_.max_forward_bytes);
    if (dropped.ok() && *dropped > 0) {
      DataLossCounts lost{};
      lost[static_cast<size_t>(DataLoss::kForwardDropped)] = *dropped;
      (void)AddDataLoss(lost);
    }
  }
  return absl::OkStatus();
}

}  // namespace kiln::storage::store_internal
