// The RocksDB store's insides, shared by its files (store_*.cpp), one per
// concern: keys and encodings and the RocksStore class here; opening and
// settling, writing, queries, symbols, retention, and the log and stats in
// their own files. Not part of kiln_storage's interface: include store.h.
//
// Files
//   store_internal.h     keys and value encodings, the in-memory dictionary,
//                        the RocksStore class
//   store_open.cpp       opening, schema upgrade, loading; settling the WAL,
//                        the disk guard, the retention timer
//   store_write.cpp      Write: interning a batch, sample blocks
//   store_query.cpp      the sharded scan, slices, timelines
//   store_symbols.cpp    symbol tables and statuses
//   store_retention.cpp  retention passes, flush, compaction
//   store.cpp            Store::Open, the log, statistics, attribute listings
//
// Column families and keys (all integers big-endian so keys sort
// numerically):
//
//   default  "meta:schema"                 -> u32 schema version
//            "meta:stats"                  -> varint counters (see EncodeStats)
//            "meta:losses"                 -> data-loss totals (see kLossKey)
//            "meta:retention_problem"      -> text (see kRetentionProblemKey)
//            's' u32 id                    -> string bytes
//            'e' u32 id                    -> executable (varints)
//            'f' u32 id                    -> frame (varints, u8 type, u8 inlined)
//            'k' u32 id                    -> stack: varint n, n varint frame ids (root first)
//            'a' u32 id                    -> attribute set: varint n, n (key, value) string ids
//            'l' u32 id                    -> link: varint len, trace id, span id
//            'y' u32 id                    -> sample type: type, unit, period type, period
//                                             unit (varint len + bytes each), zigzag period
//   blocks   u32 sample type | u64 bucket^sign | u64 seq -> SampleBlock (zstd by RocksDB)
//   log      u64 seq                       -> zigzag time, u8 level, message
//   summaries u32 sample type | u64 hour^sign -> StackSummary (blob file)
//   forward  destination '\0' u64 seq     -> varint zigzag enqueued ns, request bytes (blob file)
//   symbols  't' key                       -> SymbolTable::Serialize() (blob file, zstd)
//            'a' key                       -> key of the table this key shares
//            's' key                       -> symbol status (see EncodeSymbolStatus)
//            (key = "htlhash:<hex>" or "gnu:<hex>", see SymbolKeys)
//
// The dictionary is small next to the samples, so it is loaded into memory
// on open and every id is resolved there; sample blocks are only read by
// queries.
#pragma once

#include <rocksdb/cache.h>
#include <rocksdb/compaction_filter.h>
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/options.h>
#include <rocksdb/slice.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "storage/disk_guard.h"
#include "storage/sample_block.h"
#include "storage/stack_summary.h"
#include "storage/store.h"
#include "storage/varint.h"

namespace kiln::storage::store_internal {

// ============================================================================
// [SECTION] Keys and value encodings
// ============================================================================

constexpr char kSchemaKey[] = "meta:schema";
constexpr char kStatsKey[] = "meta:stats";
// Data-loss totals: varint count, then a varint per reason in enum order (a
// newer kiln's extra reasons are kept by an older one as they are).
constexpr char kLossKey[] = "meta:losses";
// Why retention cannot hold the size limit (StoreStats::retention_problem);
// absent when it can.
constexpr char kRetentionProblemKey[] = "meta:retention_problem";
constexpr char kTagString = 's', kTagExecutable = 'e', kTagFrame = 'f', kTagStack = 'k',
               kTagAttributeSet = 'a', kTagLink = 'l', kTagSampleType = 'y';
// Block keys: u32 sample type, u64 bucket, u64 sequence.
constexpr size_t kBlockKeySize = 20;

inline std::string DictKey(char tag, uint32_t id) {
  std::string key(1, tag);
  PutBigEndian32(&key, id);
  return key;
}

inline std::string BlockKeyPrefix(uint32_t sample_type, int64_t bucket) {
  std::string key;
  PutBigEndian32(&key, sample_type);
  // Flipping the sign bit makes negative buckets sort before positive ones.
  PutBigEndian64(&key, static_cast<uint64_t>(bucket) ^ (uint64_t{1} << 63));
  return key;
}

// Summary keys: u32 sample type, u64 hour (flipped sign, as blocks).
inline std::string SummaryKey(uint32_t sample_type, int64_t hour) {
  return BlockKeyPrefix(sample_type, hour);
}
// The bucket of a block key, or the hour of a summary key: the inverse of
// BlockKeyPrefix after the sample type.
inline int64_t KeyBucket(const char* key) {
  return static_cast<int64_t>(GetBigEndian64(key + 4) ^ (uint64_t{1} << 63));
}
inline constexpr size_t kSummaryKeySize = 12;
// The span index's compaction filter: drops entries of buckets before
// `*floor` (store_spans.cpp).
std::unique_ptr<rocksdb::CompactionFilter> NewSpanIndexFilter(std::shared_ptr<std::atomic<int64_t>> floor);
// An hour is summarized once the newest sample is this far past its end:
// agents send a few seconds late, and a late write only costs a rebuild.
inline constexpr int64_t kSummaryGraceNs = 120'000'000'000;

inline std::string EncodeExecutable(const Executable& e) {
  std::string v;
  PutVarint(&v, e.file_name);
  PutVarint(&v, e.htlhash);
  PutVarint(&v, e.gnu_build_id);
  PutVarint(&v, e.go_build_id);
  return v;
}

inline std::string EncodeFrame(const Frame& f) {
  std::string v;
  PutVarint(&v, f.function);
  PutVarint(&v, f.file);
  PutVarint(&v, f.executable);
  PutVarint(&v, ZigZag(f.line));
  PutVarint(&v, f.address);
  v.push_back(static_cast<char>(f.type));
  v.push_back(static_cast<char>(f.inlined ? 1 : 0));
  return v;
}

inline void PutText(std::string* v, std::string_view text) {
  PutVarint(v, text.size());
  v->append(text);
}

inline std::string EncodeSampleType(const SampleTypeInfo& t) {
  std::string v;
  PutText(&v, t.type.type);
  PutText(&v, t.type.unit);
  PutText(&v, t.period_type);
  PutText(&v, t.period_unit);
  PutVarint(&v, ZigZag(t.period));
  return v;
}

inline std::string EncodeIds(const uint32_t* begin, const uint32_t* end) {
  std::string v;
  PutVarint(&v, static_cast<uint64_t>(end - begin));
  for (const uint32_t* p = begin; p != end; ++p) PutVarint(&v, *p);
  return v;
}

inline std::string EncodeAttributes(const Attribute* begin, const Attribute* end) {
  std::string v;
  PutVarint(&v, static_cast<uint64_t>(end - begin));
  for (const Attribute* a = begin; a != end; ++a) {
    PutVarint(&v, a->key);
    PutVarint(&v, a->value);
  }
  return v;
}

inline std::string EncodeLink(const Link& l) {
  std::string v;
  PutVarint(&v, l.trace_id.size());
  v += l.trace_id;
  v += l.span_id;
  return v;
}

inline bool DecodeSampleType(std::string_view bytes, SampleTypeInfo* t) {
  VarintReader r{bytes.data(), bytes.data() + bytes.size()};
  for (std::string* field : {&t->type.type, &t->type.unit, &t->period_type, &t->period_unit}) {
    uint64_t n = r.Next();
    if (!r.ok || n > static_cast<uint64_t>(r.end - r.p)) return false;
    field->assign(r.p, n);
    r.p += n;
  }
  t->period = UnZigZag(r.Next());
  return r.ok;
}

inline absl::Status Corrupt(std::string_view what, uint32_t id) {
  return absl::DataLossError(absl::StrCat("store dictionary: ", std::string(what), " ", id, " is corrupt"));
}

inline absl::Status FromRocks(const rocksdb::Status& s, std::string_view context) {
  if (s.ok()) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(std::string(context), ": ", s.ToString()));
}

inline absl::string_view AsAbsl(std::string_view s) { return absl::string_view(s.data(), s.size()); }

constexpr char kSymbolTableTag = 't', kSymbolAliasTag = 'a', kSymbolStatusTag = 's';

inline std::string SymbolRecordKey(char tag, std::string_view key) {
  std::string k(1, tag);
  k.append(key);
  return k;
}

inline std::string EncodeSymbolStatus(const SymbolStatus& st) {
  std::string v;
  PutVarint(&v, static_cast<uint64_t>(st.state));
  PutVarint(&v, st.functions);
  PutVarint(&v, ZigZag(st.updated_ns));
  PutVarint(&v, st.source.size());
  v += st.source;
  v += st.detail;
  return v;
}

inline bool DecodeSymbolStatus(std::string_view bytes, SymbolStatus* st) {
  VarintReader r{bytes.data(), bytes.data() + bytes.size()};
  uint64_t state = r.Next();
  st->functions = r.Next();
  st->updated_ns = UnZigZag(r.Next());
  uint64_t source_size = r.Next();
  if (!r.ok || state > 3 || source_size > static_cast<uint64_t>(r.end - r.p)) return false;
  st->state = static_cast<SymbolStatus::State>(state);
  st->source.assign(r.p, source_size);
  st->detail.assign(r.p + source_size, r.end);
  return true;
}

// Frames the producer could not name for itself, or named from the host's
// own symbols: native code in an executable. Interpreted frames (Python,
// JVM, ...) are named by their runtime and keep their names.
inline bool SymbolizableFrame(const Frame& f) {
  return f.executable != 0 &&
         (f.type == FrameType::kNative || f.type == FrameType::kUnknown || f.type == FrameType::kKernel);
}

struct ExecutableHash {
  size_t operator()(const Executable& e) const {
    return absl::HashOf(e.file_name, e.htlhash, e.gnu_build_id, e.go_build_id);
  }
};
struct FrameHash {
  size_t operator()(const Frame& f) const {
    return absl::HashOf(f.function, f.file, f.executable, f.line, f.address, static_cast<uint8_t>(f.type),
                        f.inlined);
  }
};

// RocksDB's max_total_wal_size for a store with this size limit (0 =
// none): past it RocksDB flushes the families holding the oldest WAL
// file. 64 MiB, or an eighth of a smaller store's limit, so the WAL (twice
// the settled size of what it holds) never carries a small store past it.
inline uint64_t MaxTotalWalSize(uint64_t retention_size_bytes) {
  constexpr uint64_t kDefault = uint64_t{64} << 20, kSmallest = uint64_t{1} << 20;
  if (retention_size_bytes == 0) return kDefault;
  return std::clamp(retention_size_bytes / 8, kSmallest, kDefault);
}

// The dictionary family's table layout for a size limit, as RocksDB
// option strings (SetOptions takes them when the limit changes). A
// churning fleet's store is mostly dictionary, and by default it lay in
// one 20 MiB table: every compaction of it (each forgetting pass, every
// fourth flush) wrote it whole beside the old one, and the disk held 1.8x
// a 32 MiB limit for seconds. Small tables over several levels (the
// newest data in a small base level, most of it at the bottom) and
// compactions that take a few tables at a time bound that to a few tables.
inline std::unordered_map<std::string, std::string> DictionaryLayout(uint64_t retention_size_bytes) {
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  const uint64_t limit = retention_size_bytes == 0 ? uint64_t{4} << 30 : retention_size_bytes;
  const uint64_t table = std::clamp(limit / 64, kMiB, 64 * kMiB);
  return {{"target_file_size_base", std::to_string(table)},
          {"max_bytes_for_level_base", std::to_string(std::clamp(limit / 8, 4 * kMiB, 256 * kMiB))},
          {"max_compaction_bytes", std::to_string(4 * table)}};
}

// ============================================================================
// [SECTION] Forgetting: ids of blocks written before a dictionary compaction
// ============================================================================
//
// A compaction (RocksStore::ForgetUnused, store_forget.cpp) renumbers the
// dictionary to the entries kept samples use, without rewriting a single
// sample block: blocks are written once and only ever deleted, and a day of
// them is gigabytes. Instead each compaction leaves a remap for the blocks
// written before it, found by the block's sequence number (the last 8
// bytes of its key, which only grows):
//
//   seq:   0 ......... B1 ......... B2 ............ next_block_seq
//          | remap[0]   | remap[1]   | current ids
//          (ids as of compaction 1,  (ids as of compaction 2)
//           mapped to current ids)
//
// Each remap maps straight to the current ids (a compaction composes the
// older ones with its own), so a reader translates a block with one array
// lookup per id. A remap goes once retention has deleted every block
// before its boundary. Forgotten ids map to 0 (the empty stack, set, link):
// no kept block holds one.
//
// Stored in the default family as "meta:remap:" u64 before_seq -> varint
// counts of stacks, sets, links, then each array as varints.
constexpr char kRemapKeyPrefix[] = "meta:remap:";

struct IdRemap {
  uint64_t before_seq = 0;  // applies to blocks with seq < before_seq (and >= the previous one's)
  std::vector<uint32_t> stacks, attribute_sets, links;  // old id -> current id

  void Translate(BlockSample* s) const {
    s->stack = s->stack < stacks.size() ? stacks[s->stack] : 0;
    s->attribute_set = s->attribute_set < attribute_sets.size() ? attribute_sets[s->attribute_set] : 0;
    s->link = s->link < links.size() ? links[s->link] : 0;
  }
  std::string Encode() const {
    std::string v;
    for (const auto* ids : {&stacks, &attribute_sets, &links}) PutVarint(&v, ids->size());
    for (const auto* ids : {&stacks, &attribute_sets, &links}) {
      for (uint32_t id : *ids) PutVarint(&v, id);
    }
    return v;
  }
  bool Decode(std::string_view bytes) {
    VarintReader r{bytes.data(), bytes.data() + bytes.size()};
    uint64_t n[3];
    for (uint64_t& k : n) k = r.Next();
    if (!r.ok || n[0] + n[1] + n[2] > bytes.size()) return false;
    for (int i = 0; i < 3; ++i) {
      std::vector<uint32_t>& ids = i == 0 ? stacks : i == 1 ? attribute_sets : links;
      ids.resize(n[i]);
      for (uint32_t& id : ids) id = static_cast<uint32_t>(r.Next());
    }
    return r.ok;
  }
};

// Every remap in force, ascending by boundary; immutable once published
// (queries hold it for their whole scan).
struct IdRemaps {
  std::vector<IdRemap> generations;
  // The remap for a block of sequence `seq`, or null: its ids are current.
  const IdRemap* For(uint64_t seq) const {
    auto it = std::upper_bound(generations.begin(), generations.end(), seq,
                               [](uint64_t v, const IdRemap& r) { return v < r.before_seq; });
    return it == generations.end() ? nullptr : &*it;
  }
  // Translates a decoded block's ids to the current ones.
  void Translate(uint64_t seq, std::vector<BlockSample>* samples) const {
    if (const IdRemap* r = For(seq)) {
      for (BlockSample& s : *samples) r->Translate(&s);
    }
  }
};

// The sequence number of a block key.
inline uint64_t KeySeq(const char* key) { return GetBigEndian64(key + 12); }

// ============================================================================
// [SECTION] In-memory dictionary
// ============================================================================

// Frame ids, hashed and compared by the frame they name: the index holds 4
// bytes an entry instead of a second copy of the 40-byte frame (frames are
// most of a churning fleet's dictionary: 2.5 M of them took 275 MB with
// the copy). Finds by Frame or by id.
struct FrameIdHash {
  using is_transparent = void;
  const std::vector<Frame>* frames;
  size_t operator()(uint32_t id) const { return FrameHash{}((*frames)[id]); }
  size_t operator()(const Frame& f) const { return FrameHash{}(f); }
};
struct FrameIdEq {
  using is_transparent = void;
  const std::vector<Frame>* frames;
  bool operator()(uint32_t a, uint32_t b) const { return a == b; }
  bool operator()(uint32_t a, const Frame& b) const { return (*frames)[a] == b; }
  bool operator()(const Frame& a, uint32_t b) const { return a == (*frames)[b]; }
};
using FrameIdSet = absl::flat_hash_set<uint32_t, FrameIdHash, FrameIdEq>;

// String ids the same way: each string is held once, in the table (a
// sender's 16 KiB attribute values were held twice, 1.7 GB for 614 MB).
struct StringIdHash {
  using is_transparent = void;
  const std::vector<std::string>* strings;
  size_t operator()(uint32_t id) const { return absl::Hash<std::string_view>{}((*strings)[id]); }
  size_t operator()(std::string_view s) const { return absl::Hash<std::string_view>{}(s); }
};
struct StringIdEq {
  using is_transparent = void;
  const std::vector<std::string>* strings;
  bool operator()(uint32_t a, uint32_t b) const { return a == b; }
  bool operator()(uint32_t a, std::string_view b) const { return (*strings)[a] == b; }
  bool operator()(std::string_view a, uint32_t b) const { return a == (*strings)[b]; }
};
using StringIdSet = absl::flat_hash_set<uint32_t, StringIdHash, StringIdEq>;

// Stacks and attribute sets the same way, hashed over their spans in the
// flat tables (an encoded-bytes key per entry was ~100 bytes each: 280 MB
// for a churning fleet's 2.8 M stacks). Finds by span or by id.
using StackSpan = absl::Span<const uint32_t>;
using AttributesSpan = absl::Span<const Attribute>;
inline size_t HashAttributes(AttributesSpan attrs) {
  size_t h = absl::HashOf(attrs.size());
  for (const Attribute& a : attrs) h = absl::HashOf(h, a.key, a.value);
  return h;
}
struct StackIdHash {
  using is_transparent = void;
  const ProfileDictionary* dict;
  size_t operator()(StackSpan s) const { return absl::Hash<StackSpan>{}(s); }
  size_t operator()(uint32_t id) const { return (*this)(Of(id)); }
  StackSpan Of(uint32_t id) const {
    const auto s = dict->Stack(id);
    return StackSpan(s.begin(), s.size());
  }
};
struct StackIdEq {
  using is_transparent = void;
  const ProfileDictionary* dict;
  StackSpan Of(uint32_t id) const { return StackIdHash{dict}.Of(id); }
  bool operator()(uint32_t a, uint32_t b) const { return a == b; }
  bool operator()(uint32_t a, StackSpan b) const { return Of(a) == b; }
  bool operator()(StackSpan a, uint32_t b) const { return a == Of(b); }
};
using StackIdSet = absl::flat_hash_set<uint32_t, StackIdHash, StackIdEq>;
struct AttributeSetIdHash {
  using is_transparent = void;
  const ProfileDictionary* dict;
  size_t operator()(AttributesSpan s) const { return HashAttributes(s); }
  size_t operator()(uint32_t id) const { return HashAttributes(Of(id)); }
  AttributesSpan Of(uint32_t id) const {
    const auto a = dict->AttributeSet(id);
    return AttributesSpan(a.begin(), a.size());
  }
};
struct AttributeSetIdEq {
  using is_transparent = void;
  const ProfileDictionary* dict;
  AttributesSpan Of(uint32_t id) const { return AttributeSetIdHash{dict}.Of(id); }
  bool operator()(uint32_t a, uint32_t b) const { return a == b; }
  bool operator()(uint32_t a, AttributesSpan b) const { return Of(a) == b; }
  bool operator()(AttributesSpan a, uint32_t b) const { return a == Of(b); }
};
using AttributeSetIdSet = absl::flat_hash_set<uint32_t, AttributeSetIdHash, AttributeSetIdEq>;

// The store-global dictionary plus the hash indexes that deduplicate new
// entries. Held by DictionaryPart. Not copied or moved: the
// string and frame indexes point at its own tables (ReplaceWith swaps
// contents).
struct GlobalDictionary {
  ProfileDictionary dict;
  // Flat tables: interning is the hot part of Write(), and node-based maps
  // cost a cache miss per lookup.
  StringIdSet string_ids{0, StringIdHash{&dict.strings}, StringIdEq{&dict.strings}};
  absl::flat_hash_map<Executable, uint32_t, ExecutableHash> executable_ids;
  FrameIdSet frame_ids{0, FrameIdHash{&dict.frames}, FrameIdEq{&dict.frames}};
  StackIdSet stack_ids{0, StackIdHash{&dict}, StackIdEq{&dict}};
  AttributeSetIdSet attribute_set_ids{0, AttributeSetIdHash{&dict}, AttributeSetIdEq{&dict}};
  absl::flat_hash_map<std::string, uint32_t> link_ids;  // key: EncodeLink bytes (links are few)
  // Each entry's key on disk, its disk id, by (dense) id. Disk ids never
  // change, so forgetting deletes the keys of what it forgets and rewrites
  // nothing it keeps (rewriting 8 M kept entries per pass held writes for
  // 11 s and took a GB of memory); values on disk refer to other entries by
  // disk id. Both numberings keep the entries' order, so loading in key
  // order gives back the ids, and a disk id is found by binary search.
  // Entry 0 (the empty one) is never on disk.
  // The strings' heap bytes (those past the 15 a std::string holds
  // inline), kept as strings come and go, for DictionaryPart::MemoryBytes.
  uint64_t string_heap_bytes = 0;
  static uint64_t HeapBytes(const std::string& s) { return s.size() > 15 ? s.size() + 1 : 0; }
  void RecountStringBytes() {
    string_heap_bytes = 0;
    for (const std::string& s : dict.strings) string_heap_bytes += HeapBytes(s);
  }
  struct DiskIds {
    std::vector<uint32_t> strings{0}, executables{0}, frames{0}, stacks{0}, attribute_sets{0}, links{0};
  } disk;
  static uint32_t NextDiskId(std::vector<uint32_t>* ids) {
    ids->push_back(ids->back() + 1);
    return ids->back();
  }
  // An entry as it is written: its references in disk ids.
  Executable OnDisk(Executable e) const {
    e.file_name = disk.strings[e.file_name];
    e.htlhash = disk.strings[e.htlhash];
    e.gnu_build_id = disk.strings[e.gnu_build_id];
    e.go_build_id = disk.strings[e.go_build_id];
    return e;
  }
  Frame OnDisk(Frame f) const {
    f.function = disk.strings[f.function];
    f.file = disk.strings[f.file];
    f.executable = disk.executables[f.executable];
    return f;
  }
  std::string StackOnDisk(StackSpan frames) const {
    std::vector<uint32_t> ids(frames.begin(), frames.end());
    for (uint32_t& f : ids) f = disk.frames[f];
    return EncodeIds(ids.data(), ids.data() + ids.size());
  }
  std::string AttributesOnDisk(AttributesSpan attrs) const {
    std::vector<Attribute> out(attrs.begin(), attrs.end());
    for (Attribute& a : out) a = {disk.strings[a.key], disk.strings[a.value]};
    return EncodeAttributes(out.data(), out.data() + out.size());
  }
  // Distinct values per attribute key (string ids), and their bytes, for
  // the caps.
  absl::flat_hash_map<uint32_t, absl::flat_hash_set<uint32_t>> values_by_key;
  absl::flat_hash_map<uint32_t, uint64_t> value_bytes_by_key;
  // The bytes of the values each sender brought (by the string id of its
  // kiln.sender value, which the receiver adds and a sender cannot set), so
  // one host inventing values cannot fill the dictionary's memory budget
  // and have retention delete every other host's samples. A value several
  // senders use counts once, to the first one seen holding it (at open and
  // after forgetting: the first in id order). The kiln.sender values
  // themselves count to nobody.
  absl::flat_hash_map<uint32_t, uint64_t> value_bytes_by_sender;
  static constexpr uint32_t kNoSender = UINT32_MAX;
  struct SetSender {
    uint32_t key = kNoSender;    // the string id of "kiln.sender"
    uint32_t value = kNoSender;  // its value in the set: the sender
  };
  // Who sent a set of this dictionary's attributes (kNoSender values for a
  // capture's own sets, which no sender's cap bounds).
  template <typename Attributes>
  SetSender SenderOf(const Attributes& attrs) const {
    auto key = string_ids.find(attr::kKilnSender);
    if (key == string_ids.end()) return {};
    for (const Attribute& a : attrs) {
      if (a.key == *key) return {a.key, a.value};
    }
    return {*key, kNoSender};
  }
  // Counts a kept (key, value) for the caps: `sender` is the value of the
  // set's kiln.sender or kNoSender.
  void NoteValue(uint32_t key, uint32_t value, SetSender sender) {
    if (!values_by_key[key].insert(value).second) return;
    const uint64_t bytes = dict.strings[value].size();
    value_bytes_by_key[key] += bytes;
    if (sender.value != kNoSender && key != sender.key) value_bytes_by_sender[sender.value] += bytes;
  }
  template <typename Attributes>
  void NoteSet(const Attributes& attrs) {
    const SetSender sender = SenderOf(attrs);
    for (const Attribute& a : attrs) NoteValue(a.key, a.value, sender);
  }

  GlobalDictionary(const GlobalDictionary&) = delete;
  GlobalDictionary& operator=(const GlobalDictionary&) = delete;
  // Takes `other`'s tables and value counts (a forgetting pass's new
  // dictionary) and builds every index again over them: the id-keyed ones
  // point at this dictionary's own tables.
  void ReplaceWith(GlobalDictionary&& other) {
    dict = std::move(other.dict);
    disk = std::move(other.disk);
    RecountStringBytes();
    values_by_key = std::move(other.values_by_key);
    value_bytes_by_key = std::move(other.value_bytes_by_key);
    value_bytes_by_sender = std::move(other.value_bytes_by_sender);
    string_ids = StringIdSet(dict.strings.size(), StringIdHash{&dict.strings}, StringIdEq{&dict.strings});
    for (uint32_t id = 0; id < dict.strings.size(); ++id) string_ids.insert(id);
    DropWriteIndexes();
    RebuildWriteIndexes();
  }
  // The indexes only Write() uses (not string_ids: attribute listings read
  // it): a forgetting pass frees them while it builds the new dictionary,
  // and builds them again from the tables if it fails.
  void DropWriteIndexes() {
    executable_ids = {};
    frame_ids = FrameIdSet(0, FrameIdHash{&dict.frames}, FrameIdEq{&dict.frames});
    stack_ids = StackIdSet(0, StackIdHash{&dict}, StackIdEq{&dict});
    attribute_set_ids = AttributeSetIdSet(0, AttributeSetIdHash{&dict}, AttributeSetIdEq{&dict});
    link_ids = {};
  }
  void RebuildWriteIndexes() {
    executable_ids.reserve(dict.executables.size());
    for (uint32_t i = 0; i < dict.executables.size(); ++i) executable_ids.emplace(dict.executables[i], i);
    frame_ids.reserve(dict.frames.size());
    for (uint32_t i = 0; i < dict.frames.size(); ++i) frame_ids.insert(i);
    stack_ids.reserve(dict.StackCount());
    for (uint32_t i = 0; i < dict.StackCount(); ++i) stack_ids.insert(i);
    attribute_set_ids.reserve(dict.AttributeSetCount());
    for (uint32_t i = 0; i < dict.AttributeSetCount(); ++i) attribute_set_ids.insert(i);
    for (uint32_t i = 0; i < dict.links.size(); ++i) link_ids.emplace(EncodeLink(dict.links[i]), i);
  }
  GlobalDictionary() {
    string_ids.insert(0);  // dict.strings[0] is the empty string
    executable_ids.emplace(Executable{}, 0);
    frame_ids.insert(0);          // dict.frames[0] is the empty frame
    stack_ids.insert(0);          // stack 0 has no frames
    attribute_set_ids.insert(0);  // attribute set 0 has no attributes
    link_ids.emplace(EncodeLink(Link{}), 0);
  }

  // Sizes of every table, to roll back a failed write.
  struct Mark {
    size_t strings, executables, frames, stacks, stack_frames, attribute_sets, attributes, links;
    std::vector<SampleTypeInfo> sample_types;  // few and small: kept whole (periods change in place)
  };
  Mark Snapshot() const {
    return {dict.strings.size(),       dict.executables.size(),  dict.frames.size(),
            dict.stack_offsets.size(), dict.stack_frames.size(), dict.attribute_set_offsets.size(),
            dict.attributes.size(),    dict.links.size(),        dict.sample_types};
  }
};

struct Counters {
  std::vector<uint64_t> samples_by_type;  // indexed by sample type id
  uint64_t blocks = 0;
  int64_t first_sample_ns = 0;
  int64_t last_sample_ns = 0;
  uint64_t next_block_seq = 1;

  uint64_t samples() const {
    uint64_t n = 0;
    for (uint64_t k : samples_by_type) n += k;
    return n;
  }
  void Add(uint32_t sample_type, uint64_t n) {
    if (samples_by_type.size() <= sample_type) samples_by_type.resize(sample_type + 1);
    samples_by_type[sample_type] += n;
  }
  std::string Encode() const {
    std::string v;
    PutVarint(&v, samples_by_type.size());
    for (uint64_t k : samples_by_type) PutVarint(&v, k);
    PutVarint(&v, blocks);
    PutVarint(&v, ZigZag(first_sample_ns));
    PutVarint(&v, ZigZag(last_sample_ns));
    PutVarint(&v, next_block_seq);
    return v;
  }
  // `legacy_kinds`: schema 1 wrote exactly four fixed per-kind counts
  // without a length.
  bool Decode(std::string_view bytes, bool legacy_kinds = false) {
    VarintReader r{bytes.data(), bytes.data() + bytes.size()};
    const uint64_t n = legacy_kinds ? 4 : r.Next();
    if (!r.ok || n > bytes.size()) return false;
    samples_by_type.assign(n, 0);
    for (uint64_t& k : samples_by_type) k = r.Next();
    blocks = r.Next();
    first_sample_ns = UnZigZag(r.Next());
    last_sample_ns = UnZigZag(r.Next());
    next_block_seq = r.Next();
    return r.ok;
  }
};

// ============================================================================
// [SECTION] Parts
// ============================================================================
//
// The store is parts that each own their state and its lock: the
// dictionary (DictionaryPart), the blocks' counters (SamplesPart),
// retention's limits and state (RetentionPart), the summaries' state
// (SummariesPart), the symbols, the Log and the data-loss totals. RocksStore holds
// them and runs what crosses parts: a write, and the retention,
// summarizing and forgetting passes. A part's lock is a leaf, held only
// inside the part, except the dictionary's, which readers hold while they
// read the counters and pin a RocksDB snapshot so that all three agree.
// Lock order (take them in this order, release before taking an earlier
// one):
//
//   RetentionPart::pass_mutex()   one retention pass
//   summarize_mutex_              one summarizing or forgetting pass
//   write_mutex_                  one Write(), and a pass's changes (the
//                                 dictionary, counters, the passes' watches)
//   DictionaryPart's lock         shared to read, exclusive to publish
//   leaves: SamplesPart, RetentionPart's problem, settle_mu_, SymbolsPart,
//           LogPart, LossesPart, SummariesPart
//
// Parts that write write through a PartWriter: the store's disk guard
// admits a write (or refuses it retryably) and the settling thread learns
// of it.

class PartWriter {
 public:
  virtual ~PartWriter() = default;
  // Admitted by the disk guard, then written and noted.
  virtual absl::Status Commit(rocksdb::WriteBatch* batch, std::string_view what) = 0;
  // Written whatever the disk guard says: what says why writes are refused
  // (the Log, the data-loss counters) must get through. Noted.
  virtual absl::Status CommitAlways(rocksdb::WriteBatch* batch, std::string_view what) = 0;
};

// Symbol tables and statuses, per executable key (SymbolKeys): statuses
// are small and all in memory; tables are loaded when a query first needs
// them and then shared by every later query. Its family is null in a store
// opened read-only that was written before symbols existed.
class SymbolsPart {
 public:
  SymbolsPart(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf, PartWriter* writer, uint64_t cache_bytes)
      : db_(db), cf_(cf), writer_(writer), cache_bytes_(cache_bytes) {}
  absl::Status Load();
  // The table of an executable under either of its keys, or null.
  std::shared_ptr<const SymbolTable> TableFor(std::string_view htlhash, std::string_view gnu_build_id) const;
  bool Any() const {
    std::lock_guard lock(mutex_);
    return !statuses_.empty();
  }
  absl::Status Put(const std::vector<std::string>& keys, SymbolTable table, const SymbolStatus& status);
  absl::Status PutStatus(const std::vector<std::string>& keys, const SymbolStatus& status, bool drop_table);
  std::vector<std::pair<std::string, SymbolStatus>> Statuses() const {
    std::lock_guard lock(mutex_);
    return {statuses_.begin(), statuses_.end()};
  }
  uint64_t Version() const { return version_.load(); }
  // Moves only when names already given may change: a table replaced,
  // dropped or forgotten. Every other change (a status, a table for an
  // executable that had none) can only name frames that had no name.
  // Bumped before Version(), so a reader that sees a new Version() and
  // then reads this sees its new value too.
  uint64_t RenamesVersion() const { return renames_.load(); }
  // For a forgetting pass: the records of keys no kept executable has
  // (`live`), deleted in `wb`; returns them, for Forget once `wb` is
  // written. A CI fleet's executables each leave a status ("no symbols
  // found") and a fleet's binaries a table: kept for every executable ever
  // seen they outgrew a small size limit in ten minutes, which retention
  // cannot delete. Kept: symbols a user added, which may come before the
  // samples they name, and a table another kept key is an alias of.
  std::vector<std::string> ForgetRecords(const absl::flat_hash_set<std::string>& live,
                                         rocksdb::WriteBatch* wb) const;
  void Forget(const std::vector<std::string>& keys);

 private:
  // The table stored for `key` (following an alias), loaded on first use;
  // null when there is none or it cannot be read.
  std::shared_ptr<const SymbolTable> TableForKey(const std::string& key) const;
  rocksdb::DB* const db_;
  rocksdb::ColumnFamilyHandle* const cf_;
  PartWriter* const writer_;
  mutable std::mutex mutex_;
  std::map<std::string, SymbolStatus> statuses_;
  // Loaded tables, the least recently used dropped past `cache_bytes_` (a
  // developer rebuilding what they profile brings a new table per build;
  // kept forever they grew the window by hundreds of MB in an hour). A
  // table a view still holds lives on with it; the cache only lets go.
  struct CachedTable {
    std::shared_ptr<const SymbolTable> table;  // null: none stored
    uint64_t bytes = 0;
    uint64_t last_use = 0;
  };
  // Caches `table` under `key` and evicts past the budget; mutex_ held.
  const std::shared_ptr<const SymbolTable>& Remember(const std::string& key,
                                                     std::shared_ptr<const SymbolTable> table) const;
  void Drop(const std::string& key) const;  // mutex_ held
  const uint64_t cache_bytes_;
  mutable absl::flat_hash_map<std::string, CachedTable> tables_;
  mutable uint64_t cached_bytes_ = 0;
  mutable uint64_t use_clock_ = 0;
  std::atomic<uint64_t> version_{0};
  std::atomic<uint64_t> renames_{0};
};

// The Log: numbered entries, the newest kMaxEntries kept.
class LogPart {
 public:
  // The Log is for reading, not an archive: a churning fleet logs a line
  // per new executable, and nothing else would bound it.
  static constexpr uint64_t kMaxEntries = 50'000;
  LogPart(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf, PartWriter* writer)
      : db_(db), cf_(cf), writer_(writer) {}
  absl::Status Load();
  absl::Status Append(LogLevel level, std::string_view message);
  std::vector<LogEntry> Read(size_t max) const;
  // Whole entries go, oldest first, an eighth of kMaxEntries at a time.
  void Trim();

 private:
  rocksdb::DB* const db_;
  rocksdb::ColumnFamilyHandle* const cf_;
  PartWriter* const writer_;
  std::atomic<uint64_t> next_seq_{1};
  std::mutex trim_mutex_;
  uint64_t trimmed_before_ = 0;  // guarded by trim_mutex_
};

// Data-loss totals by reason (storage/model/data_loss.h), kept in the meta
// family under kLossKey.
class LossesPart {
 public:
  LossesPart(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf, PartWriter* writer)
      : db_(db), cf_(cf), writer_(writer) {}
  absl::Status Load();
  absl::Status Add(const DataLossCounts& counts);
  DataLossCounts Totals() const;

 private:
  rocksdb::DB* const db_;
  rocksdb::ColumnFamilyHandle* const cf_;
  PartWriter* const writer_;
  mutable std::mutex mutex_;
  std::vector<uint64_t> losses_;  // at least kDataLossCount
};

// What is owed to each forwarding destination (Store::WriteAndForward):
// per destination the queue's entries' sequence numbers, sizes and times
// in memory (loaded from the keys at open), the requests themselves in the
// forward family. Appends go into the store's write batch (so a request
// and its samples are written together) and are published after it is
// written; acks and the bound's drops are writes of their own.
class ForwardPart {
 public:
  ForwardPart(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf, PartWriter* writer)
      : db_(db), cf_(cf), writer_(writer) {}
  absl::Status Load();
  struct Meta {
    uint64_t seq = 0;
    uint64_t bytes = 0;
    int64_t enqueued_ns = 0;
  };
  // Appends in `wb` (null family: the store cannot forward) and lists what
  // to publish once it is written.
  using Pending = std::vector<std::pair<std::string, Meta>>;
  absl::Status Append(const std::vector<std::string>& destinations, std::string_view request, int64_t now_ns,
                      rocksdb::WriteBatch* wb, Pending* pending);
  void Publish(const Pending& pending);
  // Drops the oldest entries of every queue over `max_bytes`; the number
  // dropped.
  absl::StatusOr<uint64_t> Bound(uint64_t max_bytes);
  std::vector<ForwardEntry> Peek(const std::string& destination, size_t max) const;
  absl::Status Ack(const std::string& destination, uint64_t seq);
  ForwardBacklog Backlog(const std::string& destination) const;
  std::vector<std::string> Destinations() const;

 private:
  static std::string Key(const std::string& destination, uint64_t seq);
  struct Queue {
    std::deque<Meta> entries;
    uint64_t bytes = 0;
    uint64_t next_seq = 1;
    uint64_t dropped = 0;  // over the bound, since open
  };
  // Removes `q`'s entries up to and including `seq` (acked or dropped).
  static void PopThrough(Queue* q, uint64_t seq);
  rocksdb::DB* const db_;
  rocksdb::ColumnFamilyHandle* const cf_;
  PartWriter* const writer_;
  mutable std::mutex mutex_;
  std::map<std::string, Queue> queues_;
};

// The hourly summaries' state (storage/stack_summary.h; the passes that
// build, invalidate and renumber them are the store's, store_summaries.cpp
// and store_forget.cpp). The index of which (sample type, hour) have a
// summary is loaded at open and is a hint for planning queries: a query
// reads the summary from its snapshot and reads the hour's samples when it
// is gone.
class SummariesPart {
 public:
  absl::Status Load(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf);
  bool Has(uint32_t sample_type, int64_t hour) const {
    std::lock_guard lock(mutex_);
    return hours_.contains({sample_type, hour});
  }
  void Insert(uint32_t sample_type, int64_t hour) {
    std::lock_guard lock(mutex_);
    hours_.insert({sample_type, hour});
  }
  // Drops the hours [first_hour, last_hour] of `sample_type`; true when
  // any was there.
  bool Erase(uint32_t sample_type, int64_t first_hour, int64_t last_hour) {
    std::lock_guard lock(mutex_);
    if (first_hour == last_hour) return hours_.erase({sample_type, first_hour}) > 0;  // a write's hour
    return absl::erase_if(hours_, [&](const std::pair<uint32_t, int64_t>& k) {
             return k.first == sample_type && k.second >= first_hour && k.second <= last_hour;
           }) > 0;
  }
  size_t Size() const {
    std::lock_guard lock(mutex_);
    return hours_.size();
  }

  // The hour a summary is being built for, guarded by the store's
  // write_mutex_: a write or retention pass touching it sets
  // `invalidated`, and the summary (made from a snapshot before that
  // write) is then not stored.
  struct Target {
    bool active = false;
    bool invalidated = false;
    uint32_t sample_type = 0;
    int64_t hour = 0;
  } target;
  std::atomic<uint64_t> summarized_version{0};  // the store's data version at the last pass
  mutable std::atomic<uint64_t> hours_read{0};  // by queries, since open

 private:
  mutable std::mutex mutex_;
  absl::flat_hash_set<std::pair<uint32_t, int64_t>> hours_;
};

// The dictionary: every string, executable, frame, stack, attribute set
// and link the kept samples use, the remaps that translate blocks written
// before the last forgetting pass (store_forget.cpp), the epoch counting
// those passes, and when the next pass is due.
//
// Its lock is shared by readers (queries, stats, listings, a pass taking
// its snapshot) and held exclusively only to publish: a write's new
// entries across its RocksDB write (a query pins its snapshot under the
// shared hold, so it never sees a block whose ids are not in memory yet)
// and a forgetting pass's swap. Only writers change the dictionary, and
// they hold the store's write_mutex_, so a writer reads and extends it
// without this lock (ForWriter) and takes it only to publish.
class DictionaryPart {
 public:
  // A shared hold and what it may read.
  class Reader {
   public:
    explicit Reader(const DictionaryPart& part) : lock_(part.mutex_), part_(part) {}
    const GlobalDictionary& global() const { return part_.dict_; }
    const ProfileDictionary& dict() const { return part_.dict_.dict; }
    const std::shared_ptr<const IdRemaps>& remaps() const { return part_.remaps_; }
    uint64_t MemoryBytes() const { return part_.MemoryBytes(); }

   private:
    std::shared_lock<std::shared_mutex> lock_;
    const DictionaryPart& part_;
  };
  Reader Read() const { return Reader(*this); }
  // The exclusive hold a writer publishes under (it holds write_mutex_).
  std::unique_lock<std::shared_mutex> Publishing() { return std::unique_lock(mutex_); }
  // For a writer, which holds write_mutex_: no other thread changes the
  // dictionary meanwhile, and readers read only what it publishes.
  GlobalDictionary& ForWriter() { return dict_; }
  const std::shared_ptr<const IdRemaps>& RemapsForWriter() const { return remaps_; }
  uint64_t EntriesForWriter() const { return Entries(); }
  // A forgetting pass's new dictionary and remaps (the writer holds
  // write_mutex_): swapped in under the exclusive hold, and the epoch
  // moves on so a query that read ids of the old one runs again.
  void Replace(GlobalDictionary&& next, std::shared_ptr<const IdRemaps> remaps);
  uint64_t Epoch() const { return epoch_.load(); }

  // At open (store_dictionary.cpp): the remaps, then the tables.
  absl::Status Load(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* meta);

  // When forgetting runs (the settling thread asks): once retention deleted
  // samples and the dictionary grew by half since the last pass (each pass
  // reads every kept block, so a store whose code and processes stay the
  // same never pays for it), or at once when retention cut samples to make
  // room for the dictionary.
  void NoteSamplesDeleted() { due_ = true; }
  void ForgetSoon() { urgent_ = true; }
  bool PassDue();
  void PassStarted() { due_ = false; }
  void PassEnded(uint64_t entries_before, uint64_t entries_after) {
    entries_after_pass_ = entries_after;
    forgotten_ += entries_before - entries_after;
  }
  uint64_t Forgotten() const { return forgotten_.load(); }  // entries, since open

  // Ids that writes used while a pass counted from its snapshot: kept.
  struct Watch {
    bool active = false;
    std::vector<uint8_t> stacks, attribute_sets, links;  // sized as the dictionary at the snapshot
    void Note(const BlockSample& s) {
      if (s.stack < stacks.size()) stacks[s.stack] = 1;
      if (s.attribute_set < attribute_sets.size()) attribute_sets[s.attribute_set] = 1;
      if (s.link < links.size()) links[s.link] = 1;
    }
  };
  Watch& watch() { return watch_; }  // guarded by write_mutex_

 private:
  absl::Status LoadRemaps(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* meta);
  absl::Status LoadTables(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* meta);
  uint64_t Entries() const {
    const ProfileDictionary& d = dict_.dict;
    return d.strings.size() + d.executables.size() + d.frames.size() + d.StackCount() +
           d.AttributeSetCount() + d.links.size();
  }
  // What the tables and indexes hold in memory, from their sizes
  // (retention holds it to StoreOptions::max_dictionary_memory).
  uint64_t MemoryBytes() const;

  mutable std::shared_mutex mutex_;
  GlobalDictionary dict_;
  std::shared_ptr<const IdRemaps> remaps_ = std::make_shared<IdRemaps>();
  std::atomic<uint64_t> epoch_{0};
  Watch watch_;
  std::atomic<uint64_t> entries_after_pass_{0};  // or at open
  std::atomic<bool> due_{false};
  std::atomic<bool> urgent_{false};
  std::atomic<uint64_t> forgotten_{0};
};

// The blocks' counters (samples per type, blocks, first and last time, the
// next block's sequence number), kept in the meta family under kStatsKey
// and written in the same batch as the blocks they count. Writers (Write(),
// retention) hold write_mutex_ and publish the new counters once their
// batch is written; a reader that also reads the dictionary reads them
// under its shared hold, so the two agree.
class SamplesPart {
 public:
  absl::Status Load(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* meta);
  Counters Get() const {
    std::lock_guard lock(mutex_);
    return counters_;
  }
  void Publish(const Counters& counters) {
    std::lock_guard lock(mutex_);
    counters_ = counters;
  }
  // The sample types that have samples, ascending.
  std::vector<uint32_t> TypesWithSamples() const;

 private:
  mutable std::mutex mutex_;
  Counters counters_;
};

// Retention's limits and state (store_retention.cpp runs the passes).
class RetentionPart {
 public:
  RetentionPart(std::chrono::nanoseconds age, uint64_t size_bytes)
      : age_ns_(age.count()), size_bytes_(size_bytes) {}
  int64_t age_ns() const { return age_ns_.load(); }
  uint64_t size_bytes() const { return size_bytes_.load(); }
  void SetLimits(std::chrono::nanoseconds age, uint64_t size_bytes) {
    age_ns_ = age.count();
    size_bytes_ = size_bytes;
    RunSoon();
  }
  // A pass at the settling thread's next look: limits changed, a pass
  // left the store still over, or a twentieth of the size limit was
  // written since the last pass (NoteWritten says when that happens).
  void RunSoon() { changed_ = true; }
  bool TakeRunSoon() { return changed_.exchange(false); }
  bool RunSoonSet() const { return changed_.load(); }
  // True when these bytes made a pass due (and it was not yet).
  bool NoteWritten(uint64_t bytes) {
    const uint64_t limit = size_bytes_.load();
    return bytes > 0 && limit > 0 && written_since_pass_.fetch_add(bytes) + bytes > limit / 20 &&
           !changed_.exchange(true);
  }
  void PassStarted() { written_since_pass_ = 0; }
  void NoteDeleted(uint64_t samples) { deleted_ += samples; }
  uint64_t Deleted() const { return deleted_.load(); }  // samples, since open
  // Why retention cannot hold the size limit ("" = it can); true when it
  // changed (the caller logs and stores it).
  bool SetProblem(std::string problem) {
    std::lock_guard lock(problem_mutex_);
    if (problem == problem_) return false;
    problem_ = std::move(problem);
    return true;
  }
  std::string Problem() const {
    std::lock_guard lock(problem_mutex_);
    return problem_;
  }
  // One pass at a time.
  std::mutex& pass_mutex() { return pass_mutex_; }
  // Size passes in a row that cut a step for a dictionary larger than the
  // blocks (RocksStore::SizeCut): each takes a larger share of its step.
  // Guarded by pass_mutex().
  int dictionary_steps = 0;
  // Records the store's measured size at a size pass and returns how much
  // it grew within one bucket's time (kBucketNs) at most over the last
  // three: what arrives before the next deletion can free anything
  // (retention deletes whole buckets, forgetting follows it), so a pass
  // leaves that much room under the limit. Guarded by pass_mutex().
  uint64_t GrowthPerBucket(int64_t now_ns, uint64_t size_bytes) {
    sizes_.emplace_back(now_ns, size_bytes);
    while (!sizes_.empty() && now_ns - sizes_.front().first > 3 * kBucketNs) sizes_.pop_front();
    uint64_t growth = 0;
    for (size_t j = 0; j < sizes_.size(); ++j) {
      for (size_t i = 0; i < j; ++i) {
        if (sizes_[j].first - sizes_[i].first > kBucketNs || sizes_[j].second <= sizes_[i].second) continue;
        growth = std::max(growth, sizes_[j].second - sizes_[i].second);
      }
    }
    return growth;
  }
  // Writes during a pass's count from its snapshot, guarded by the store's
  // write_mutex_.
  struct Watch {
    bool active = false;
    int64_t cut = 0;                  // bucket
    bool old_bucket_written = false;  // into a bucket before `cut`: recount
    int64_t min_time_written_ns = std::numeric_limits<int64_t>::max();
    void Note(int64_t bucket, int64_t first_ns) {
      if (!active) return;
      if (bucket < cut) old_bucket_written = true;
      min_time_written_ns = std::min(min_time_written_ns, first_ns);
    }
  } watch;

 private:
  std::atomic<int64_t> age_ns_;
  std::atomic<uint64_t> size_bytes_;
  std::atomic<bool> changed_{false};
  std::atomic<uint64_t> written_since_pass_{0};
  std::atomic<uint64_t> deleted_{0};
  std::mutex pass_mutex_;
  std::deque<std::pair<int64_t, uint64_t>> sizes_;  // (time, bytes) of recent size passes
  mutable std::mutex problem_mutex_;
  std::string problem_;
};

class RocksStore final : public Store, private PartWriter {
 public:
  RocksStore(std::string dir, bool read_only, const StoreOptions& options)
      : dir_(std::move(dir)), read_only_(read_only), options_(options) {}
  ~RocksStore() override {
    stopping_ = true;  // ends a Summarize() pass between hours
    {
      std::lock_guard lock(settle_mu_);
      settle_stop_ = true;
    }
    settle_cv_.notify_all();
    if (settle_thread_.joinable()) settle_thread_.join();
    if (db_ != nullptr) {
      // Flushed on the way out, so a stopped kiln leaves compressed tables
      // and no write-ahead log to replay (a WAL holds samples at twice
      // their settled size). Failing here loses nothing: the WAL stays.
      if (!read_only_) (void)db_->Flush(rocksdb::FlushOptions(), handles_);
      for (auto* h : handles_) db_->DestroyColumnFamilyHandle(h);
      db_->Close();
      delete db_;
    }
  }
  // Starts the settling thread (read-write stores only).
  void StartSettling();

  absl::Status OpenDb();
  absl::Status Write(const ProfileBatch& batch) override { return WriteImpl(batch, {}, nullptr); }
  absl::Status WriteAndForward(const ProfileBatch& batch, std::string_view request,
                               const std::vector<std::string>& destinations) override {
    return WriteImpl(batch, request, &destinations);
  }
  std::vector<ForwardEntry> PeekForward(const std::string& destination, size_t max) const override {
    return forward_->Peek(destination, max);
  }
  absl::Status AckForward(const std::string& destination, uint64_t seq) override {
    if (read_only_) return absl::FailedPreconditionError("store is open read-only");
    return forward_->Ack(destination, seq);
  }
  ForwardBacklog ForwardBacklogOf(const std::string& destination) const override {
    return forward_->Backlog(destination);
  }
  std::vector<std::string> ForwardDestinations() const override { return forward_->Destinations(); }
  absl::StatusOr<std::shared_ptr<const ProfileSlice>> Run(const Query& query) const override;
  absl::StatusOr<Timeline> RunTimeline(const Query& query, int bucket_count) const override;
  StoreStats Stats() const override;
  std::vector<std::string> AttributeKeys() const override;
  std::vector<std::string> AttributeValues(std::string_view key, size_t max) const override;
  std::vector<std::vector<std::string>> AttributeCombinations(const std::vector<std::string>& keys,
                                                              size_t max) const override;
  absl::Status AppendLog(LogLevel level, std::string_view message) override;
  std::vector<LogEntry> ReadLog(size_t max) const override;
  absl::Status Flush() override;
  absl::Status Compact() override;
  absl::StatusOr<RetentionReport> ApplyRetention(int64_t now_ns) override;
  absl::StatusOr<uint64_t> Summarize() override;
  absl::StatusOr<ForgetReport> ForgetUnused() override;
  void SetRetention(std::chrono::nanoseconds age, uint64_t size_bytes) override;
  absl::Status AddDataLoss(const DataLossCounts& counts) override {
    if (read_only_) return absl::FailedPreconditionError("store is open read-only");
    return losses_->Add(counts);
  }
  DataLossCounts DataLossTotals() const override { return losses_->Totals(); }
  absl::Status PutSymbols(const std::vector<std::string>& keys, SymbolTable table,
                          const SymbolStatus& status) override {
    if (read_only_) return absl::FailedPreconditionError("store is open read-only");
    return symbols_->Put(keys, std::move(table), status);
  }
  absl::Status PutSymbolStatus(const std::vector<std::string>& keys, const SymbolStatus& status,
                               bool drop_table) override {
    if (read_only_) return absl::FailedPreconditionError("store is open read-only");
    return symbols_->PutStatus(keys, status, drop_table);
  }
  std::vector<std::pair<std::string, SymbolStatus>> SymbolStatuses() const override {
    return symbols_->Statuses();
  }
  uint64_t SymbolsVersion() const override { return symbols_->Version(); }
  std::vector<ExecutableInfo> Executables() const override;
  const std::string& directory() const override { return dir_; }
  bool read_only() const override { return read_only_; }

 private:
  absl::Status LoadMeta();
  // Schema 1 kept four fixed sample kinds in a key byte; rewrites its block
  // keys and counters for sample types.
  absl::Status UpgradeFromSchema1();
  // Run() with the dictionary of `epoch` (dict_epoch_ before the scan);
  // Aborted when a forgetting pass renumbered it meanwhile.
  absl::StatusOr<std::shared_ptr<const ProfileSlice>> RunOnce(const Query& query, uint64_t epoch) const;
  // Summarizes one hour of one sample type from a snapshot; stored unless
  // a write or retention touched the hour meanwhile.
  absl::Status BuildSummary(uint32_t sample_type, int64_t hour);
  // Under write_mutex_: the summaries of these hours are out of date (a
  // write or deletion in `wb` touches them): deleted in the same batch.
  void InvalidateSummaries(uint32_t sample_type, int64_t first_hour, int64_t last_hour,
                           rocksdb::WriteBatch* wb);
  // Before a write of about `bytes`: the disk guard's answer, logged when
  // it changes.
  absl::Status AdmitWrite(uint64_t bytes);
  // After every successful write (of `bytes` into the WAL): what the
  // settling thread decides from.
  void NoteWrite(uint64_t bytes = 0);
  // PartWriter
  absl::Status Commit(rocksdb::WriteBatch* batch, std::string_view what) override {
    if (absl::Status admitted = AdmitWrite(batch->GetDataSize()); !admitted.ok()) return admitted;
    return CommitAlways(batch, what);
  }
  absl::Status CommitAlways(rocksdb::WriteBatch* batch, std::string_view what) override {
    rocksdb::Status written = db_->Write(rocksdb::WriteOptions(), batch);
    if (!written.ok() && disk_) disk_->NoteWriteError(written.ToString());
    absl::Status s = FromRocks(written, what);
    if (s.ok()) NoteWrite(batch->GetDataSize());
    return s;
  }
  void SettleLoop();
  // The symbol keys of the kept executables of `kept`, for
  // SymbolsPart::ForgetRecords.
  static absl::flat_hash_set<std::string> LiveSymbolKeys(const ProfileDictionary& kept);
  // Visits every stored sample of the query's sample type in its time
  // range that passes its filters, or the summary standing for an hour of
  // them. The range is cut into contiguous time shards scanned side by
  // side, one thread each (a scan is decompression and decoding bound;
  // cores are idle otherwise): `make(stack_count)` makes a shard's state
  // (stack_count bounds every stack id seen), `visit(state, sample)` runs
  // on the shard's thread, and `states` gets them in time order, so
  // merging them in order gives what one sequential scan would.
  //
  // For an hour wholly inside the range with a summary (and
  // `use_summaries`), `visit_summary(state, summary, selector, &buckets)`
  // runs instead of `visit` for its samples: it returns false when the
  // summary lacks what it needs (the hour's samples are then visited), and
  // may list buckets of the hour whose samples must be visited anyway
  // (a timeline bucket edge inside them).
  template <typename State, typename Make, typename Visit, typename VisitSummary>
  absl::Status Scan(const Query& query, bool use_summaries, const Make& make, const Visit& visit,
                    const VisitSummary& visit_summary, std::vector<State>* states) const;

  rocksdb::ColumnFamilyHandle* meta_cf() const { return handles_[0]; }
  rocksdb::ColumnFamilyHandle* blocks_cf() const { return handles_[1]; }
  rocksdb::ColumnFamilyHandle* log_cf() const { return handles_[2]; }
  // Null for a store opened read-only that was written before symbols
  // existed.
  rocksdb::ColumnFamilyHandle* symbols_cf() const { return handles_.size() > 3 ? handles_[3] : nullptr; }
  // Null for a store opened read-only that was written before summaries.
  rocksdb::ColumnFamilyHandle* summaries_cf() const { return handles_.size() > 4 ? handles_[4] : nullptr; }
  // Null for a store opened read-only that was written before forwarding.
  rocksdb::ColumnFamilyHandle* forward_cf() const { return handles_.size() > 5 ? handles_[5] : nullptr; }
  // The span index (store_spans.cpp); null for a store opened read-only
  // that was written before it.
  rocksdb::ColumnFamilyHandle* spans_cf() const { return handles_.size() > 6 ? handles_[6] : nullptr; }
  // Index entries for the blocks of one write: `runs` are (block key, the
  // batch's sample indices in it).
  void IndexSpans(const ProfileBatch& batch, const std::vector<std::pair<std::string, std::vector<uint32_t>>>& runs,
                  rocksdb::WriteBatch* wb) const;
  // The keys of the blocks of `type_id` in buckets [first, end) whose
  // samples may be in the spans `selector` asks for, sorted; nullopt when
  // the index cannot answer (no index, or samples older than it in range).
  std::optional<std::vector<std::string>> IndexedBlocks(const SampleSelector& selector, uint32_t type_id,
                                                        int64_t first, int64_t end, int64_t from_ns,
                                                        const rocksdb::Snapshot* snapshot) const;
  // Samples at or after this time are in the span index (the blocks
  // written before it existed are not); max() when there is none.
  int64_t span_index_since_ns_ = std::numeric_limits<int64_t>::max();
  // Index entries of buckets before this one are dropped at compaction:
  // retention deleted their blocks.
  std::shared_ptr<std::atomic<int64_t>> span_index_floor_ =
      std::make_shared<std::atomic<int64_t>>(std::numeric_limits<int64_t>::min());
  absl::Status OpenSpanIndex();
  mutable std::atomic<uint64_t> blocks_read_{0};
  std::unique_ptr<rocksdb::CompactionFilter> span_index_filter_;  // outlives db_ (declared before it is closed)
  // Write, and with `destinations` the request queued for each.
  absl::Status WriteImpl(const ProfileBatch& batch, std::string_view request,
                         const std::vector<std::string>* destinations);

  const std::string dir_;
  const bool read_only_;
  const StoreOptions options_;
  void TestStep(std::string_view step) const {
    if (options_.test_step) options_.test_step(step);
  }
  rocksdb::DB* db_ = nullptr;

  // Settling (StoreOptions): Unix ns of the last write and of the first
  // write not yet flushed (0 = everything flushed).
  std::atomic<int64_t> last_write_ns_{0};
  std::atomic<int64_t> first_unflushed_ns_{0};
  std::atomic<uint64_t> data_version_{0};
  // Retention's limits and state; its passes cross parts (store_retention.cpp).
  RetentionPart retention_{options_.retention_age, options_.retention_size_bytes};
  // Where the size-limited bytes are (RetentionSizes).
  struct StoreSizes {
    uint64_t directory = 0;     // every file: tables, blobs, WAL, RocksDB's own
    uint64_t wal = 0;           // the write-ahead log files
    uint64_t own = 0;           // RocksDB's other files: LOG, MANIFEST, OPTIONS, ...
    uint64_t dictionary = 0;    // the meta family's live tables and blobs
    uint64_t kept_parts = 0;    // the log's, symbols', summaries' and forward queue's live tables and blobs
    // What retention cannot delete: the other parts, the WAL and RocksDB's
    // files. Not tables on their way in or out (a compaction's outputs
    // before its inputs go, files a reader still holds): they go by
    // themselves, and counting them cut the newest samples to a quarter.
    uint64_t other() const { return kept_parts + wal + own; }
  };
  StoreSizes MeasureDirectory() const;
  // The blocks' bytes at and after bucket `cut` for `types` (RocksDB's
  // approximate sizes of the table files: deleted buckets not counted).
  uint64_t KeptBlockBytes(const std::vector<uint32_t>& types, int64_t cut) const;
  // Stores the problem and logs it once per change.
  void SetRetentionProblem(std::string problem);
  // The first bucket a size pass keeps (min() = none deleted), with the
  // store's sizes as measured now (store_retention.cpp explains).
  absl::StatusOr<int64_t> SizeCut(uint64_t limit, int64_t first_bucket, int64_t last_bucket);
  // The smallest cut that keeps at most `budget` bytes of blocks (the
  // newest bucket always stays), by bisection over measured sizes.
  int64_t CutKeeping(const std::vector<uint32_t>& types, uint64_t budget, int64_t first_bucket,
                     int64_t last_bucket) const;
  // Past the dictionary's memory budget, the cut that deletes the oldest
  // quarter of the kept blocks (forgetting follows); min() when within it.
  int64_t MemoryCut(int64_t first_bucket, int64_t last_bucket);
  // What a retention pass counts from its snapshot, without the write lock.
  struct DeletableCount {
    std::vector<uint64_t> samples_by_type;  // in buckets before the cut
    uint64_t blocks = 0;
    int64_t new_first_ns = std::numeric_limits<int64_t>::max();  // of the first blocks left
  };
  absl::Status CountDeletable(const std::vector<uint32_t>& types, int64_t cut,
                              const rocksdb::Snapshot* snapshot, DeletableCount* out);
  std::unique_ptr<DiskGuard> disk_;  // read-write stores
  std::mutex settle_mu_;
  std::condition_variable settle_cv_;
  bool settle_stop_ = false;  // guarded by settle_mu_
  std::thread settle_thread_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;

  std::mutex write_mutex_;  // serializes Write() and the write half of every pass
  DictionaryPart dictionary_;
  SamplesPart samples_;
  // The parts, made once the families are open (OpenDb).
  std::unique_ptr<SymbolsPart> symbols_;
  std::unique_ptr<LogPart> log_;
  std::unique_ptr<LossesPart> losses_;
  std::unique_ptr<ForwardPart> forward_;

  // Names from symbol tables, per dictionary frame, kept across queries. A
  // live window queries its range again at every new batch, and on a busy
  // host the tables in use (tens of MB each) are more than the table cache
  // holds: each query decoded again the ones the last evicted, a fifth of
  // the window's CPU and swings of 100 MB in its RSS. With the names kept,
  // a query loads a table only for frames it has not named before. Valid
  // for one dictionary epoch and symbols version; emptied past kMaxFrames.
  struct NamedFrames {
    static constexpr size_t kMaxFrames = size_t{1} << 18;  // about 30 MB of names at most
    struct Name {
      std::string_view function, file;  // views into `strings`
      int64_t line = 0;
    };
    std::mutex mu;  // held by a query while it maps its frames
    uint64_t epoch = std::numeric_limits<uint64_t>::max();
    uint64_t symbols_version = std::numeric_limits<uint64_t>::max();
    uint64_t renames_version = std::numeric_limits<uint64_t>::max();
    // Innermost first, as SymbolTable::Lookup gives them; empty: no name.
    absl::flat_hash_map<uint32_t, std::vector<Name>> frames;
    std::unordered_set<std::string> strings;  // node-based: views into it stay valid
  };
  mutable NamedFrames named_frames_;

  SummariesPart summaries_;
  std::mutex summarize_mutex_;  // one Summarize() or ForgetUnused() at a time
  std::atomic<bool> stopping_{false};
};

}  // namespace kiln::storage::store_internal
