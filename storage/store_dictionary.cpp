// The store's dictionary part (DictionaryPart: loading it, what it holds
// in memory, the swap a forgetting pass publishes) and the blocks'
// counters (SamplesPart). store_internal.h says who may touch what.
#include <algorithm>

#include "storage/store_internal.h"

namespace kiln::storage::store_internal {

absl::Status DictionaryPart::Load(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* meta) {
  if (auto st = LoadRemaps(db, meta); !st.ok()) return st;
  if (auto st = LoadTables(db, meta); !st.ok()) return st;
  entries_after_pass_ = Entries();
  return absl::OkStatus();
}

absl::Status DictionaryPart::LoadRemaps(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* meta) {
  auto remaps = std::make_shared<IdRemaps>();
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions(), meta));
  const std::string prefix = kRemapKeyPrefix;
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    if (it->key().size() != prefix.size() + 8) return absl::DataLossError("store: a remap key is corrupt");
    IdRemap r;
    r.before_seq = GetBigEndian64(it->key().data() + prefix.size());
    if (!r.Decode(std::string_view(it->value().data(), it->value().size()))) {
      return absl::DataLossError(absl::StrCat("store: the remap of blocks before ", r.before_seq, " is corrupt"));
    }
    remaps->generations.push_back(std::move(r));
  }
  if (!it->status().ok()) return FromRocks(it->status(), "loading remaps");
  remaps_ = std::move(remaps);
  return absl::OkStatus();
}

absl::Status DictionaryPart::LoadTables(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* meta) {
  GlobalDictionary& g = dict_;
  ProfileDictionary& d = g.dict;
  GlobalDictionary::DiskIds& disk = g.disk;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions(), meta));
  // Keys load in disk-id order, which is the entries' order: each gets the
  // next id. References are read as disk ids and translated once every
  // table is loaded (the strings' keys sort last).
  auto next = [](std::vector<uint32_t>* ids, uint32_t disk_id) {
    if (disk_id == 0) return false;  // entry 0 is never on disk
    ids->push_back(disk_id);         // ascending: RocksDB's key order
    return true;
  };
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    rocksdb::Slice key = it->key();
    if (key.size() != 5) continue;  // meta:* keys
    char tag = key[0];
    uint32_t id = GetBigEndian32(key.data() + 1);
    rocksdb::Slice val = it->value();
    VarintReader r{val.data(), val.data() + val.size()};
    switch (tag) {
      case kTagString: {
        if (!next(&disk.strings, id)) return Corrupt("string", id);
        d.strings.emplace_back(val.data(), val.size());
        break;
      }
      case kTagExecutable: {
        if (!next(&disk.executables, id)) return Corrupt("executable", id);
        Executable e;
        e.file_name = static_cast<uint32_t>(r.Next());
        e.htlhash = static_cast<uint32_t>(r.Next());
        e.gnu_build_id = static_cast<uint32_t>(r.Next());
        e.go_build_id = static_cast<uint32_t>(r.Next());
        if (!r.ok) return Corrupt("executable", id);
        d.executables.push_back(e);
        break;
      }
      case kTagFrame: {
        if (!next(&disk.frames, id)) return Corrupt("frame", id);
        Frame f;
        f.function = static_cast<uint32_t>(r.Next());
        f.file = static_cast<uint32_t>(r.Next());
        f.executable = static_cast<uint32_t>(r.Next());
        f.line = UnZigZag(r.Next());
        f.address = r.Next();
        f.type = static_cast<FrameType>(r.Byte());
        f.inlined = r.Byte() != 0;
        if (!r.ok) return Corrupt("frame", id);
        d.frames.push_back(f);
        break;
      }
      case kTagStack: {
        if (!next(&disk.stacks, id)) return Corrupt("stack", id);
        uint64_t n = r.Next();
        if (n > val.size()) return Corrupt("stack", id);
        for (uint64_t i = 0; i < n; ++i) d.stack_frames.push_back(static_cast<uint32_t>(r.Next()));
        if (!r.ok) return Corrupt("stack", id);
        d.stack_offsets.push_back(static_cast<uint32_t>(d.stack_frames.size()));
        break;
      }
      case kTagAttributeSet: {
        if (!next(&disk.attribute_sets, id)) return Corrupt("attribute set", id);
        uint64_t n = r.Next();
        if (n > val.size()) return Corrupt("attribute set", id);
        for (uint64_t i = 0; i < n; ++i) {
          Attribute a;
          a.key = static_cast<uint32_t>(r.Next());
          a.value = static_cast<uint32_t>(r.Next());
          d.attributes.push_back(a);
        }
        if (!r.ok) return Corrupt("attribute set", id);
        d.attribute_set_offsets.push_back(static_cast<uint32_t>(d.attributes.size()));
        break;
      }
      case kTagSampleType: {
        // Id 0 (on-CPU samples) exists before anything is stored; its entry
        // only carries a period. Sample types are never forgotten (their ids
        // are in block keys): the key is the id.
        if (id > d.sample_types.size()) return Corrupt("sample type", id);
        SampleTypeInfo t;
        if (!DecodeSampleType(std::string_view(val.data(), val.size()), &t))
          return Corrupt("sample type", id);
        if (id == d.sample_types.size()) {
          d.sample_types.push_back(t);
        } else {
          d.sample_types[id] = t;
        }
        break;
      }
      case kTagLink: {
        if (!next(&disk.links, id)) return Corrupt("link", id);
        uint64_t n = r.Next();
        if (!r.ok || n > static_cast<uint64_t>(r.end - r.p)) return Corrupt("link", id);
        Link l;
        l.trace_id.assign(r.p, n);
        l.span_id.assign(r.p + n, r.end);
        d.links.push_back(l);
        break;
      }
      default:
        break;
    }
  }
  if (!it->status().ok()) return FromRocks(it->status(), "loading dictionary");
  // Disk ids to ids; every reference must point at an entry that exists.
  auto dense = [](const std::vector<uint32_t>& ids, uint32_t* ref) {
    auto found = std::lower_bound(ids.begin(), ids.end(), *ref);
    if (found == ids.end() || *found != *ref) return false;
    *ref = static_cast<uint32_t>(found - ids.begin());
    return true;
  };
  for (size_t i = 0; i < d.frames.size(); ++i) {
    Frame& f = d.frames[i];
    if (!dense(disk.strings, &f.function) || !dense(disk.strings, &f.file) ||
        !dense(disk.executables, &f.executable)) {
      return Corrupt("frame", disk.frames[i]);
    }
  }
  for (uint32_t& f : d.stack_frames) {
    if (!dense(disk.frames, &f)) return absl::DataLossError("store dictionary: stack refers to a missing frame");
  }
  for (Attribute& a : d.attributes) {
    if (!dense(disk.strings, &a.key) || !dense(disk.strings, &a.value)) {
      return absl::DataLossError("store dictionary: attribute refers to a missing string");
    }
  }
  for (Executable& e : d.executables) {
    if (!dense(disk.strings, &e.file_name) || !dense(disk.strings, &e.htlhash) ||
        !dense(disk.strings, &e.gnu_build_id) || !dense(disk.strings, &e.go_build_id)) {
      return absl::DataLossError("store dictionary: executable refers to a missing string");
    }
  }
  // The indexes, over the translated tables; the caps' counts.
  g.string_ids.reserve(d.strings.size());
  for (uint32_t id = 0; id < d.strings.size(); ++id) g.string_ids.insert(id);
  g.DropWriteIndexes();
  g.RebuildWriteIndexes();
  for (uint32_t s = 0; s < d.AttributeSetCount(); ++s) g.NoteSet(d.AttributeSet(s));
  g.RecountStringBytes();
  return absl::OkStatus();
}

void DictionaryPart::Replace(GlobalDictionary&& next, std::shared_ptr<const IdRemaps> remaps) {
  std::unique_lock lock(mutex_);
  dict_.ReplaceWith(std::move(next));
  remaps_ = std::move(remaps);
  epoch_.fetch_add(1);
}

bool DictionaryPart::PassDue() {
  if (!due_) return false;
  if (urgent_.exchange(false)) return true;
  uint64_t entries = 0;
  {
    std::shared_lock lock(mutex_);
    entries = Entries();
  }
  return entries >= std::max<uint64_t>(4096, entries_after_pass_.load() * 3 / 2);
}

// Retention holds this to its budget (RocksStore::MemoryCut).
uint64_t DictionaryPart::MemoryBytes() const {
  const GlobalDictionary& g = dict_;
  const ProfileDictionary& d = g.dict;
  // An id-keyed index slot is 4 bytes plus a control byte, at 7/8 load at
  // most; every entry has a 4-byte disk id.
  constexpr uint64_t kIndexed = 4 + 6 + 4;
  uint64_t bytes = g.string_heap_bytes + d.strings.size() * (sizeof(std::string) + kIndexed);
  bytes += d.executables.size() * (sizeof(Executable) * 2 + 8 + kIndexed);  // the index holds a copy
  bytes += d.frames.size() * (sizeof(Frame) + kIndexed);
  bytes += d.stack_frames.size() * 4 + d.stack_offsets.size() * (4 + kIndexed);
  bytes += d.attributes.size() * (sizeof(Attribute) + 10) + d.attribute_set_offsets.size() * (4 + kIndexed);
  bytes += d.links.size() * (2 * sizeof(Link) + 40 + 4);  // the index's key is the link's encoding
  return bytes;
}

absl::Status SamplesPart::Load(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* meta) {
  std::string v;
  rocksdb::Status s = db->Get(rocksdb::ReadOptions(), meta, kStatsKey, &v);
  if (s.IsNotFound()) return absl::OkStatus();
  if (!s.ok()) return FromRocks(s, "reading statistics");
  std::lock_guard lock(mutex_);
  if (!counters_.Decode(v)) return absl::DataLossError("store statistics key is corrupt");
  return absl::OkStatus();
}

std::vector<uint32_t> SamplesPart::TypesWithSamples() const {
  std::lock_guard lock(mutex_);
  std::vector<uint32_t> types;
  for (uint32_t t = 0; t < counters_.samples_by_type.size(); ++t) {
    if (counters_.samples_by_type[t] != 0) types.push_back(t);
  }
  return types;
}

}  // namespace kiln::storage::store_internal
