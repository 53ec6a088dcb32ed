// pprof (perftools.profiles.Profile) importer. Decodes the wire format by
// hand instead of through the generated message: it is the hot path of the
// import benchmark (no per-sample allocation, stacks deduplicated on the
// raw packed location ids) and it can say at which byte a file breaks.
//
// Semantics (from pprof's profile.proto documentation):
// - sample values: one per sample_type; the imported one is
//   ImportOptions::sample_type, else default_sample_type (a string index of
//   a type name), else the last sample type;
// - Sample.location_id is leaf first; Location.line[0] is the innermost
//   inlined function and the last line is the caller;
// - string labels and numeric labels become attributes;
// - time_nanos is the profile's start; samples have no time of their own.
//
// [SECTION] Decoded tables
// [SECTION] Pass 1: top-level fields, tables (ScanTop, Decode*)
// [SECTION] Resolution: locations -> frames
// [SECTION] Pass 2: samples -> stacks, attributes, values
#include <charconv>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ingest/capture/batch_builder.h"
#include "ingest/capture/importers.h"
#include "ingest/capture/wire_reader.h"

namespace kiln::capture {
namespace {

constexpr uint32_t kUnset = UINT32_MAX;

// ============================================================================
// [SECTION] Decoded tables
// ============================================================================

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

// id -> position: a vector for the usual dense ids 1..N, a map otherwise.
class IdIndex {
 public:
  template <typename T>
  void Build(const std::vector<T>& items) {
    uint64_t max_id = 0;
    for (const T& t : items) max_id = std::max(max_id, t.id);
    dense_ = max_id <= items.size() * 2 + 1024;
    if (dense_) {
      table_.assign(max_id + 1, kUnset);
      for (uint32_t i = 0; i < items.size(); ++i) table_[items[i].id] = i;
    } else {
      for (uint32_t i = 0; i < items.size(); ++i) map_.emplace(items[i].id, i);
    }
  }
  uint32_t Find(uint64_t id) const {
    if (dense_) return id < table_.size() ? table_[id] : kUnset;
    auto it = map_.find(id);
    return it == map_.end() ? kUnset : it->second;
  }

 private:
  bool dense_ = true;
  std::vector<uint32_t> table_;
  absl::flat_hash_map<uint64_t, uint32_t> map_;
};

// Stack ids by the raw bytes of a sample's packed location ids. Open
// addressing over 8-byte slots (hash tag, entry): a third of the memory of
// a general map, one cache line per probe, and a prefetch hook, because
// with a million distinct stacks every lookup is a cache miss. Keys view
// the input buffer, which outlives the decoder.
class PackedStackIndex {
 public:
  void Reserve(size_t entries) {
    size_t n = 16;
    while (n < entries * 2) n <<= 1;
    slots_.assign(n, 0);
    mask_ = n - 1;
    keys_.reserve(entries);
    stacks_.reserve(entries);
  }
  static uint64_t Hash(absl::string_view key) { return absl::Hash<absl::string_view>{}(key); }
  void Prefetch(uint64_t hash) const { __builtin_prefetch(&slots_[hash & mask_]); }
  // The stack of `key`, or kUnset.
  uint32_t Find(absl::string_view key, uint64_t hash) const {
    const auto tag = static_cast<uint32_t>(hash >> 32);
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      uint64_t slot = slots_[i];
      if (slot == 0) return kUnset;
      if (static_cast<uint32_t>(slot >> 32) == tag) {
        auto entry = static_cast<uint32_t>(slot) - 1;
        if (keys_[entry] == key) return stacks_[entry];
      }
    }
  }
  void Insert(absl::string_view key, uint64_t hash, uint32_t stack) {
    if ((keys_.size() + 1) * 2 > slots_.size()) Grow();
    Place(hash, static_cast<uint32_t>(keys_.size()));
    keys_.push_back(key);
    stacks_.push_back(stack);
  }

 private:
  void Place(uint64_t hash, uint32_t entry) {
    size_t i = hash & mask_;
    while (slots_[i] != 0) i = (i + 1) & mask_;
    slots_[i] = (hash >> 32 << 32) | (uint64_t{entry} + 1);
  }
  void Grow() {
    std::vector<uint64_t> old;
    old.swap(slots_);
    slots_.assign(std::max<size_t>(16, old.size() * 2), 0);
    mask_ = slots_.size() - 1;
    for (uint32_t e = 0; e < keys_.size(); ++e) Place(Hash(keys_[e]), e);
  }

  std::vector<uint64_t> slots_;
  size_t mask_ = 0;
  std::vector<absl::string_view> keys_;
  std::vector<uint32_t> stacks_;
};

class PprofDecoder {
 public:
  PprofDecoder(std::string_view data, ParseContext& ctx)
      : data_(data), ctx_(ctx), builder_(&ctx.out()->batch) {}

  absl::Status Run();

 private:
  absl::Status WireError(const WireReader& r, std::string_view where) const {
    return ctx_.ErrorAtByte(r.error_offset(), absl::StrCat(Av(where), ": ", r.error()));
  }
  absl::Status ScanTop();
  absl::Status DecodeMapping(const Span& s);
  absl::Status DecodeLocation(const Span& s);
  absl::Status DecodeFunction(const Span& s);
  absl::Status DecodeValueType(const Span& s, int64_t* type, int64_t* unit);
  absl::Status CheckString(int64_t index, uint64_t offset, std::string_view field) const;
  uint32_t String(int64_t index);  // pprof string index -> batch string index
  absl::Status ResolveLocations();
  absl::Status DecodeSamples();

  std::string_view data_;
  ParseContext& ctx_;
  BatchBuilder builder_;

  std::vector<std::pair<int64_t, int64_t>> sample_types_;
  // Samples are decoded in a second pass (they usually precede the
  // locations they reference). 16 bytes each: millions of them.
  struct SampleRef {
    uint64_t offset;  // of the payload in data_
    uint32_t size;
    // Length of the packed location ids when they are the sample's first
    // field with a one-byte length (what every known writer emits), found
    // in the first pass so the second can prefetch hash slots ahead; else 0.
    uint32_t packed_ids_size;
    Span span(std::string_view data) const { return {data.substr(offset, size), offset}; }
    absl::string_view packed_ids(std::string_view data) const {
      if (packed_ids_size == 0) return {};
      return Av(data.substr(offset + 2, packed_ids_size));
    }
  };
  std::vector<SampleRef> samples_;
  std::vector<PMapping> mappings_;
  std::vector<PLocation> locations_;
  std::vector<PLine> lines_;
  std::vector<PFunction> functions_;
  std::vector<std::string_view> strings_;
  std::vector<uint32_t> string_map_;
  int64_t time_nanos_ = 0;
  int64_t duration_nanos_ = 0;
  int64_t default_sample_type_ = 0;

  IdIndex mapping_index_, location_index_, function_index_;
  std::vector<uint32_t> mapping_executable_;
  // Frames of each location, root first, in frames_of_ at [offset, offset+count).
  std::vector<uint32_t> location_frames_offset_;
  std::vector<uint32_t> frames_of_;
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
// [SECTION] Pass 1: top-level fields, tables (ScanTop, Decode*)
// ============================================================================

absl::Status PprofDecoder::ScanTop() {
  // Samples take ~40-100 bytes each in real profiles; over-reserving costs
  // only address space.
  samples_.reserve(data_.size() / 32);
  AdviseHugePages(samples_.data(), samples_.capacity() * sizeof(SampleRef));
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
        } else if (field == 2) {
          SampleRef ref{s.offset, static_cast<uint32_t>(s.data.size()), 0};
          if (s.data.size() >= 2 && s.data[0] == 0x0a) {
            auto len = static_cast<uint8_t>(s.data[1]);
            if (len < 0x80 && 2u + len <= s.data.size()) ref.packed_ids_size = len;
          }
          if (s.data.size() > UINT32_MAX) return ctx_.ErrorAtByte(s.offset, "Sample larger than 4 GiB");
          samples_.push_back(ref);
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
      case 14:
        if (absl::Status st = need(WireReader::kVarint); !st.ok()) return st;
        if (!r.Varint(&v)) return WireError(r, "Profile");
        if (field == 9) time_nanos_ = static_cast<int64_t>(v);
        if (field == 10) duration_nanos_ = static_cast<int64_t>(v);
        if (field == 14) default_sample_type_ = static_cast<int64_t>(v);
        break;
      default:
        if (!r.Skip(wire)) return WireError(r, "Profile");
    }
    if (absl::Status st = ctx_.Tick(r.offset(), data_.size()); !st.ok()) return st;
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

// ============================================================================
// [SECTION] Resolution: locations -> frames
// ============================================================================

absl::Status PprofDecoder::ResolveLocations() {
  mapping_index_.Build(mappings_);
  location_index_.Build(locations_);
  function_index_.Build(functions_);

  mapping_executable_.assign(mappings_.size(), 0);
  for (size_t i = 0; i < mappings_.size(); ++i) {
    const PMapping& m = mappings_[i];
    if (absl::Status s = CheckString(m.filename, m.offset, "Mapping.filename"); !s.ok()) return s;
    if (absl::Status s = CheckString(m.build_id, m.offset, "Mapping.build_id"); !s.ok()) return s;
    if (m.filename == 0 && m.build_id == 0) continue;
    std::string_view file = strings_[static_cast<size_t>(m.filename)];
    if (m.build_id == 0 && (file == "[kernel.kallsyms]" || file == "[jit]")) continue;
    storage::Executable e;
    e.file_name = String(m.filename);
    e.gnu_build_id = String(m.build_id);
    mapping_executable_[i] = builder_.Executable(e);
  }
  for (const PFunction& f : functions_) {
    if (absl::Status s = CheckString(f.name, f.offset, "Function.name"); !s.ok()) return s;
    if (absl::Status s = CheckString(f.system_name, f.offset, "Function.system_name"); !s.ok()) return s;
    if (absl::Status s = CheckString(f.filename, f.offset, "Function.filename"); !s.ok()) return s;
  }

  location_frames_offset_.resize(locations_.size() + 1);
  for (size_t i = 0; i < locations_.size(); ++i) {
    const PLocation& loc = locations_[i];
    location_frames_offset_[i] = static_cast<uint32_t>(frames_of_.size());
    uint32_t executable = 0;
    storage::FrameType type = storage::FrameType::kNative;
    if (loc.mapping_id != 0) {
      uint32_t m = mapping_index_.Find(loc.mapping_id);
      if (m == kUnset) {
        return ctx_.ErrorAtByte(loc.offset,
                                absl::StrCat("Location ", loc.id, ": mapping_id ", loc.mapping_id,
                                             " does not exist (", mappings_.size(), " mappings)"));
      }
      executable = mapping_executable_[m];
      std::string_view file = strings_[static_cast<size_t>(mappings_[m].filename)];
      if (file.substr(0, 7) == "[kernel" || file.find("vmlinux") != std::string_view::npos) {
        type = storage::FrameType::kKernel;
      } else if (file == "[jit]" || (file.substr(0, 10) == "/tmp/perf-" && file.size() > 14 &&
                                     file.substr(file.size() - 4) == ".map")) {
        type = storage::FrameType::kJit;
      }
    }
    if (loc.line_count == 0) {
      storage::Frame f;
      f.executable = executable;
      f.address = loc.address;
      f.type = type;
      frames_of_.push_back(builder_.AppendFrame(f));
      continue;
    }
    // The last line is the caller (outermost): it comes first, root first.
    for (uint32_t k = loc.line_count; k-- > 0;) {
      const PLine& line = lines_[loc.first_line + k];
      uint32_t fi = function_index_.Find(line.function_id);
      storage::Frame f;
      f.executable = executable;
      f.address = loc.address;
      f.type = type;
      f.line = line.line;
      f.inlined = k != loc.line_count - 1;
      if (line.function_id != 0) {
        if (fi == kUnset) {
          return ctx_.ErrorAtByte(loc.offset,
                                  absl::StrCat("Location ", loc.id, ": line function_id ", line.function_id,
                                               " does not exist (", functions_.size(), " functions)"));
        }
        const PFunction& fn = functions_[fi];
        f.function = String(fn.name != 0 ? fn.name : fn.system_name);
        f.file = String(fn.filename);
      }
      // Locations are unique by id already; identical twins are rare and
      // harmless (the store interns frames), so skip hashing a million frames.
      frames_of_.push_back(builder_.AppendFrame(f));
    }
  }
  location_frames_offset_[locations_.size()] = static_cast<uint32_t>(frames_of_.size());
  return absl::OkStatus();
}

// ============================================================================
// [SECTION] Pass 2: samples -> stacks, attributes, values
// ============================================================================

absl::Status PprofDecoder::DecodeSamples() {
  ImportedCapture* out = ctx_.out();
  // Which value to import.
  std::vector<std::string> names;
  for (auto [t, u] : sample_types_) {
    names.push_back(
        absl::StrCat(Av(strings_[static_cast<size_t>(t)]), "/", Av(strings_[static_cast<size_t>(u)])));
  }
  out->available_sample_types = names;
  if (sample_types_.empty()) {
    if (!samples_.empty()) {
      return ctx_.ErrorAtByte(samples_[0].offset, "profile has samples but no sample_type");
    }
    return absl::OkStatus();
  }
  size_t chosen = sample_types_.size() - 1;
  const std::string& wanted = ctx_.options().sample_type;
  if (!wanted.empty()) {
    chosen = SIZE_MAX;
    for (size_t i = 0; i < sample_types_.size(); ++i) {
      if (strings_[static_cast<size_t>(sample_types_[i].first)] == wanted || names[i] == wanted) {
        chosen = i;
        break;
      }
    }
    if (chosen == SIZE_MAX) {
      return absl::InvalidArgumentError(absl::StrCat(ctx_.name(), ": no sample type \"", wanted,
                                                     "\" (available: ", absl::StrJoin(names, ", "), ")"));
    }
  } else if (default_sample_type_ > 0 && static_cast<uint64_t>(default_sample_type_) < strings_.size()) {
    for (size_t i = 0; i < sample_types_.size(); ++i) {
      if (sample_types_[i].first == default_sample_type_) chosen = i;
    }
  }
  out->value_description = names[chosen];
  std::string_view type = strings_[static_cast<size_t>(sample_types_[chosen].first)];
  storage::SampleKind kind = storage::SampleKind::kOther;
  if (type == "samples" || type == "cpu") kind = storage::SampleKind::kOnCpu;
  if (type.find("off_cpu") != std::string_view::npos || type.find("offcpu") != std::string_view::npos)
    kind = storage::SampleKind::kOffCpu;
  if (type == "events") kind = storage::SampleKind::kProbe;

  const int64_t time = time_nanos_ != 0 ? time_nanos_ : ctx_.options().anchor_time_ns;
  // Stacks deduplicated on the raw packed location ids: the key views the
  // input buffer (alive for the whole import), so a lookup allocates nothing.
  PackedStackIndex stack_by_packed;
  uint64_t hash_ring[16] = {};                              // hashes of the next samples' packed ids
  absl::flat_hash_map<std::string, uint32_t> stack_by_ids;  // unpacked encodings
  absl::flat_hash_map<std::string, uint32_t> attrs_by_labels;
  std::vector<uint64_t> ids;
  std::string key;
  std::string label_key;
  std::vector<Span> labels;
  out->batch.samples.reserve(samples_.size());
  AdviseHugePages(out->batch.samples.data(), out->batch.samples.capacity() * sizeof(storage::Sample));
  stack_by_packed.Reserve(samples_.size());
  // Upper bound of frames: every location id takes at least one byte.
  uint64_t sample_bytes = 0;
  for (const SampleRef& s : samples_) sample_bytes += s.size;
  out->batch.dict.stack_frames.reserve(
      std::min<uint64_t>(sample_bytes, uint64_t{1} << 31) *
      std::max<size_t>(1, frames_of_.size() / std::max<size_t>(1, locations_.size())));
  AdviseHugePages(out->batch.dict.stack_frames.data(),
                  out->batch.dict.stack_frames.capacity() * sizeof(uint32_t));

  constexpr size_t kPrefetchDistance = 8;
  for (size_t si = 0; si < samples_.size(); ++si) {
    const Span s = samples_[si].span(data_);
    // The table outgrows the caches; each lookup would otherwise wait for
    // memory.
    if (si == 0) {
      for (size_t k = 0; k < kPrefetchDistance && k < samples_.size(); ++k) {
        hash_ring[k & 15] = PackedStackIndex::Hash(samples_[k].packed_ids(data_));
        stack_by_packed.Prefetch(hash_ring[k & 15]);
      }
    }
    if (si + kPrefetchDistance < samples_.size()) {
      uint64_t h = PackedStackIndex::Hash(samples_[si + kPrefetchDistance].packed_ids(data_));
      hash_ring[(si + kPrefetchDistance) & 15] = h;
      stack_by_packed.Prefetch(h);
    }
    WireReader r(s.data, s.offset);
    ids.clear();
    key.clear();
    absl::string_view packed;
    int packed_fields = 0;
    label_key.clear();
    bool packed_ids_only = true;
    size_t value_index = 0;
    int64_t value = 0;
    bool have_value = false;
    uint32_t field, wire;
    labels.clear();
    while (r.NextField(&field, &wire)) {
      uint64_t v;
      if (field == 1 && wire == WireReader::kLen) {
        Span p;
        if (!r.Bytes(&p.data, &p.offset)) break;
        packed = Av(p.data);
        ++packed_fields;
        WireReader pr(p.data, p.offset);
        while (!pr.done()) {
          if (!pr.Varint(&v)) return WireError(pr, "Sample.location_id");
          ids.push_back(v);
        }
      } else if (field == 1 && wire == WireReader::kVarint) {
        if (!r.Varint(&v)) break;
        ids.push_back(v);
        packed_ids_only = false;
      } else if (field == 2 && wire == WireReader::kLen) {
        Span p;
        if (!r.Bytes(&p.data, &p.offset)) break;
        WireReader pr(p.data, p.offset);
        while (!pr.done()) {
          if (!pr.Varint(&v)) return WireError(pr, "Sample.value");
          if (value_index == chosen) {
            value = static_cast<int64_t>(v);
            have_value = true;
          }
          ++value_index;
        }
      } else if (field == 2 && wire == WireReader::kVarint) {
        if (!r.Varint(&v)) break;
        if (value_index == chosen) {
          value = static_cast<int64_t>(v);
          have_value = true;
        }
        ++value_index;
      } else if (field == 3 && wire == WireReader::kLen) {
        Span p;
        if (!r.Bytes(&p.data, &p.offset)) break;
        labels.push_back(p);
        label_key.append(p.data);
        label_key.push_back('\0');
      } else if (!r.Skip(wire)) {
        break;
      }
    }
    if (r.error() != nullptr) return WireError(r, "Sample");
    if (value_index != sample_types_.size()) {
      return ctx_.ErrorAtByte(
          s.offset, absl::StrCat("Sample ", si, " has ", value_index,
                                 " values, expected one per sample_type (", sample_types_.size(), ")"));
    }
    if (!have_value || value == 0) continue;

    // Stack: deduplicated on the raw ids.
    uint32_t stack = kUnset;
    uint64_t packed_hash = 0;
    bool use_packed = packed_ids_only && packed_fields <= 1;
    if (use_packed) {
      // The first pass found the same bytes unless the sample's layout was
      // unusual (ids not first, or a long length prefix).
      absl::string_view first_pass = samples_[si].packed_ids(data_);
      packed_hash = packed.data() == first_pass.data() && packed.size() == first_pass.size()
                        ? hash_ring[si & 15]
                        : PackedStackIndex::Hash(packed);
      stack = stack_by_packed.Find(packed, packed_hash);
    } else {
      key.assign(reinterpret_cast<const char*>(ids.data()), ids.size() * sizeof(uint64_t));
      auto it = stack_by_ids.find(key);
      if (it != stack_by_ids.end()) stack = it->second;
    }
    if (stack == kUnset) {
      std::vector<uint32_t>& frames = out->batch.dict.stack_frames;
      size_t frames_before = frames.size();
      for (size_t k = ids.size(); k-- > 0;) {
        uint32_t li = location_index_.Find(ids[k]);
        if (li == kUnset) {
          frames.resize(frames_before);
          return ctx_.ErrorAtByte(s.offset,
                                  absl::StrCat("Sample ", si, ": location_id ", ids[k], " does not exist (",
                                               locations_.size(), " locations)"));
        }
        uint32_t b = location_frames_offset_[li], e = location_frames_offset_[li + 1];
        if (e == b + 1) {
          frames.push_back(frames_of_[b]);  // the common case: no inlining
        } else {
          frames.insert(frames.end(), frames_of_.begin() + b, frames_of_.begin() + e);
        }
      }
      // Frames were appended in place; close the stack.
      auto& offsets = out->batch.dict.stack_offsets;
      stack = static_cast<uint32_t>(offsets.size() - 1);
      offsets.push_back(static_cast<uint32_t>(frames.size()));
      if (use_packed) {
        stack_by_packed.Insert(packed, packed_hash, stack);
      } else {
        stack_by_ids.emplace(key, stack);
      }
    }

    uint32_t attrs = 0;
    if (!labels.empty()) {
      auto lit = attrs_by_labels.find(label_key);
      if (lit != attrs_by_labels.end()) {
        attrs = lit->second;
      } else {
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
          uint32_t value_string =
              lstr != 0 || !has_num ? String(lstr) : builder_.String(std::to_string(lnum));
          kv.push_back({String(lkey), value_string});
        }
        attrs = builder_.AttributeSet(std::move(kv));
        attrs_by_labels.emplace(label_key, attrs);
      }
    }
    storage::Sample sample;
    sample.time_ns = time;
    sample.stack = stack;
    sample.attribute_set = attrs;
    sample.kind = kind;
    sample.value = value;
    out->batch.samples.push_back(sample);
    if ((si & 4095) == 0) {
      if (absl::Status st = ctx_.Tick(data_.size() / 2 + s.offset / 2, data_.size()); !st.ok()) return st;
    }
  }
  return absl::OkStatus();
}

absl::Status PprofDecoder::Run() {
  if (absl::Status s = ScanTop(); !s.ok()) return s;
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
  if (absl::Status s = ResolveLocations(); !s.ok()) return s;
  if (absl::Status s = DecodeSamples(); !s.ok()) return s;
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
