// pprof (perftools.profiles.Profile) importer. Decodes the wire format by
// hand instead of through the generated message: it is the hot path of the
// import benchmark and it can say at which byte a file breaks.
//
// Semantics (from pprof's profile.proto documentation):
// - sample values: one per sample_type; each type becomes samples of its
//   own sample type (zero values dropped), or only ImportOptions::sample_type
//   when set; the one to show first is default_sample_type (a string index
//   of a type name), else the last sample type, as pprof chooses;
// - period_type and period describe every sample type;
// - Sample.location_id is leaf first; Location.line[0] is the innermost
//   inlined function and the last line is the caller;
// - string labels and numeric labels become attributes;
// - time_nanos is the profile's start; samples have no time of their own.
//
// How it is fast (a 115 MB profile, 1.5 M samples, 1.1 M distinct stacks):
// - two threads for large inputs: one decodes the tables (strings,
//   mappings, functions, locations) and turns locations into frames, the
//   calling thread meanwhile walks the samples;
// - samples are deduplicated on the raw bytes of their packed location ids
//   in that single walk (no id is decoded, nothing is allocated per
//   sample), with hash-slot prefetching a few samples ahead;
// - only then is each distinct stack decoded once and mapped to frames
//   through one dense id -> frame table;
// - labels are deduplicated as raw bytes and resolved once per distinct set.
//
// [SECTION] Helpers: varints, hash, tables
// [SECTION] Decoder state
// [SECTION] Tables thread: strings, mappings, functions, locations -> frames
// [SECTION] Samples thread: one walk, stacks deduplicated on raw bytes
// [SECTION] After both: sample type, values, stacks -> frames, labels
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <system_error>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "ingest/capture/batch_builder.h"
#include "ingest/capture/importers.h"
#include "ingest/capture/wire_reader.h"

namespace kiln::capture {
namespace {

constexpr uint32_t kUnset = UINT32_MAX;
// Below this many bytes one thread does everything (a thread costs more).
// Fuzzing builds take the two-thread path on small inputs too.
#ifdef KILN_CAPTURE_FUZZING
constexpr size_t kParallelBytes = 256;
#else
constexpr size_t kParallelBytes = 4 << 20;
#endif

// ============================================================================
// [SECTION] Helpers: varints, hash, tables
// ============================================================================

// Runs `second` on a thread of its own while `first` runs on this one (one
// after the other when no thread can be started). An allocation failure
// on the other thread becomes its status instead of std::terminate.
template <typename First, typename Second>
void BothAtOnce(First&& first, Second&& second, absl::Status* second_status) {
  auto guarded = [&] {
    try {
      *second_status = second();
    } catch (const std::bad_alloc&) {
      *second_status = absl::ResourceExhaustedError("out of memory");
    }
  };
  std::thread t;
  try {
    t = std::thread(guarded);
  } catch (const std::system_error&) {
    first();
    guarded();
    return;
  }
  first();
  t.join();
}

// A varint at p, bounded by end, as strict as WireReader::Varint. Returns
// the byte after it, or nullptr (the caller then takes the slow path,
// which produces the error message).
inline const uint8_t* ReadVarint(const uint8_t* p, const uint8_t* end, uint64_t* v) {
  if (p < end && *p < 0x80) {
    *v = *p;
    return p + 1;
  }
  uint64_t r = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (p >= end) return nullptr;
    uint8_t b = *p++;
    if (shift == 63 && b > 1) return nullptr;
    r |= uint64_t{b & 0x7fu} << shift;
    if (b < 0x80) {
      *v = r;
      return p;
    }
  }
  return nullptr;
}

inline uint64_t Load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline uint64_t Load32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint64_t Mix(uint64_t a, uint64_t b) {
  __uint128_t r = static_cast<__uint128_t>(a) * b;
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}

// wyhash-style hash of short byte strings (packed location ids are 10-100
// bytes): a multiply per 16 bytes, inlined. Not for adversarial keys, but
// collisions only cost probes here, never correctness.
inline uint64_t HashBytes(const uint8_t* p, size_t n) {
  constexpr uint64_t k0 = 0xa0761d6478bd642full, k1 = 0xe7037ed1a0b428dbull, k2 = 0x8ebc6af09c88c6e3ull;
  uint64_t seed = k0 ^ n;
  uint64_t a = 0, b = 0;
  if (n <= 16) {
    if (n >= 4) {
      size_t m = (n >> 3) << 2;
      a = (Load32(p) << 32) | Load32(p + m);
      b = (Load32(p + n - 4) << 32) | Load32(p + n - 4 - m);
    } else if (n > 0) {
      a = (uint64_t{p[0]} << 16) | (uint64_t{p[n >> 1]} << 8) | p[n - 1];
    }
  } else {
    size_t i = n;
    while (i > 16) {
      seed = Mix(Load64(p) ^ k1, Load64(p + 8) ^ seed);
      p += 16;
      i -= 16;
    }
    a = Load64(p + i - 16);
    b = Load64(p + i - 8);
  }
  return Mix(k2 ^ n, Mix(a ^ k1, b ^ seed));
}

struct Span {
  std::string_view data;
  uint64_t offset = 0;
};

struct PMapping {
  uint64_t id = 0;
  int64_t filename = 0;
  int64_t build_id = 0;
  uint64_t offset = 0;
};
struct PLine {
  uint64_t function_id = 0;
  int64_t line = 0;
};
struct PLocation {
  uint64_t id = 0;
  uint64_t mapping_id = 0;
  uint64_t address = 0;
  uint32_t first_line = 0;  // into lines_
  uint32_t line_count = 0;
  uint64_t offset = 0;
};
struct PFunction {
  uint64_t id = 0;
  int64_t name = 0;
  int64_t system_name = 0;
  int64_t filename = 0;
  uint64_t offset = 0;
};

// id -> value: a vector for the usual dense ids 1..N, a map otherwise.
class IdTable {
 public:
  void Init(uint64_t max_id, size_t count) {
    dense_ = max_id <= count * 2 + 1024;
    if (dense_) table_.assign(max_id + 1, kUnset);
  }
  void Set(uint64_t id, uint32_t value) {
    if (dense_) {
      table_[id] = value;
    } else {
      map_[id] = value;
    }
  }
  uint32_t Find(uint64_t id) const {
    if (dense_) return id < table_.size() ? table_[id] : kUnset;
    auto it = map_.find(id);
    return it == map_.end() ? kUnset : it->second;
  }
  // The dense table (empty when sparse), for loops that inline the lookup.
  const std::vector<uint32_t>& dense() const { return table_; }
  bool is_dense() const { return dense_; }

 private:
  bool dense_ = true;
  std::vector<uint32_t> table_;
  absl::flat_hash_map<uint64_t, uint32_t> map_;
};

// Stacks by the bytes of their packed location ids. Open addressing, 16-byte
// slots holding 32 bits of the hash (so growing needs no key), the stack and
// where its key is: one cache line per probe, and a key comparison only on
// a hash match. A key is a varint length followed by the bytes, at `pos` in
// the decoder's key space (the input, or an arena for unusual encodings).
class StackTable {
 public:
  struct Slot {
    uint32_t hash32;
    uint32_t stack_plus1;  // 0: empty
    uint64_t pos;
  };
  explicit StackTable(size_t expected) {
    size_t n = 1024;
    while (n < expected + expected / 2) n <<= 1;
    Allocate(n);
  }
  ~StackTable() { std::free(slots_); }
  StackTable(const StackTable&) = delete;
  StackTable& operator=(const StackTable&) = delete;

  void Prefetch(uint64_t hash) const { __builtin_prefetch(&slots_[hash & mask_]); }
  // The slot holding `hash`'s key or the empty slot where it goes.
  template <typename Equal>
  Slot* Find(uint64_t hash, const Equal& key_at) {
    auto h32 = static_cast<uint32_t>(hash);
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      Slot* s = &slots_[i];
      if (s->stack_plus1 == 0) return s;
      if (s->hash32 == h32 && key_at(s->pos)) return s;
    }
  }
  // Fills the empty slot `s` from Find; may grow (invalidating slots).
  void Insert(Slot* s, uint64_t hash, uint32_t stack, uint64_t pos) {
    *s = {static_cast<uint32_t>(hash), stack + 1, pos};
    if (++size_ * 4 > (mask_ + 1) * 3) Grow();
  }

 private:
  void Allocate(size_t n) {
    // calloc: fresh zero pages from the kernel, no memset pass.
    slots_ = static_cast<Slot*>(std::calloc(n, sizeof(Slot)));
    if (slots_ == nullptr) throw std::bad_alloc();
    // Probes land anywhere: 2 MB pages fault a few times, 4 KB ones on
    // nearly every first probe.
    AdviseHugePages(slots_, n * sizeof(Slot));
    mask_ = n - 1;
  }
  void Grow() {
    Slot* old = slots_;
    size_t old_n = mask_ + 1;
    // 32 hash bits place entries in tables of up to 2^32 slots.
    Allocate(old_n * 2);
    for (size_t k = 0; k < old_n; ++k) {
      if (old[k].stack_plus1 == 0) continue;
      size_t i = old[k].hash32 & mask_;
      while (slots_[i].stack_plus1 != 0) i = (i + 1) & mask_;
      slots_[i] = old[k];
    }
    std::free(old);
  }

  Slot* slots_ = nullptr;
  size_t mask_ = 0;
  size_t size_ = 0;
};

// ============================================================================
// [SECTION] Decoder state
// ============================================================================

class PprofDecoder {
 public:
  PprofDecoder(std::string_view data, ParseContext& ctx)
      : data_(data),
        base_(reinterpret_cast<const uint8_t*>(data.data())),
        ctx_(ctx),
        builder_(&ctx.out()->batch) {}

  absl::Status Run();

 private:
  absl::Status WireError(const WireReader& r, std::string_view where) const {
    return ctx_.ErrorAtByte(r.error_offset(), absl::StrCat(Av(where), ": ", r.error()));
  }
  absl::Status CheckString(int64_t index, uint64_t offset, std::string_view field) const;
  uint32_t String(int64_t index);  // pprof string index -> batch string index

  // Tables thread.
  absl::Status ScanTables();
  absl::Status DecodeMapping(const Span& s);
  absl::Status DecodeLocation(const Span& s);
  absl::Status DecodeFunction(const Span& s);
  absl::Status DecodeValueType(const Span& s, int64_t* type, int64_t* unit);
  absl::Status ResolveLocations();
  absl::Status Tables();

  // Samples thread.
  struct ParsedSample {
    uint64_t key_pos;    // varint length + packed ids, in key space
    const uint8_t* key;  // the ids
    uint32_t key_len;
    uint32_t labels;  // provisional label set + 1, or 0
    uint32_t value_count;
  };
  absl::Status ScanSamples();
  bool ParseSampleFast(const uint8_t* b, const uint8_t* e, uint64_t offset, ParsedSample* out);
  // `s` is the sample's payload; `field_offset` where its Profile field
  // starts (what label sets remember, to read the sample again).
  // `all_values` (when not null) gets every value of the sample.
  absl::Status ParseSampleSlow(const Span& s, uint64_t field_offset, ParsedSample* out,
                               std::vector<Span>* labels, std::vector<int64_t>* all_values = nullptr);
  uint32_t LabelSet(absl::string_view key, uint64_t sample_offset);
  const uint8_t* KeyAt(uint64_t pos) const {
    return pos < data_.size() ? base_ + pos
                              : reinterpret_cast<const uint8_t*>(arena_.data()) + (pos - data_.size());
  }
  const uint8_t* KeyEnd(uint64_t pos) const {
    return pos < data_.size() ? base_ + data_.size()
                              : reinterpret_cast<const uint8_t*>(arena_.data()) + arena_.size();
  }
  // The ids of the key at `pos` (its length was checked when it was read).
  const uint8_t* KeyBytes(uint64_t pos, uint64_t* len) const {
    const uint8_t* k = ReadVarint(KeyAt(pos), KeyEnd(pos), len);
    if (k == nullptr || *len > static_cast<uint64_t>(KeyEnd(pos) - k)) {
      *len = 0;
      return KeyEnd(pos);
    }
    return k;
  }
  // Where the payload of the sample whose field starts at `field_offset` is.
  uint64_t PayloadOffset(uint64_t field_offset) const {
    WireReader r(data_.substr(field_offset), field_offset);
    uint32_t field, wire;
    std::string_view payload;
    uint64_t offset = field_offset;
    if (r.NextField(&field, &wire) && r.Bytes(&payload, &offset)) return offset;
    return field_offset;
  }

  // After both.
  // The types to import (all, or the one asked for) and the one to show
  // first, among the file's `types`.
  absl::Status ChooseSampleTypes(const std::vector<storage::SampleType>& types, std::vector<size_t>* imported,
                                 size_t* shown);
  absl::Status ExpandStacks(const std::vector<uint32_t>& order, size_t begin, size_t end,
                            std::vector<uint32_t>* frames, std::vector<uint32_t>* ends);
  absl::Status LocationError(uint32_t stack, uint64_t id) const;
  absl::Status ResolveLabelSet(uint32_t provisional, uint32_t* attrs);
  absl::Status Finish();

  std::string_view data_;
  const uint8_t* base_;
  ParseContext& ctx_;
  BatchBuilder builder_;

  // Written by the tables thread.
  std::vector<std::pair<int64_t, int64_t>> sample_types_;
  std::pair<int64_t, int64_t> period_type_{0, 0};
  int64_t period_ = 0;
  std::vector<PMapping> mappings_;
  std::vector<PLocation> locations_;
  std::vector<PLine> lines_;
  std::vector<PFunction> functions_;
  std::vector<std::string_view> strings_;
  std::vector<uint32_t> string_map_;
  int64_t time_nanos_ = 0;
  int64_t duration_nanos_ = 0;
  int64_t default_sample_type_ = 0;
  // Location id -> its frame (bit 31 clear), or bit 31 | index into
  // multi_frames_ of a location with inlined lines: count, then frames.
  IdTable location_ref_;
  std::vector<uint32_t> multi_frames_;

  // Written by the samples thread. While samples are walked, Sample.time_ns
  // holds the byte offset of the sample's field, Sample.stack the stack's
  // first-seen number and Sample.attribute_set a provisional label set + 1.
  std::vector<uint64_t> stack_pos_;    // key of each stack, in key space
  std::vector<uint32_t> stack_first_;  // its first sample, for messages
  std::string arena_;                  // keys of unusually encoded samples
  size_t sample_count_ = 0;            // every sample, zero values included
  uint32_t first_value_count_ = 0;
  size_t odd_value_count_sample_ = SIZE_MAX;  // first sample with another count
  uint32_t odd_value_count_ = 0;
  uint64_t odd_value_count_offset_ = 0;
  absl::flat_hash_map<std::string, uint32_t> label_sets_;
  struct LabelCacheEntry {
    uint64_t hash = 0;
    const uint8_t* key = nullptr;  // in the input
    size_t len = 0;
    uint32_t id = 0;
  };
  static constexpr size_t kLabelCacheSize = 256;
  LabelCacheEntry label_cache_[kLabelCacheSize];
  std::vector<uint64_t> label_set_sample_;  // provisional set -> a sample's offset
  // Every value of every sample, in sample order (one per sample type each,
  // which Finish checks): all types are imported from one walk.
  std::vector<int64_t> values_;
  uint64_t key_bytes_ = 0;  // of all distinct stacks
};

absl::Status PprofDecoder::CheckString(int64_t index, uint64_t offset, std::string_view field) const {
  if (index < 0 || static_cast<uint64_t>(index) >= strings_.size()) {
    return ctx_.ErrorAtByte(
        offset, absl::StrCat(Av(field), ": string index ", index, " out of range (string_table has ",
                             strings_.size(), " entries)"));
  }
  return absl::OkStatus();
}

uint32_t PprofDecoder::String(int64_t index) {
  uint32_t& slot = string_map_[static_cast<size_t>(index)];
  if (slot == kUnset) slot = builder_.String(strings_[static_cast<size_t>(index)]);
  return slot;
}

// ============================================================================
// [SECTION] Tables thread: strings, mappings, functions, locations -> frames
// ============================================================================

absl::Status PprofDecoder::ScanTables() {
  // Generous (a location takes 10 bytes and more): only the pages used are
  // ever touched, and nothing is copied as the tables grow.
  locations_.reserve(data_.size() / 64 + 16);
  lines_.reserve(data_.size() / 48 + 16);
  AdviseHugePages(locations_.data(), locations_.capacity() * sizeof(PLocation));
  AdviseHugePages(lines_.data(), lines_.capacity() * sizeof(PLine));
  WireReader r(data_, 0);
  uint32_t field, wire;
  while (r.NextField(&field, &wire)) {
    Span s;
    uint64_t v;
    auto need = [&](uint32_t expected) -> absl::Status {
      if (wire != expected) {
        return ctx_.ErrorAtByte(r.field_offset(),
                                absl::StrCat("Profile field ", field, " has wire type ", wire, ", expected ",
                                             expected, " (not a pprof profile, or corrupt)"));
      }
      return absl::OkStatus();
    };
    switch (field) {
      case 1:
      case 2:
      case 3:
      case 4:
      case 5:
      case 6:
      case 11: {
        if (absl::Status st = need(WireReader::kLen); !st.ok()) return st;
        if (!r.Bytes(&s.data, &s.offset)) return WireError(r, "Profile");
        if (field == 1) {
          int64_t t, u;
          if (absl::Status st = DecodeValueType(s, &t, &u); !st.ok()) return st;
          sample_types_.emplace_back(t, u);
        } else if (field == 11) {
          if (absl::Status st = DecodeValueType(s, &period_type_.first, &period_type_.second); !st.ok()) {
            return st;
          }
        } else if (field == 2) {
          if (s.data.size() > UINT32_MAX) return ctx_.ErrorAtByte(s.offset, "Sample larger than 4 GiB");
        } else if (field == 3) {
          if (absl::Status st = DecodeMapping(s); !st.ok()) return st;
        } else if (field == 4) {
          if (absl::Status st = DecodeLocation(s); !st.ok()) return st;
        } else if (field == 5) {
          if (absl::Status st = DecodeFunction(s); !st.ok()) return st;
        } else if (field == 6) {
          strings_.push_back(s.data);
        }
        break;
      }
      case 9:
      case 10:
      case 12:
      case 14:
        if (absl::Status st = need(WireReader::kVarint); !st.ok()) return st;
        if (!r.Varint(&v)) return WireError(r, "Profile");
        if (field == 12) period_ = static_cast<int64_t>(v);
        if (field == 9) time_nanos_ = static_cast<int64_t>(v);
        if (field == 10) duration_nanos_ = static_cast<int64_t>(v);
        if (field == 14) default_sample_type_ = static_cast<int64_t>(v);
        break;
      default:
        if (!r.Skip(wire)) return WireError(r, "Profile");
    }
  }
  if (r.error() != nullptr) return WireError(r, "Profile");
  return absl::OkStatus();
}

absl::Status PprofDecoder::DecodeValueType(const Span& s, int64_t* type, int64_t* unit) {
  WireReader r(s.data, s.offset);
  *type = *unit = 0;
  uint32_t field, wire;
  while (r.NextField(&field, &wire)) {
    uint64_t v;
    if ((field == 1 || field == 2) && wire == WireReader::kVarint) {
      if (!r.Varint(&v)) break;
      (field == 1 ? *type : *unit) = static_cast<int64_t>(v);
    } else if (!r.Skip(wire)) {
      break;
    }
  }
  if (r.error() != nullptr) return WireError(r, "ValueType");
  return absl::OkStatus();
}

absl::Status PprofDecoder::DecodeMapping(const Span& s) {
  WireReader r(s.data, s.offset);
  PMapping m;
  m.offset = s.offset;
  uint32_t field, wire;
  while (r.NextField(&field, &wire)) {
    uint64_t v;
    if (wire == WireReader::kVarint && (field == 1 || field == 5 || field == 6)) {
      if (!r.Varint(&v)) break;
      if (field == 1) m.id = v;
      if (field == 5) m.filename = static_cast<int64_t>(v);
      if (field == 6) m.build_id = static_cast<int64_t>(v);
    } else if (!r.Skip(wire)) {
      break;
    }
  }
  if (r.error() != nullptr) return WireError(r, "Mapping");
  mappings_.push_back(m);
  return absl::OkStatus();
}

absl::Status PprofDecoder::DecodeLocation(const Span& s) {
  WireReader r(s.data, s.offset);
  PLocation loc;
  loc.offset = s.offset;
  loc.first_line = static_cast<uint32_t>(lines_.size());
  uint32_t field, wire;
  while (r.NextField(&field, &wire)) {
    uint64_t v;
    if (wire == WireReader::kVarint && field >= 1 && field <= 3) {
      if (!r.Varint(&v)) break;
      if (field == 1) loc.id = v;
      if (field == 2) loc.mapping_id = v;
      if (field == 3) loc.address = v;
    } else if (field == 4 && wire == WireReader::kLen) {
      Span ls;
      if (!r.Bytes(&ls.data, &ls.offset)) break;
      WireReader lr(ls.data, ls.offset);
      PLine line;
      uint32_t lf, lw;
      while (lr.NextField(&lf, &lw)) {
        uint64_t lv;
        if (lw == WireReader::kVarint && (lf == 1 || lf == 2)) {
          if (!lr.Varint(&lv)) break;
          if (lf == 1) line.function_id = lv;
          if (lf == 2) line.line = static_cast<int64_t>(lv);
        } else if (!lr.Skip(lw)) {
          break;
        }
      }
      if (lr.error() != nullptr) return WireError(lr, "Location.line");
      lines_.push_back(line);
    } else if (!r.Skip(wire)) {
      break;
    }
  }
  if (r.error() != nullptr) return WireError(r, "Location");
  if (loc.id == 0) return ctx_.ErrorAtByte(s.offset, "Location.id is 0 (ids must be nonzero)");
  loc.line_count = static_cast<uint32_t>(lines_.size()) - loc.first_line;
  locations_.push_back(loc);
  return absl::OkStatus();
}

absl::Status PprofDecoder::DecodeFunction(const Span& s) {
  WireReader r(s.data, s.offset);
  PFunction f;
  f.offset = s.offset;
  uint32_t field, wire;
  while (r.NextField(&field, &wire)) {
    uint64_t v;
    if (wire == WireReader::kVarint && field >= 1 && field <= 4) {
      if (!r.Varint(&v)) break;
      if (field == 1) f.id = v;
      if (field == 2) f.name = static_cast<int64_t>(v);
      if (field == 3) f.system_name = static_cast<int64_t>(v);
      if (field == 4) f.filename = static_cast<int64_t>(v);
    } else if (!r.Skip(wire)) {
      break;
    }
  }
  if (r.error() != nullptr) return WireError(r, "Function");
  if (f.id == 0) return ctx_.ErrorAtByte(s.offset, "Function.id is 0 (ids must be nonzero)");
  functions_.push_back(f);
  return absl::OkStatus();
}

absl::Status PprofDecoder::ResolveLocations() {
  auto max_id = [](const auto& items) {
    uint64_t m = 0;
    for (const auto& t : items) m = std::max<uint64_t>(m, t.id);
    return m;
  };
  IdTable mapping_index, function_index;
  mapping_index.Init(max_id(mappings_), mappings_.size());
  for (uint32_t i = 0; i < mappings_.size(); ++i) mapping_index.Set(mappings_[i].id, i);
  function_index.Init(max_id(functions_), functions_.size());
  for (uint32_t i = 0; i < functions_.size(); ++i) function_index.Set(functions_[i].id, i);

  // Per mapping: its executable and the frame type of its locations.
  std::vector<uint32_t> mapping_executable(mappings_.size(), 0);
  std::vector<storage::FrameType> mapping_type(mappings_.size(), storage::FrameType::kNative);
  for (size_t i = 0; i < mappings_.size(); ++i) {
    const PMapping& m = mappings_[i];
    if (absl::Status s = CheckString(m.filename, m.offset, "Mapping.filename"); !s.ok()) return s;
    if (absl::Status s = CheckString(m.build_id, m.offset, "Mapping.build_id"); !s.ok()) return s;
    std::string_view file = strings_[static_cast<size_t>(m.filename)];
    if (file.substr(0, 7) == "[kernel" || file.find("vmlinux") != std::string_view::npos) {
      mapping_type[i] = storage::FrameType::kKernel;
    } else if (file == "[jit]" || (file.substr(0, 10) == "/tmp/perf-" && file.size() > 14 &&
                                   file.substr(file.size() - 4) == ".map")) {
      mapping_type[i] = storage::FrameType::kJit;
    }
    if (m.filename == 0 && m.build_id == 0) continue;
    if (m.build_id == 0 && (file == "[kernel.kallsyms]" || file == "[jit]")) continue;
    storage::Executable e;
    e.file_name = String(m.filename);
    e.gnu_build_id = String(m.build_id);
    mapping_executable[i] = builder_.Executable(e);
  }
  // Per function: its name and file strings.
  std::vector<std::pair<uint32_t, uint32_t>> function_strings(functions_.size());
  // Go, Python, Java... code says what it is through its source files.
  std::vector<storage::FrameType> function_type(functions_.size(), storage::FrameType::kUnknown);
  for (size_t i = 0; i < functions_.size(); ++i) {
    const PFunction& f = functions_[i];
    if (absl::Status s = CheckString(f.name, f.offset, "Function.name"); !s.ok()) return s;
    if (absl::Status s = CheckString(f.system_name, f.offset, "Function.system_name"); !s.ok()) return s;
    if (absl::Status s = CheckString(f.filename, f.offset, "Function.filename"); !s.ok()) return s;
    function_strings[i] = {String(f.name != 0 ? f.name : f.system_name), String(f.filename)};
    function_type[i] = storage::FrameTypeOfSourceFile(strings_[static_cast<size_t>(f.filename)]);
  }

  // A line's function gives the frame its name and file.
  auto name_frame = [&](const PLocation& loc, const PLine& line, storage::Frame* frame) -> absl::Status {
    if (line.function_id == 0) return absl::OkStatus();
    uint32_t fi = function_index.Find(line.function_id);
    if (fi == kUnset) {
      return ctx_.ErrorAtByte(loc.offset,
                              absl::StrCat("Location ", loc.id, ": line function_id ", line.function_id,
                                           " does not exist (", functions_.size(), " functions)"));
    }
    std::tie(frame->function, frame->file) = function_strings[fi];
    // Kernel and JIT mappings keep their type; code in an executable is
    // native unless its source file says another language.
    if (frame->type == storage::FrameType::kNative && function_type[fi] != storage::FrameType::kUnknown) {
      frame->type = function_type[fi];
    }
    return absl::OkStatus();
  };
  location_ref_.Init(max_id(locations_), locations_.size());
  auto& frames = ctx_.out()->batch.dict.frames;
  frames.reserve(frames.size() + lines_.size() + locations_.size());
  for (const PLocation& loc : locations_) {
    uint32_t executable = 0;
    storage::FrameType type = storage::FrameType::kNative;
    if (loc.mapping_id != 0) {
      uint32_t m = mapping_index.Find(loc.mapping_id);
      if (m == kUnset) {
        return ctx_.ErrorAtByte(loc.offset,
                                absl::StrCat("Location ", loc.id, ": mapping_id ", loc.mapping_id,
                                             " does not exist (", mappings_.size(), " mappings)"));
      }
      executable = mapping_executable[m];
      type = mapping_type[m];
    }
    storage::Frame f;
    f.executable = executable;
    f.address = loc.address;
    f.type = type;
    if (loc.line_count <= 1) {
      if (loc.line_count == 1) {
        const PLine& line = lines_[loc.first_line];
        f.line = line.line;
        if (absl::Status s = name_frame(loc, line, &f); !s.ok()) return s;
      }
      // Locations are unique by id already; identical twins are rare and
      // harmless (the store interns frames), so skip hashing a million frames.
      location_ref_.Set(loc.id, builder_.AppendFrame(f));
      continue;
    }
    // The last line is the caller (outermost): it comes first, root first.
    location_ref_.Set(loc.id, 0x80000000u | static_cast<uint32_t>(multi_frames_.size()));
    multi_frames_.push_back(loc.line_count);
    for (uint32_t k = loc.line_count; k-- > 0;) {
      const PLine& line = lines_[loc.first_line + k];
      storage::Frame g = f;
      g.line = line.line;
      g.inlined = k != loc.line_count - 1;
      if (absl::Status s = name_frame(loc, line, &g); !s.ok()) return s;
      multi_frames_.push_back(builder_.AppendFrame(g));
    }
  }
  if (frames.size() >= 0x80000000u) return ctx_.ErrorAtByte(0, "more than 2^31 frames");
  return absl::OkStatus();
}

absl::Status PprofDecoder::Tables() {
  if (absl::Status s = ScanTables(); !s.ok()) return s;
  if (strings_.empty() || !strings_[0].empty()) {
    return ctx_.ErrorAtByte(0,
                            "string_table is empty or its first entry is not \"\" "
                            "(not a pprof profile, or corrupt)");
  }
  string_map_.assign(strings_.size(), kUnset);
  string_map_[0] = 0;
  for (auto [t, u] : sample_types_) {
    if (absl::Status s = CheckString(t, 0, "sample_type.type"); !s.ok()) return s;
    if (absl::Status s = CheckString(u, 0, "sample_type.unit"); !s.ok()) return s;
  }
  if (absl::Status s = CheckString(period_type_.first, 0, "period_type.type"); !s.ok()) return s;
  if (absl::Status s = CheckString(period_type_.second, 0, "period_type.unit"); !s.ok()) return s;
  return ResolveLocations();
}

// ============================================================================
// [SECTION] Samples thread: one walk, stacks deduplicated on raw bytes
// ============================================================================

// The layout every known writer emits: packed location ids, packed values,
// labels last and contiguous. Anything else (or anything broken) returns
// false and the caller takes the slow path.
bool PprofDecoder::ParseSampleFast(const uint8_t* b, const uint8_t* e, uint64_t offset, ParsedSample* out) {
  const uint8_t* q = b;
  const uint8_t* key_len_at = nullptr;
  const uint8_t* labels_begin = nullptr;
  const uint8_t* labels_end = nullptr;
  uint32_t count = 0;
  uint64_t len, v;
  while (q < e) {
    const uint8_t tag = *q;
    const uint8_t* field = q;
    ++q;
    switch (tag) {
      case 0x0a:  // location_id, packed
        if (key_len_at != nullptr || labels_begin != nullptr) return false;
        key_len_at = q;
        q = ReadVarint(q, e, &len);
        if (q == nullptr || len > static_cast<uint64_t>(e - q) || len >= (1u << 31)) return false;
        out->key = q;
        out->key_len = static_cast<uint32_t>(len);
        q += len;
        break;
      case 0x12: {  // value, packed
        if (labels_begin != nullptr) return false;
        q = ReadVarint(q, e, &len);
        if (q == nullptr || len > static_cast<uint64_t>(e - q)) return false;
        const uint8_t* ve = q + len;
        while (q < ve) {
          q = ReadVarint(q, ve, &v);
          if (q == nullptr) return false;
          values_.push_back(static_cast<int64_t>(v));
          ++count;
        }
        break;
      }
      case 0x10:  // value
        if (labels_begin != nullptr) return false;
        q = ReadVarint(q, e, &v);
        if (q == nullptr) return false;
        values_.push_back(static_cast<int64_t>(v));
        ++count;
        break;
      case 0x1a:  // label
        q = ReadVarint(q, e, &len);
        if (q == nullptr || len > static_cast<uint64_t>(e - q)) return false;
        q += len;
        if (labels_begin == nullptr) labels_begin = field;
        labels_end = q;
        break;
      default:
        return false;
    }
  }
  if (key_len_at == nullptr) {
    // No location ids: the empty stack; its key is the arena's first byte.
    out->key_pos = data_.size();
    out->key = KeyAt(out->key_pos) + 1;
    out->key_len = 0;
  } else {
    out->key_pos = static_cast<uint64_t>(key_len_at - base_);
  }
  out->value_count = count;
  out->labels = 0;
  if (labels_begin != nullptr) {
    // Most samples repeat a few label sets: a direct-mapped cache of recent
    // ones (keys in the input) before the map.
    const auto len = static_cast<size_t>(labels_end - labels_begin);
    const uint64_t h = HashBytes(labels_begin, len);
    LabelCacheEntry& c = label_cache_[h & (kLabelCacheSize - 1)];
    if (c.key != nullptr && c.hash == h && c.len == len && std::memcmp(c.key, labels_begin, len) == 0) {
      out->labels = c.id;
    } else {
      out->labels = LabelSet(absl::string_view(reinterpret_cast<const char*>(labels_begin), len), offset);
      c = {h, labels_begin, len, out->labels};
    }
  }
  return true;
}

uint32_t PprofDecoder::LabelSet(absl::string_view key, uint64_t sample_offset) {
  auto it = label_sets_.find(key);
  if (it != label_sets_.end()) return it->second;
  auto id = static_cast<uint32_t>(label_set_sample_.size() + 1);
  label_sets_.emplace(std::string(key), id);
  label_set_sample_.push_back(sample_offset);
  return id;
}

// Any layout, with WireReader's errors. Ids that are not exactly one packed
// field are re-encoded (varint length, packed ids) into the arena.
absl::Status PprofDecoder::ParseSampleSlow(const Span& s, uint64_t field_offset, ParsedSample* out, std::vector<Span>* labels,
                                           std::vector<int64_t>* all_values) {
  WireReader r(s.data, s.offset);
  std::string ids;  // packed, canonical
  int packed_fields = 0;
  bool unpacked = false;
  std::string_view packed;
  uint64_t packed_offset = 0;
  uint32_t count = 0;
  std::string label_key;
  if (labels != nullptr) labels->clear();
  auto append_varint = [&](uint64_t v) {
    while (v >= 0x80) {
      ids.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    ids.push_back(static_cast<char>(v));
  };
  uint32_t field, wire;
  while (r.NextField(&field, &wire)) {
    uint64_t v;
    if (field == 1 && wire == WireReader::kLen) {
      Span p;
      if (!r.Bytes(&p.data, &p.offset)) break;
      ++packed_fields;
      packed = p.data;
      packed_offset = p.offset;
      WireReader pr(p.data, p.offset);
      while (!pr.done()) {
        if (!pr.Varint(&v)) return WireError(pr, "Sample.location_id");
        append_varint(v);
      }
    } else if (field == 1 && wire == WireReader::kVarint) {
      if (!r.Varint(&v)) break;
      append_varint(v);
      unpacked = true;
    } else if (field == 2 && wire == WireReader::kLen) {
      Span p;
      if (!r.Bytes(&p.data, &p.offset)) break;
      WireReader pr(p.data, p.offset);
      while (!pr.done()) {
        if (!pr.Varint(&v)) return WireError(pr, "Sample.value");
        if (all_values != nullptr) all_values->push_back(static_cast<int64_t>(v));
        ++count;
      }
    } else if (field == 2 && wire == WireReader::kVarint) {
      if (!r.Varint(&v)) break;
      if (all_values != nullptr) all_values->push_back(static_cast<int64_t>(v));
      ++count;
    } else if (field == 3 && wire == WireReader::kLen) {
      uint64_t start = r.field_offset();
      Span p;
      if (!r.Bytes(&p.data, &p.offset)) break;
      if (labels != nullptr) labels->push_back(p);
      label_key.append(data_.substr(start, p.offset + p.data.size() - start));
    } else if (!r.Skip(wire)) {
      break;
    }
  }
  if (r.error() != nullptr) return WireError(r, "Sample");
  out->value_count = count;
  out->labels = 0;
  // The bytes are in the input when the length before them is minimal.
  char len_bytes[10];
  size_t len_size = 0;
  for (uint64_t n = packed.size(); len_size == 0 || n > 0; n >>= 7) {
    len_bytes[len_size++] = static_cast<char>((n & 0x7f) | (n >= 0x80 ? 0x80 : 0));
  }
  if (packed_fields == 1 && !unpacked && packed_offset >= len_size &&
      data_.substr(packed_offset - len_size, len_size) == std::string_view(len_bytes, len_size)) {
    out->key_pos = packed_offset - len_size;
    out->key = base_ + packed_offset;
    out->key_len = static_cast<uint32_t>(packed.size());
  } else {
    out->key_pos = data_.size() + arena_.size();
    uint64_t n = ids.size();
    while (n >= 0x80) {
      arena_.push_back(static_cast<char>((n & 0x7f) | 0x80));
      n >>= 7;
    }
    arena_.push_back(static_cast<char>(n));
    arena_.append(ids);
    out->key_len = static_cast<uint32_t>(ids.size());
    out->key = KeyEnd(out->key_pos) - ids.size();
  }
  if (!label_key.empty()) out->labels = LabelSet(label_key, field_offset);
  return absl::OkStatus();
}

absl::Status PprofDecoder::ScanSamples() {
  ImportedCapture* out = ctx_.out();
  std::vector<storage::Sample>& samples = out->batch.samples;
  // Samples take ~40-100 bytes each in real profiles; over-reserving costs
  // only address space.
  samples.reserve(data_.size() / 32 + 16);
  AdviseHugePages(samples.data(), samples.capacity() * sizeof(storage::Sample));
  values_.reserve(data_.size() / 16 + 16);
  AdviseHugePages(values_.data(), values_.capacity() * sizeof(int64_t));
  arena_.push_back('\0');  // the empty stack's key: length 0
  // Generous: only the pages used are ever touched.
  stack_pos_.reserve(data_.size() / 48 + 16);
  stack_first_.reserve(data_.size() / 48 + 16);
  StackTable table(data_.size() / 96);

  // Lookups trail the parse by kDepth samples so that their hash slots
  // have arrived from memory when they are needed.
  constexpr size_t kDepth = 8;
  struct Pending {
    uint64_t hash;
    uint64_t key_pos;
    const uint8_t* key;
    uint32_t key_len;
    uint32_t sample;
  };
  Pending ring[kDepth];
  size_t pending_begin = 0, pending_end = 0;
  auto resolve = [&](const Pending& p) {
    // Keys in the arena may have moved since they were parsed.
    uint64_t key_len = p.key_len;
    const uint8_t* key = p.key_pos < data_.size() ? p.key : KeyBytes(p.key_pos, &key_len);
    auto equal = [&](uint64_t pos) {
      uint64_t len;
      const uint8_t* k = KeyBytes(pos, &len);
      return len == key_len && std::memcmp(k, key, key_len) == 0;
    };
    StackTable::Slot* slot = table.Find(p.hash, equal);
    uint32_t stack;
    if (slot->stack_plus1 != 0) {
      stack = slot->stack_plus1 - 1;
    } else {
      stack = static_cast<uint32_t>(stack_pos_.size());
      stack_pos_.push_back(p.key_pos);
      stack_first_.push_back(p.sample);
      key_bytes_ += key_len;
      table.Insert(slot, p.hash, stack, p.key_pos);
    }
    samples[p.sample].stack = stack;
  };

  WireReader r(data_, 0);
  uint32_t field, wire;
  while (r.NextField(&field, &wire)) {
    if (field != 2 || wire != WireReader::kLen) {
      if (!r.Skip(wire)) return WireError(r, "Profile");
      continue;
    }
    uint64_t field_offset = r.field_offset();
    Span s;
    if (!r.Bytes(&s.data, &s.offset)) return WireError(r, "Profile");
    ParsedSample ps;
    const auto* b = reinterpret_cast<const uint8_t*>(s.data.data());
    const size_t values_mark = values_.size();
    if (!ParseSampleFast(b, b + s.data.size(), field_offset, &ps)) {
      values_.resize(values_mark);  // what the fast path read before it gave up
      if (absl::Status st = ParseSampleSlow(s, field_offset, &ps, nullptr, &values_); !st.ok()) return st;
    }
    if (sample_count_ == 0) first_value_count_ = ps.value_count;
    if (ps.value_count != first_value_count_ && odd_value_count_sample_ == SIZE_MAX) {
      odd_value_count_sample_ = sample_count_;
      odd_value_count_ = ps.value_count;
      odd_value_count_offset_ = s.offset;
    }
    if (sample_count_ >= UINT32_MAX) return ctx_.ErrorAtByte(s.offset, "more than 2^32 samples");
    storage::Sample sample;
    sample.time_ns = static_cast<int64_t>(field_offset);
    sample.attribute_set = ps.labels;
    samples.push_back(sample);

    Pending& p = ring[pending_end++ % kDepth];
    p.hash = HashBytes(ps.key, ps.key_len);
    p.key_pos = ps.key_pos;
    p.key = ps.key;
    p.key_len = ps.key_len;
    p.sample = static_cast<uint32_t>(sample_count_);
    table.Prefetch(p.hash);
    if (pending_end - pending_begin == kDepth) resolve(ring[pending_begin++ % kDepth]);
    ++sample_count_;
    if ((sample_count_ & 4095) == 0) {
      if (absl::Status st = ctx_.Tick(r.offset(), data_.size()); !st.ok()) return st;
    }
  }
  while (pending_begin < pending_end) resolve(ring[pending_begin++ % kDepth]);
  if (r.error() != nullptr) return WireError(r, "Profile");
  return absl::OkStatus();
}

// ============================================================================
// [SECTION] After both: sample type, values, stacks -> frames, labels
// ============================================================================

absl::Status PprofDecoder::ChooseSampleTypes(const std::vector<storage::SampleType>& types,
                                             std::vector<size_t>* imported, size_t* shown) {
  // pprof's rule, as Go's reader applies it: the first type named
  // default_sample_type, else the last.
  const std::string_view default_type =
      default_sample_type_ > 0 && static_cast<uint64_t>(default_sample_type_) < strings_.size()
          ? strings_[static_cast<size_t>(default_sample_type_)]
          : std::string_view();
  *shown = static_cast<size_t>(std::find(types.begin(), types.end(), storage::DefaultSampleType(types, default_type)) -
                               types.begin());
  imported->clear();
  const std::string& wanted = ctx_.options().sample_type;
  if (wanted.empty()) {
    for (size_t i = 0; i < types.size(); ++i) imported->push_back(i);
    return absl::OkStatus();
  }
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i].type == wanted || storage::SampleTypeName(types[i]) == wanted) {
      *shown = i;
      imported->push_back(i);
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(ctx_.name(), ": no sample type \"", wanted, "\" (available: ",
                                                 storage::SampleTypeList(types), ")"));
}

absl::Status PprofDecoder::LocationError(uint32_t stack, uint64_t id) const {
  uint32_t si = stack_first_[stack];
  uint64_t offset = PayloadOffset(static_cast<uint64_t>(ctx_.out()->batch.samples[si].time_ns));
  return ctx_.ErrorAtByte(offset, absl::StrCat("Sample ", si, ": location_id ", id, " does not exist (",
                                               locations_.size(), " locations)"));
}

// Frames of the stacks order[begin, end), root first, appended to `frames`;
// the end of each stack (relative to frames' size at entry) into `ends`.
absl::Status PprofDecoder::ExpandStacks(const std::vector<uint32_t>& order, size_t begin, size_t end,
                                        std::vector<uint32_t>* frames, std::vector<uint32_t>* ends) {
  std::vector<uint32_t> refs;
  const size_t base = frames->size();
  const bool dense = location_ref_.is_dense();
  const uint32_t* table = location_ref_.dense().data();
  const uint64_t table_size = location_ref_.dense().size();
  ends->reserve(ends->size() + (end - begin));
  for (size_t k = begin; k < end; ++k) {
    uint32_t stack = order.empty() ? static_cast<uint32_t>(k) : order[k];
    uint64_t pos = stack_pos_[stack];
    uint64_t len, id;
    const uint8_t* q = KeyBytes(pos, &len);
    const uint8_t* e = q + len;
    // Every id takes at least a byte.
    if (refs.size() < len) refs.resize(len);
    size_t n = 0, total = 0;
    while (q < e) {
      // Ids of up to 3 bytes (2 M locations) unrolled: the loop's hot spot.
      if (q[0] < 0x80) {
        id = q[0];
        q += 1;
      } else if (e - q >= 2 && q[1] < 0x80) {
        id = (q[0] & 0x7fu) | (uint64_t{q[1]} << 7);
        q += 2;
      } else if (e - q >= 3 && q[2] < 0x80) {
        id = (q[0] & 0x7fu) | (uint64_t{q[1] & 0x7fu} << 7) | (uint64_t{q[2]} << 14);
        q += 3;
      } else {
        q = ReadVarint(q, e, &id);
        if (q == nullptr) return ctx_.ErrorAtByte(pos, "Sample.location_id: truncated varint");
      }
      uint32_t ref = dense ? (id < table_size ? table[id] : kUnset) : location_ref_.Find(id);
      if (ref == kUnset) return LocationError(stack, id);
      refs[n++] = ref;
      total += (ref & 0x80000000u) == 0 ? 1 : multi_frames_[ref & 0x7fffffffu];
    }
    // Leaf first in the file, root first in the model.
    const size_t at = frames->size();
    frames->resize(at + total);
    uint32_t* out = frames->data() + at;
    for (size_t i = n; i-- > 0;) {
      uint32_t ref = refs[i];
      if ((ref & 0x80000000u) == 0) {
        *out++ = ref;
      } else {
        const uint32_t* m = &multi_frames_[ref & 0x7fffffffu];
        out = std::copy(m + 1, m + 1 + m[0], out);
      }
    }
    ends->push_back(static_cast<uint32_t>(frames->size() - base));
  }
  return absl::OkStatus();
}

absl::Status PprofDecoder::ResolveLabelSet(uint32_t provisional, uint32_t* attrs) {
  uint64_t offset = label_set_sample_[provisional - 1];
  WireReader r(data_.substr(offset), offset);
  uint32_t field, wire;
  Span s;
  if (!r.NextField(&field, &wire) || !r.Bytes(&s.data, &s.offset)) return WireError(r, "Profile");
  ParsedSample ps;
  std::vector<Span> labels;
  size_t arena_size = arena_.size();
  if (absl::Status st = ParseSampleSlow(s, offset, &ps, &labels); !st.ok()) return st;
  arena_.resize(arena_size);
  std::vector<storage::Attribute> kv;
  for (const Span& l : labels) {
    WireReader lr(l.data, l.offset);
    int64_t lkey = 0, lstr = 0, lnum = 0;
    bool has_num = false;
    uint32_t lf, lw;
    while (lr.NextField(&lf, &lw)) {
      uint64_t v;
      if (lw == WireReader::kVarint && lf >= 1 && lf <= 4) {
        if (!lr.Varint(&v)) break;
        if (lf == 1) lkey = static_cast<int64_t>(v);
        if (lf == 2) lstr = static_cast<int64_t>(v);
        if (lf == 3) {
          lnum = static_cast<int64_t>(v);
          has_num = true;
        }
      } else if (!lr.Skip(lw)) {
        break;
      }
    }
    if (lr.error() != nullptr) return WireError(lr, "Label");
    if (absl::Status st = CheckString(lkey, l.offset, "Label.key"); !st.ok()) return st;
    if (absl::Status st = CheckString(lstr, l.offset, "Label.str"); !st.ok()) return st;
    if (lkey == 0) continue;
    uint32_t value_string = lstr != 0 || !has_num ? String(lstr) : builder_.String(std::to_string(lnum));
    kv.push_back({String(lkey), value_string});
  }
  *attrs = kv.empty() ? 0 : builder_.AttributeSet(std::move(kv));
  return absl::OkStatus();
}

absl::Status PprofDecoder::Finish() {
  ImportedCapture* out = ctx_.out();
  std::vector<storage::Sample>& samples = out->batch.samples;
  if (sample_types_.empty()) {
    if (!samples.empty()) {
      return ctx_.ErrorAtByte(PayloadOffset(static_cast<uint64_t>(samples[0].time_ns)),
                              "profile has samples but no sample_type");
    }
    samples.clear();
    return absl::OkStatus();
  }
  std::vector<storage::SampleType> file_types;
  for (auto [t, u] : sample_types_) {
    file_types.push_back(
        {std::string(strings_[static_cast<size_t>(t)]), std::string(strings_[static_cast<size_t>(u)])});
  }
  std::vector<size_t> imported;
  size_t shown;
  if (absl::Status s = ChooseSampleTypes(file_types, &imported, &shown); !s.ok()) return s;
  // Every sample has one value per sample type.
  if (sample_count_ > 0) {
    size_t bad = SIZE_MAX;
    uint32_t count = 0;
    uint64_t offset = 0;
    if (first_value_count_ != sample_types_.size()) {
      bad = 0;
      count = first_value_count_;
      offset = PayloadOffset(static_cast<uint64_t>(samples[0].time_ns));
    } else if (odd_value_count_sample_ != SIZE_MAX) {
      bad = odd_value_count_sample_;
      count = odd_value_count_;
      offset = odd_value_count_offset_;
    }
    if (bad != SIZE_MAX) {
      return ctx_.ErrorAtByte(
          offset, absl::StrCat("Sample ", bad, " has ", count, " values, expected one per sample_type (",
                               sample_types_.size(), ")"));
    }
  }
  // The values of each imported type, from the walk's record of all of
  // them: sample i's value of type t is values_[i * types + t].
  auto& dict = out->batch.dict;
  const size_t types = sample_types_.size();
  if (values_.size() != samples.size() * types) {
    return ctx_.ErrorAtByte(0, "internal: sample values out of step with the samples");
  }
  std::vector<uint32_t> type_ids(imported.size());
  for (size_t k = 0; k < imported.size(); ++k) {
    type_ids[k] = dict.AddSampleType({file_types[imported[k]],
                                      std::string(strings_[static_cast<size_t>(period_type_.first)]),
                                      std::string(strings_[static_cast<size_t>(period_type_.second)]), period_});
  }
  out->default_sample_type = file_types[shown];
  auto value_of = [&](size_t k, size_t i) { return values_[i * types + imported[k]]; };
  size_t nonzero = 0;  // the typed samples there will be
  for (size_t k = 0; k < imported.size(); ++k) {
    for (size_t i = 0; i < samples.size(); ++i) nonzero += value_of(k, i) != 0;
  }
  const bool any_zero = nonzero != imported.size() * samples.size();

  // Stacks whose samples are zero in every imported type are not kept.
  std::vector<uint32_t> order;  // stacks to expand, when not all
  std::vector<uint32_t> renumber;
  if (any_zero) {
    std::vector<uint8_t> used(stack_pos_.size(), 0);
    for (size_t k = 0; k < imported.size(); ++k) {
      for (size_t i = 0; i < samples.size(); ++i) {
        if (value_of(k, i) != 0) used[samples[i].stack] = 1;
      }
    }
    renumber.assign(stack_pos_.size(), kUnset);
    for (uint32_t i = 0; i < stack_pos_.size(); ++i) {
      if (used[i]) {
        renumber[i] = static_cast<uint32_t>(order.size());
        order.push_back(i);
      }
    }
  }
  const size_t stack_count = any_zero ? order.size() : stack_pos_.size();

  // Stacks -> frames.
  const uint32_t first_stack = static_cast<uint32_t>(dict.StackCount());
  const uint64_t key_bytes = key_bytes_;
  const double per_location =
      locations_.empty() ? 1.0
                         : static_cast<double>(dict.frames.size()) / static_cast<double>(locations_.size());
  const size_t frames_guess = static_cast<size_t>(static_cast<double>(key_bytes) / 2 * per_location) + 16;
  std::vector<uint32_t> ends;
  ends.reserve(stack_count);
  const size_t frames_base = dict.stack_frames.size();
  dict.stack_frames.reserve(frames_base + frames_guess);
  AdviseHugePages(dict.stack_frames.data(), dict.stack_frames.capacity() * sizeof(uint32_t));
  // One thread: two halves (the second copied after the first) took the
  // same wall time on two cores, 6% more CPU and 34 MB more peak RSS.
  if (absl::Status s = ExpandStacks(order, 0, stack_count, &dict.stack_frames, &ends); !s.ok()) return s;
  if (dict.stack_frames.size() > UINT32_MAX) return ctx_.ErrorAtByte(0, "more than 2^32 stack frames");
  dict.stack_offsets.reserve(dict.stack_offsets.size() + ends.size());
  for (uint32_t e : ends) dict.stack_offsets.push_back(static_cast<uint32_t>(frames_base + e));

  // Samples: final stack, attributes and time, then one sample per
  // imported type with a value other than zero, type after type.
  const int64_t time = time_nanos_ != 0 ? time_nanos_ : ctx_.options().anchor_time_ns;
  std::vector<uint32_t> attrs(label_set_sample_.size() + 1, kUnset);
  attrs[0] = 0;
  for (storage::Sample& s : samples) {
    s.time_ns = time;
    s.link = 0;
    if (!renumber.empty()) {
      s.stack = renumber[s.stack];
      if (s.stack == kUnset) continue;  // zero in every type: dropped below
    }
    s.stack += first_stack;
    uint32_t& a = attrs[s.attribute_set];
    if (a == kUnset) {
      if (absl::Status st = ResolveLabelSet(s.attribute_set, &a); !st.ok()) return st;
    }
    s.attribute_set = a;
  }
  std::vector<storage::Sample> typed;
  typed.reserve(nonzero);
  for (size_t k = 0; k < imported.size(); ++k) {
    for (size_t i = 0; i < samples.size(); ++i) {
      const int64_t v = value_of(k, i);
      if (v == 0) continue;
      storage::Sample s = samples[i];
      s.value = v;
      s.sample_type = type_ids[k];
      typed.push_back(s);
    }
  }
  samples = std::move(typed);
  values_ = {};
  return absl::OkStatus();
}

absl::Status PprofDecoder::Run() {
  absl::Status tables, walk;
  if (data_.size() >= kParallelBytes) {
    BothAtOnce([&] { walk = ScanSamples(); }, [&] { return Tables(); }, &tables);
  } else {
    tables = Tables();
    if (tables.ok()) walk = ScanSamples();
  }
  // The tables' errors first: they include every top-level wire error.
  if (!tables.ok()) return tables;
  if (!walk.ok()) return walk;
  if (absl::Status s = Finish(); !s.ok()) return s;
  if (duration_nanos_ < 0) ctx_.Warn(absl::StrCat(ctx_.name(), ": negative duration_nanos"));
  if (time_nanos_ != 0 && duration_nanos_ > 0) {
    ctx_.out()->range_start_ns = time_nanos_;
    ctx_.out()->range_end_ns = time_nanos_ + duration_nanos_;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ImportPprof(std::string_view data, ParseContext& ctx) {
  PprofDecoder decoder(data, ctx);
  return decoder.Run();
}

}  // namespace kiln::capture
