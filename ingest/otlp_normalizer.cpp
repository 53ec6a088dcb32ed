// OTLP Export request -> ProfileBatch.
//
// [SECTION] Helpers: bounds, stringified attribute values
// [SECTION] Normalizer: validation (memoized per dictionary entry)
// [SECTION] Normalizer: emission (dictionary entries mapped once, cached)
// [SECTION] Entry point
//
// Two passes per profile. Validation walks every index the profile reaches
// and memoizes the verdict per dictionary entry, so a stack shared by 1,000
// samples is checked once. Only a profile that passed is emitted; emission
// maps each OTLP dictionary entry (string, mapping, location -> frames,
// stack, attribute combination) to batch indices the first time it is used
// and reuses the mapping afterwards, so a sample costs a few array lookups
// and one small hash probe, and no allocation. Because emission happens only
// for accepted profiles, entries used only by rejected profiles never reach
// the batch.
#include "ingest/otlp_normalizer.h"

#include <algorithm>
#include <cmath>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "ingest/message_text.h"
#include "storage/model/sampling.h"

namespace kiln::ingest {

namespace {

namespace collector = opentelemetry::proto::collector::profiles::v1development;
namespace otlp = opentelemetry::proto::profiles::v1development;
namespace common = opentelemetry::proto::common::v1;
using storage::Attribute;

constexpr uint32_t kUnmapped = UINT32_MAX;
// Keep the response readable: the first few reasons, then a count.
constexpr int kMaxReportedErrors = 5;

// Budgets for one request's batch. OTLP's dictionary lets a few input bytes
// expand a lot (a stack naming a location of 1,000 inline lines, resource
// attributes copied into every attribute set), so without them a 64 MiB
// request could ask for gigabytes. Honest agent requests of 64 MiB stay far
// below: about 3 M samples, 5 M stack frames, 1 M attributes.
constexpr size_t kMaxBatchSamples = 8 << 20;       // x 32 bytes
constexpr size_t kMaxBatchFrames = 4 << 20;        // x 40 bytes
constexpr size_t kMaxBatchStackFrames = 32 << 20;  // x 4 bytes
constexpr size_t kMaxBatchAttributes = 8 << 20;    // x 8 bytes
// Deepest stack after inline expansion (Linux perf stops at 127 by default;
// deep JVM recursion reaches thousands).
constexpr int64_t kMaxStackDepth = 1 << 16;

constexpr std::string_view kFrameTypeKey = "profile.frame.type";
constexpr std::string_view kHtlhashKey = "process.executable.build_id.htlhash";
constexpr std::string_view kGnuBuildIdKey = "process.executable.build_id.gnu";
constexpr std::string_view kGoBuildIdKey = "process.executable.build_id.go";

// ============================================================================
// [SECTION] Helpers: bounds, stringified attribute values
// ============================================================================

// Index 0 of every OTLP table is the empty element by convention, so 0 is
// valid even when a sender leaves the table empty.
inline bool InRange(int64_t index, int size) { return index == 0 || (index > 0 && index < size); }

// The entry at a checked index, or the default (empty) element for 0 in an
// empty table.
template <typename T>
const T& At(const google::protobuf::RepeatedPtrField<T>& table, int64_t index) {
  return index < table.size() ? table.Get(static_cast<int>(index)) : T::default_instance();
}

std::string OutOfRange(std::string_view field, int64_t index, std::string_view table, int size) {
  return Cat(field, " ", index, " out of range (", table, " has ", size, " entries)");
}

void AppendHex(std::string_view bytes, std::string* out) {
  static constexpr char kDigits[] = "0123456789abcdef";
  for (unsigned char c : bytes) {
    out->push_back(kDigits[c >> 4]);
    out->push_back(kDigits[c & 15]);
  }
}

void AppendJsonString(std::string_view s, std::string* out) {
  out->push_back('"');
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out->append(buf);
    } else {
      out->push_back(c);
    }
  }
  out->push_back('"');
}

using StringTable = google::protobuf::RepeatedPtrField<std::string>;

// Entry `i` of the request's string table; "" for 0 and for indices out of
// range (those are rejected before anything is emitted).
std::string_view TableString(const StringTable& strings, int64_t i) {
  return i > 0 && i < strings.size() ? std::string_view(strings.Get(static_cast<int>(i))) : std::string_view();
}

// A key given inline or, since v1.10, by reference into the string table.
std::string_view KeyText(const common::KeyValue& kv, const StringTable& strings) {
  return !kv.key().empty() ? std::string_view(kv.key()) : TableString(strings, kv.key_strindex());
}

// Scalars as plain text; arrays and kvlists as JSON-ish text where nested
// strings are quoted. Strings may be references into `strings`. Recursion
// depth is bounded by protobuf's parse depth.
void AppendAnyValue(const common::AnyValue& v, const StringTable& strings, bool quote_strings,
                    std::string* out) {
  switch (v.value_case()) {
    case common::AnyValue::kStringValue:
    case common::AnyValue::kStringValueStrindex: {
      const std::string_view text = v.value_case() == common::AnyValue::kStringValue
                                        ? std::string_view(v.string_value())
                                        : TableString(strings, v.string_value_strindex());
      if (quote_strings) {
        AppendJsonString(text, out);
      } else {
        out->append(text);
      }
      break;
    }
    case common::AnyValue::kBoolValue:
      out->append(v.bool_value() ? "true" : "false");
      break;
    case common::AnyValue::kIntValue:
      CatAppend(out, v.int_value());
      break;
    case common::AnyValue::kDoubleValue: {
      char buf[32];
      auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v.double_value());
      if (ec == std::errc()) out->append(buf, end);
      break;
    }
    case common::AnyValue::kBytesValue:
      if (quote_strings) out->push_back('"');
      AppendHex(v.bytes_value(), out);
      if (quote_strings) out->push_back('"');
      break;
    case common::AnyValue::kArrayValue: {
      out->push_back('[');
      bool first = true;
      for (const common::AnyValue& e : v.array_value().values()) {
        if (!first) out->push_back(',');
        first = false;
        AppendAnyValue(e, strings, true, out);
      }
      out->push_back(']');
      break;
    }
    case common::AnyValue::kKvlistValue: {
      out->push_back('{');
      bool first = true;
      for (const common::KeyValue& kv : v.kvlist_value().values()) {
        if (!first) out->push_back(',');
        first = false;
        AppendJsonString(KeyText(kv, strings), out);
        out->push_back(':');
        AppendAnyValue(kv.value(), strings, true, out);
      }
      out->push_back('}');
      break;
    }
    case common::AnyValue::VALUE_NOT_SET:
      if (quote_strings) out->append("null");
      break;
  }
}

// Text view of a value without copying for the common string case.
std::string_view AnyValueText(const common::AnyValue& v, const StringTable& strings, std::string* scratch) {
  if (v.value_case() == common::AnyValue::kStringValue) return v.string_value();
  if (v.value_case() == common::AnyValue::kStringValueStrindex) {
    return TableString(strings, v.string_value_strindex());
  }
  scratch->clear();
  AppendAnyValue(v, strings, false, scratch);
  return *scratch;
}

// A v1.9 sample decoded with the v1.10 layout shows up as a wire-type
// mismatch on one of Sample's own field numbers (its packed
// attribute_indices land on our singular link_index): protobuf keeps that as
// an unknown field. Unknown fields with numbers we do not use are a newer
// sender and are ignored, as protobuf intends. `reflection` is Sample's,
// looked up once per request (GetReflection() per sample showed in
// profiles).
bool HasMisnumberedFields(const otlp::Sample& sample, const google::protobuf::Reflection* reflection) {
  const google::protobuf::UnknownFieldSet& unknown = reflection->GetUnknownFields(sample);
  if (unknown.empty()) return false;
  for (int i = 0; i < unknown.field_count(); ++i) {
    int number = unknown.field(i).number();
    if (number >= 1 && number <= 5) return true;
  }
  return false;
}

// ============================================================================
// [SECTION] Normalizer: validation (memoized per dictionary entry)
// ============================================================================

class Normalizer {
 public:
  // Profiles numbered `reject_from` and later (in request order) are
  // rejected as over budget; see NormalizeExportRequest.
  Normalizer(const collector::ExportProfilesServiceRequest& request, int64_t reject_from,
             const std::vector<std::pair<std::string, std::string>>* added_attributes)
      : added_attributes_(*added_attributes),
        reject_from_(reject_from),
        request_(request),
        dict_(request.dictionary()),
        out_(result_.batch.dict),
        string_count_(dict_.string_table_size()) {
    stack_state_.assign(dict_.stack_table_size(), kUnchecked);
    location_state_.assign(dict_.location_table_size(), kUnchecked);
    mapping_state_.assign(dict_.mapping_table_size(), kUnchecked);
    function_state_.assign(dict_.function_table_size(), kUnchecked);
    attribute_state_.assign(dict_.attribute_table_size(), kUnchecked);
    string_map_.assign(dict_.string_table_size(), kUnmapped);
    stack_map_.assign(dict_.stack_table_size(), kUnmapped);
    location_first_.assign(dict_.location_table_size(), kUnmapped);
    location_count_.assign(dict_.location_table_size(), 0);
    mapping_map_.assign(dict_.mapping_table_size(), kUnmapped);
    attribute_map_.assign(dict_.attribute_table_size(), Attribute{kUnmapped, kUnmapped});
    link_map_.assign(dict_.link_table_size(), kUnmapped);
  }

  NormalizeResult Run();
  // The number of the profile whose emission went over a budget, or -1.
  int64_t overflow_at() const { return overflow_at_; }

 private:
  enum : uint8_t { kUnchecked = 0, kValid = 1, kInvalid = 2 };

  // The string at an index, "" when out of range (validation ran first).
  std::string_view Str(int32_t i) const {
    return TableString(dict_.string_table(), i);
  }
  // Each Check* returns "" when the entry and everything it references is
  // in range, else a description relative to the dictionary.
  std::string CheckString(std::string_view field, int64_t index) const {
    if (InRange(index, string_count_)) return {};
    return OutOfRange(field, index, "string_table", string_count_);
  }
  std::string CheckAttribute(int32_t index);
  // String references inside a value (nested ones included) and a key.
  std::string CheckAnyValue(const common::AnyValue& v) const;
  std::string CheckKeyValues(const google::protobuf::RepeatedPtrField<common::KeyValue>& kvs) const;
  // `owner()` names the field holding the list (built only on error).
  template <typename Owner>
  std::string CheckAttributeList(const Owner& owner, const google::protobuf::RepeatedField<int32_t>& indices);
  std::string CheckMapping(int32_t index);
  std::string CheckFunction(int32_t index);
  std::string CheckLocation(int32_t index);
  std::string CheckStack(int32_t index);
  // Memoizes `check` for entry `index` of a table. Only the verdict is
  // kept; the message of an invalid entry is rebuilt when needed (rare).
  template <typename F>
  std::string Memo(std::vector<uint8_t>& state, int32_t index, F check) {
    if (index >= 0 && static_cast<size_t>(index) < state.size()) {
      if (state[index] == kValid) return {};
      std::string error = check();
      state[index] = error.empty() ? kValid : kInvalid;
      return error;
    }
    return check();
  }

  std::string ValidateProfile(const otlp::Profile& profile, size_t* event_count);

  // Emission (only for validated profiles).
  uint32_t MapString(int32_t index);
  uint32_t Intern(std::string_view s);
  Attribute MapAttribute(int32_t index);
  uint32_t MapMapping(int32_t index);
  void MapLocation(int32_t index);
  uint32_t MapStack(int32_t index);
  uint32_t MapLink(int32_t index);
  uint32_t MapAttributeSet(const otlp::Sample& sample);
  // The resource's and the scope's attributes, the base of every sample's.
  void PrepareResource(int resource_index, int scope_index);
  void SortByKeyKeepLast(std::vector<Attribute>* attrs) const;
  void EmitProfile(const otlp::Profile& profile, size_t event_count);

  void Reject(std::string message) {
    ++result_.rejected_profiles;
    if (result_.rejected_profiles <= kMaxReportedErrors) {
      if (!result_.error_message.empty()) result_.error_message += "; ";
      result_.error_message += message;
    }
  }

  bool OverBudget() const {
    return out_.frames.size() > kMaxBatchFrames || out_.stack_frames.size() > kMaxBatchStackFrames ||
           out_.attributes.size() > kMaxBatchAttributes;
  }

  const std::vector<std::pair<std::string, std::string>>& added_attributes_;
  const int64_t reject_from_;
  int64_t overflow_at_ = -1;
  bool overflow_ = false;  // set by emission when a budget ran out
  size_t events_ = 0;      // samples promised by validated profiles
  const collector::ExportProfilesServiceRequest& request_;
  const otlp::ProfilesDictionary& dict_;
  NormalizeResult result_;
  storage::ProfileDictionary& out_;
  const int string_count_;
  const google::protobuf::Reflection* const sample_reflection_ = otlp::Sample::GetReflection();

  std::vector<uint8_t> stack_state_, location_state_, mapping_state_, function_state_, attribute_state_;

  // OTLP index -> batch index, kUnmapped until first use.
  std::vector<uint32_t> string_map_;
  std::vector<uint32_t> stack_map_;
  std::vector<uint32_t> location_first_;  // first of the location's frames
  std::vector<uint32_t> location_count_;
  std::vector<uint32_t> mapping_map_;  // -> executable
  std::vector<Attribute> attribute_map_;
  std::vector<uint32_t> link_map_;
  // Batch strings by content, so a name shared by many tables (or sent
  // twice) is one batch string.
  absl::flat_hash_map<std::string, uint32_t> interned_;
  // (profile base id, sample attribute indices) as raw bytes -> attribute set.
  absl::flat_hash_map<std::string, uint32_t> attribute_sets_;
  std::string key_scratch_;
  std::string text_scratch_;
  std::vector<uint32_t> frame_scratch_;

  // Current resource / profile context for emission.
  int prepared_resource_ = -1;
  int prepared_scope_ = -1;
  std::vector<Attribute> resource_attributes_;
  std::vector<Attribute> base_attributes_;  // resource + profile attributes, sorted
  std::vector<Attribute> base_scratch_;
  std::vector<Attribute> sample_scratch_;
  uint32_t base_id_ = 0;
};

std::string Normalizer::CheckAttribute(int32_t index) {
  const int size = dict_.attribute_table_size();
  if (!InRange(index, size)) return OutOfRange("", index, "attribute_table", size);
  return Memo(attribute_state_, index, [&]() -> std::string {
    const otlp::KeyValueAndUnit& a = At(dict_.attribute_table(), index);
    std::string e = CheckString(".key_strindex", a.key_strindex());
    if (e.empty()) e = CheckString(".unit_strindex", a.unit_strindex());
    if (e.empty()) e = CheckAnyValue(a.value());
    if (!e.empty()) return Cat(": dictionary.attribute_table[", index, "]", e);
    return {};
  });
}

std::string Normalizer::CheckAnyValue(const common::AnyValue& v) const {
  switch (v.value_case()) {
    case common::AnyValue::kStringValueStrindex:
      return CheckString(".value.string_value_strindex", v.string_value_strindex());
    case common::AnyValue::kArrayValue:
      for (int i = 0; i < v.array_value().values_size(); ++i) {
        std::string e = CheckAnyValue(v.array_value().values(i));
        if (!e.empty()) return Cat(".value.array_value.values[", i, "]", e.substr(6));
      }
      return {};
    case common::AnyValue::kKvlistValue: {
      std::string e = CheckKeyValues(v.kvlist_value().values());
      return e.empty() ? e : Cat(".value.kvlist_value.values", e);
    }
    default:
      return {};
  }
}

std::string Normalizer::CheckKeyValues(const google::protobuf::RepeatedPtrField<common::KeyValue>& kvs) const {
  for (int i = 0; i < kvs.size(); ++i) {
    std::string e = CheckString(".key_strindex", kvs[i].key_strindex());
    if (e.empty()) e = CheckAnyValue(kvs[i].value());
    if (!e.empty()) return Cat("[", i, "]", e);
  }
  return {};
}

template <typename Owner>
std::string Normalizer::CheckAttributeList(const Owner& owner,
                                           const google::protobuf::RepeatedField<int32_t>& indices) {
  for (int i = 0; i < indices.size(); ++i) {
    const int32_t a = indices[i];
    if (a > 0 && a < static_cast<int>(attribute_state_.size()) && attribute_state_[a] == kValid) {
      continue;
    }
    std::string e = CheckAttribute(a);
    if (!e.empty()) {
      if (e[0] == ':') return Cat(owner(), ".attribute_indices[", i, "] ", a, e);
      return Cat(owner(), ".attribute_indices[", i, "]", e);
    }
  }
  return {};
}

std::string Normalizer::CheckMapping(int32_t index) {
  return Memo(mapping_state_, index, [&]() -> std::string {
    const otlp::Mapping& m = At(dict_.mapping_table(), index);
    auto owner = [index] { return Cat("dictionary.mapping_table[", index, "]"); };
    std::string e = CheckString(".filename_strindex", m.filename_strindex());
    if (!e.empty()) return owner() + e;
    return CheckAttributeList(owner, m.attribute_indices());
  });
}

std::string Normalizer::CheckFunction(int32_t index) {
  return Memo(function_state_, index, [&]() -> std::string {
    const otlp::Function& f = At(dict_.function_table(), index);
    std::string e = CheckString(".name_strindex", f.name_strindex());
    if (e.empty()) e = CheckString(".system_name_strindex", f.system_name_strindex());
    if (e.empty()) e = CheckString(".filename_strindex", f.filename_strindex());
    if (!e.empty()) return Cat("dictionary.function_table[", index, "]", e);
    return {};
  });
}

std::string Normalizer::CheckLocation(int32_t index) {
  return Memo(location_state_, index, [&]() -> std::string {
    const otlp::Location& loc = At(dict_.location_table(), index);
    auto owner = [index] { return Cat("dictionary.location_table[", index, "]"); };
    const int32_t m = loc.mapping_index();
    if (!InRange(m, dict_.mapping_table_size())) {
      return owner() + OutOfRange(".mapping_index", m, "mapping_table", dict_.mapping_table_size());
    }
    if (m == 0 || mapping_state_[m] != kValid) {
      std::string e = CheckMapping(m);
      if (!e.empty()) return Cat(owner(), ".mapping_index ", m, ": ", e);
    }
    for (int i = 0; i < loc.lines_size(); ++i) {
      const int32_t f = loc.lines(i).function_index();
      if (!InRange(f, dict_.function_table_size())) {
        return owner() + OutOfRange(Cat(".lines[", i, "].function_index"), f, "function_table",
                                    dict_.function_table_size());
      }
      if (f != 0 && function_state_[f] == kValid) continue;
      std::string e = CheckFunction(f);
      if (!e.empty()) return Cat(owner(), ".lines[", i, "].function_index ", f, ": ", e);
    }
    return CheckAttributeList(owner, loc.attribute_indices());
  });
}

std::string Normalizer::CheckStack(int32_t index) {
  return Memo(stack_state_, index, [&]() -> std::string {
    const otlp::Stack& stack = At(dict_.stack_table(), index);
    int64_t depth = 0;
    for (int i = 0; i < stack.location_indices_size(); ++i) {
      const int32_t l = stack.location_indices(i);
      if (l >= 0 && l < dict_.location_table_size()) {
        depth += std::max(1, dict_.location_table(l).lines_size());
      }
      if (l > 0 && l < static_cast<int>(location_state_.size()) && location_state_[l] == kValid) {
        continue;
      }
      auto owner = [&] { return Cat("dictionary.stack_table[", index, "].location_indices[", i, "]"); };
      if (!InRange(l, dict_.location_table_size())) {
        return owner() + OutOfRange("", l, "location_table", dict_.location_table_size());
      }
      std::string e = CheckLocation(l);
      if (!e.empty()) return Cat(owner(), " ", l, ": ", e);
    }
    if (depth > kMaxStackDepth) {
      return Cat("dictionary.stack_table[", index, "] expands to ", depth,
                 " frames with inlined lines (limit ", kMaxStackDepth, ")");
    }
    return {};
  });
}

// Returns "" when the profile can be emitted, else why not (relative to the
// profile's path). `event_count` gets the number of batch samples it yields.
std::string Normalizer::ValidateProfile(const otlp::Profile& profile, size_t* event_count) {
  std::string e = CheckString("sample_type.type_strindex", profile.sample_type().type_strindex());
  if (e.empty()) e = CheckString("sample_type.unit_strindex", profile.sample_type().unit_strindex());
  if (e.empty()) e = CheckString("period_type.type_strindex", profile.period_type().type_strindex());
  if (e.empty()) e = CheckString("period_type.unit_strindex", profile.period_type().unit_strindex());
  if (!e.empty()) return e;
  for (int i = 0; i < profile.attribute_indices_size(); ++i) {
    int32_t a = profile.attribute_indices(i);
    e = CheckAttribute(a);
    if (!e.empty()) {
      return Cat("attribute_indices[", i, "]", e[0] == ':' ? Cat(" ", a) : "", e);
    }
  }

  const int stack_count = dict_.stack_table_size();
  const int attribute_count = dict_.attribute_table_size();
  const int link_count = dict_.link_table_size();
  size_t events = 0;
  for (int j = 0; j < profile.samples_size(); ++j) {
    const otlp::Sample& s = profile.samples(j);
    // Everything below is the exception path, so the sample's path is only
    // formatted there.
    auto where = [j](std::string_view field) { return Cat("samples[", j, "]", field); };
    if (HasMisnumberedFields(s, sample_reflection_)) {
      return Cat(where(""), " has fields with wire types the v1.10 layout does not use: ", kOlderLayoutHint);
    }
    const int32_t stack = s.stack_index();
    if (!InRange(stack, stack_count)) {
      return OutOfRange(where(".stack_index"), stack, "stack_table", stack_count);
    }
    if (stack_state_.empty() || stack_state_[stack] != kValid) {
      e = CheckStack(stack);
      if (!e.empty()) return Cat(where(".stack_index"), " ", stack, ": ", e);
    }
    for (int k = 0; k < s.attribute_indices_size(); ++k) {
      const int32_t a = s.attribute_indices(k);
      if (!InRange(a, attribute_count)) {
        return Cat(
            OutOfRange(where(Cat(".attribute_indices[", k, "]")), a, "attribute_table", attribute_count),
            ": ", kOlderLayoutHint);
      }
      if (attribute_state_.empty() || attribute_state_[a] != kValid) {
        e = CheckAttribute(a);
        if (!e.empty()) return Cat(where(Cat(".attribute_indices[", k, "] ")), a, e);
      }
    }
    if (!InRange(s.link_index(), link_count)) {
      return OutOfRange(where(".link_index"), s.link_index(), "link_table", link_count);
    }
    const int values = s.values_size();
    const int timestamps = s.timestamps_unix_nano_size();
    if (values == 0 && timestamps == 0) {
      return where(" has neither values nor timestamps_unix_nano");
    }
    if ((values > 0 && timestamps > 0 && values != timestamps) || (values > 1 && timestamps == 0)) {
      return Cat(where(""), " has ", values, " values but ", timestamps,
                 " timestamps_unix_nano (expected one value, or a value per timestamp)");
    }
    events += timestamps > 0 ? static_cast<size_t>(timestamps) : 1;
  }
  if (events_ + events > kMaxBatchSamples) {
    return Cat("samples: ", events, " events would take the request past ", kMaxBatchSamples,
               " samples, the most kiln takes in one request; send smaller requests");
  }
  *event_count = events;
  return {};
}

// ============================================================================
// [SECTION] Normalizer: emission (dictionary entries mapped once, cached)
// ============================================================================

uint32_t Normalizer::Intern(std::string_view s) {
  if (s.empty()) return 0;
  std::string cut;
  if (s.size() > kMaxStringBytes) {
    size_t keep = kMaxStringBytes - kTruncatedMarker.size();
    // Not inside a UTF-8 sequence: back up over continuation bytes.
    while (keep > 0 && (static_cast<unsigned char>(s[keep]) & 0xC0) == 0x80) --keep;
    cut.reserve(keep + kTruncatedMarker.size());
    cut.append(s.substr(0, keep)).append(kTruncatedMarker);
    s = cut;
    ++result_.strings_truncated;
  }
  auto it = interned_.find(absl::string_view(s.data(), s.size()));
  if (it != interned_.end()) return it->second;
  uint32_t index = static_cast<uint32_t>(out_.strings.size());
  out_.strings.emplace_back(s);
  interned_.emplace(std::string(s), index);
  return index;
}

uint32_t Normalizer::MapString(int32_t index) {
  if (index <= 0 || index >= string_count_) return 0;  // 0, or validated away
  uint32_t& slot = string_map_[index];
  if (slot == kUnmapped) slot = Intern(dict_.string_table(index));
  return slot;
}

Attribute Normalizer::MapAttribute(int32_t index) {
  if (index < 0 || index >= dict_.attribute_table_size()) return {};
  Attribute& slot = attribute_map_[index];
  if (slot.key == kUnmapped) {
    const otlp::KeyValueAndUnit& a = dict_.attribute_table(index);
    slot.key = MapString(a.key_strindex());
    slot.value = Intern(AnyValueText(a.value(), dict_.string_table(), &text_scratch_));
  }
  return slot;
}

uint32_t Normalizer::MapMapping(int32_t index) {
  if (index < 0 || index >= dict_.mapping_table_size()) return 0;
  uint32_t& slot = mapping_map_[index];
  if (slot != kUnmapped) return slot;
  const otlp::Mapping& m = dict_.mapping_table(index);
  storage::Executable exe;
  exe.file_name = MapString(m.filename_strindex());
  for (int32_t a : m.attribute_indices()) {
    if (a <= 0 || a >= dict_.attribute_table_size()) continue;
    const otlp::KeyValueAndUnit& kv = dict_.attribute_table(a);
    std::string_view key = Str(kv.key_strindex());
    uint32_t* target = key == kHtlhashKey      ? &exe.htlhash
                       : key == kGnuBuildIdKey ? &exe.gnu_build_id
                       : key == kGoBuildIdKey  ? &exe.go_build_id
                                               : nullptr;
    if (target == nullptr) continue;
    std::string text(AnyValueText(kv.value(), dict_.string_table(), &text_scratch_));
    // htlhash and GNU build ids are hex; normalize case so one file is one
    // executable whichever way the sender printed it.
    if (target != &exe.go_build_id) {
      for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    *target = Intern(text);
  }
  if (exe == storage::Executable{}) {
    slot = 0;
  } else {
    slot = static_cast<uint32_t>(out_.executables.size());
    out_.executables.push_back(exe);
  }
  return slot;
}

// Appends the location's frames to out_.frames (outermost line first) once.
void Normalizer::MapLocation(int32_t index) {
  if (location_first_[index] != kUnmapped) return;
  const otlp::Location& loc = dict_.location_table(index);
  storage::Frame base;
  base.address = loc.address();
  base.executable = MapMapping(loc.mapping_index());
  for (int32_t a : loc.attribute_indices()) {
    if (a <= 0 || a >= dict_.attribute_table_size()) continue;
    const otlp::KeyValueAndUnit& kv = dict_.attribute_table(a);
    if (Str(kv.key_strindex()) == kFrameTypeKey) {
      base.type = storage::FrameTypeFromName(AnyValueText(kv.value(), dict_.string_table(), &text_scratch_));
    }
  }
  location_first_[index] = static_cast<uint32_t>(out_.frames.size());
  const int lines = loc.lines_size();
  if (lines == 0) {
    out_.frames.push_back(base);
    location_count_[index] = 1;
    return;
  }
  // OTLP lists a location's lines innermost first (the last line is the
  // caller the others were inlined into); stacks here are root first.
  for (int i = lines - 1; i >= 0; --i) {
    const otlp::Line& line = loc.lines(i);
    storage::Frame frame = base;
    const otlp::Function& f = At(dict_.function_table(), line.function_index());
    frame.function = MapString(f.name_strindex());
    if (frame.function == 0) frame.function = MapString(f.system_name_strindex());
    frame.file = MapString(f.filename_strindex());
    frame.line = line.line();
    frame.inlined = i != lines - 1;
    out_.frames.push_back(frame);
  }
  location_count_[index] = static_cast<uint32_t>(lines);
}

uint32_t Normalizer::MapStack(int32_t index) {
  if (index <= 0 && dict_.stack_table_size() == 0) return 0;
  uint32_t& slot = stack_map_[index];
  if (slot != kUnmapped) return slot;
  const otlp::Stack& stack = dict_.stack_table(index);
  frame_scratch_.clear();
  // OTLP stacks are leaf first; ours are root first.
  for (int i = stack.location_indices_size() - 1; i >= 0; --i) {
    int32_t l = stack.location_indices(i);
    if (l <= 0 && dict_.location_table_size() == 0) continue;  // empty element
    MapLocation(l);
    if (out_.stack_frames.size() + frame_scratch_.size() + location_count_[l] > kMaxBatchStackFrames) {
      overflow_ = true;
      return 0;
    }
    for (uint32_t f = 0; f < location_count_[l]; ++f) {
      frame_scratch_.push_back(location_first_[l] + f);
    }
  }
  slot = frame_scratch_.empty() ? 0 : out_.AddStack(frame_scratch_);
  return slot;
}

uint32_t Normalizer::MapLink(int32_t index) {
  if (index <= 0 || index >= dict_.link_table_size()) return 0;
  uint32_t& slot = link_map_[index];
  if (slot == kUnmapped) {
    const otlp::Link& link = dict_.link_table(index);
    if (link.trace_id().empty() && link.span_id().empty()) {
      slot = 0;
    } else {
      slot = static_cast<uint32_t>(out_.links.size());
      out_.links.push_back(storage::Link{link.trace_id(), link.span_id()});
    }
  }
  return slot;
}

void Normalizer::PrepareResource(int resource_index, int scope_index) {
  if (prepared_resource_ == resource_index && prepared_scope_ == scope_index) return;
  prepared_resource_ = resource_index;
  prepared_scope_ = scope_index;
  resource_attributes_.clear();
  const otlp::ResourceProfiles& rp = request_.resource_profiles(resource_index);
  // Resource, then scope attributes: sorting keeps the last of a repeated
  // key, so the scope wins over the resource.
  for (const auto* kvs : {&rp.resource().attributes(), &rp.scope_profiles(scope_index).scope().attributes()}) {
    for (const common::KeyValue& kv : *kvs) {
      const std::string_view key = KeyText(kv, dict_.string_table());
      if (key.empty()) continue;
      resource_attributes_.push_back(
          Attribute{Intern(key), Intern(AnyValueText(kv.value(), dict_.string_table(), &text_scratch_))});
    }
  }
  // Last, so they win over a sender's own attribute of the same key.
  for (const auto& [key, value] : added_attributes_)
    resource_attributes_.push_back(Attribute{Intern(key), Intern(value)});
}

uint32_t Normalizer::MapAttributeSet(const otlp::Sample& sample) {
  // The key is raw bytes: the profile's base id, then the indices.
  key_scratch_.resize(sizeof(uint32_t) * (1 + sample.attribute_indices_size()));
  char* p = key_scratch_.data();
  std::memcpy(p, &base_id_, sizeof base_id_);
  if (sample.attribute_indices_size() > 0) {
    std::memcpy(p + sizeof base_id_, sample.attribute_indices().data(),
                sizeof(int32_t) * sample.attribute_indices_size());
  }
  auto it = attribute_sets_.find(absl::string_view(key_scratch_));
  if (it != attribute_sets_.end()) return it->second;

  // A new combination: sort the sample's few attributes by key, then merge
  // with the (already sorted) base; the sample wins on a clash. Written
  // straight into the batch, no temporary vectors.
  sample_scratch_.clear();
  for (int32_t a : sample.attribute_indices()) {
    Attribute attr = MapAttribute(a);
    if (attr.key == 0) continue;
    // The receiver's own attributes are not the sender's to set.
    bool ours = false;
    for (const auto& added : added_attributes_) ours = ours || out_.strings[attr.key] == added.first;
    if (!ours) sample_scratch_.push_back(attr);
  }
  SortByKeyKeepLast(&sample_scratch_);
  uint32_t set = 0;
  if (!sample_scratch_.empty() || !base_attributes_.empty()) {
    std::vector<Attribute>& out = out_.attributes;
    auto b = base_attributes_.begin(), be = base_attributes_.end();
    auto s = sample_scratch_.begin(), se = sample_scratch_.end();
    while (b != be || s != se) {
      if (s == se) {
        out.push_back(*b++);
      } else if (b == be) {
        out.push_back(*s++);
      } else if (b->key == s->key) {
        out.push_back(*s++);
        ++b;
      } else if (out_.strings[b->key] < out_.strings[s->key]) {
        out.push_back(*b++);
      } else {
        out.push_back(*s++);
      }
    }
    out_.attribute_set_offsets.push_back(static_cast<uint32_t>(out.size()));
    set = static_cast<uint32_t>(out_.AttributeSetCount() - 1);
  }
  attribute_sets_.emplace(key_scratch_, set);
  return set;
}

// Sorts by key string; of equal keys the last one stays. Batch strings are
// interned, so equal keys have equal indices. Lists are short (a handful of
// attributes), so insertion sort.
void Normalizer::SortByKeyKeepLast(std::vector<Attribute>* attrs) const {
  std::vector<Attribute>& v = *attrs;
  for (size_t i = 1; i < v.size(); ++i) {
    Attribute x = v[i];
    size_t j = i;
    while (j > 0 && v[j - 1].key != x.key && out_.strings[x.key] < out_.strings[v[j - 1].key]) {
      v[j] = v[j - 1];
      --j;
    }
    v[j] = x;
  }
  // Stable, so among equal keys the later one is last: keep it.
  size_t w = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (w > 0 && v[w - 1].key == v[i].key) {
      v[w - 1] = v[i];
    } else {
      v[w++] = v[i];
    }
  }
  v.resize(w);
}

void Normalizer::EmitProfile(const otlp::Profile& profile, size_t event_count) {
  auto str = [this](int32_t i) { return Str(i); };
  // The sample type is kept as sent: an unknown one is a kind of data of
  // its own, never folded into another.
  const uint32_t sample_type = out_.AddSampleType(
      {{std::string(str(profile.sample_type().type_strindex())), std::string(str(profile.sample_type().unit_strindex()))},
       std::string(str(profile.period_type().type_strindex())),
       std::string(str(profile.period_type().unit_strindex())),
       profile.period()});

  // Resource then profile attributes; sorting keeps the last of a repeated
  // key, so the profile wins over the resource.
  base_scratch_ = resource_attributes_;
  for (int32_t a : profile.attribute_indices()) {
    Attribute attr = MapAttribute(a);
    if (attr.key != 0) base_scratch_.push_back(attr);
  }
  SortByKeyKeepLast(&base_scratch_);
  // Profiles of one process usually share their base attributes; keeping
  // the id then lets them share the attribute-set cache too.
  if (base_id_ == 0 || base_scratch_ != base_attributes_) {
    ++base_id_;
    base_attributes_.swap(base_scratch_);
  }

  // A profile its sender recorded a share of (kiln-agent's off-CPU with
  // -off-cpu-threshold 0.1 follows 1 blocked period in 10) is scaled up to
  // an estimate of the whole; the attribute stays on its samples, so the
  // window can say the values are estimates.
  double scale = 1;
  for (int32_t a : profile.attribute_indices()) {
    if (a <= 0 || a >= dict_.attribute_table_size()) continue;
    const otlp::KeyValueAndUnit& kv = dict_.attribute_table(a);
    if (Str(kv.key_strindex()) != storage::attr::kSamplingProbability) continue;
    const double p = kv.value().value_case() == common::AnyValue::kDoubleValue ? kv.value().double_value() : 0;
    // Below one in a million it is not a sampling rate anyone uses: left
    // unscaled rather than multiplied into nonsense.
    if (storage::ScalesByProbability(p)) scale = 1 / p;
  }
  auto scaled = [scale](int64_t v) -> int64_t {
    if (scale == 1) return v;
    const double d = static_cast<double>(v) * scale;
    if (d >= 9.2e18) return std::numeric_limits<int64_t>::max();
    if (d <= -9.2e18) return std::numeric_limits<int64_t>::min();
    return static_cast<int64_t>(std::llround(d));
  };

  std::vector<storage::Sample>& samples = result_.batch.samples;
  const size_t needed = samples.size() + event_count;
  if (needed > samples.capacity()) samples.reserve(std::max(needed, samples.capacity() * 2));
  const int64_t profile_time = static_cast<int64_t>(profile.time_unix_nano());
  int32_t last_stack = -1;
  uint32_t stack = 0;
  for (const otlp::Sample& s : profile.samples()) {
    if (s.stack_index() != last_stack) {
      last_stack = s.stack_index();
      stack = MapStack(last_stack);
    }
    if (overflow_ || OverBudget()) {
      overflow_ = true;
      return;
    }
    storage::Sample out;
    out.stack = stack;
    out.attribute_set = MapAttributeSet(s);
    out.link = MapLink(s.link_index());
    out.sample_type = sample_type;
    const int timestamps = s.timestamps_unix_nano_size();
    if (timestamps == 0) {
      out.time_ns = profile_time;
      out.value = scaled(s.values(0));
      samples.push_back(out);
    } else if (s.values_size() == 0) {
      out.value = scaled(1);
      for (uint64_t t : s.timestamps_unix_nano()) {
        out.time_ns = static_cast<int64_t>(t);
        samples.push_back(out);
      }
    } else {
      for (int k = 0; k < timestamps; ++k) {
        out.time_ns = static_cast<int64_t>(s.timestamps_unix_nano(k));
        out.value = scaled(s.values(k));
        samples.push_back(out);
      }
    }
  }
}

NormalizeResult Normalizer::Run() {
  int64_t ordinal = 0;
  for (int r = 0; r < request_.resource_profiles_size(); ++r) {
    const otlp::ResourceProfiles& rp = request_.resource_profiles(r);
    for (int s = 0; s < rp.scope_profiles_size(); ++s) {
      const otlp::ScopeProfiles& sp = rp.scope_profiles(s);
      for (int p = 0; p < sp.profiles_size(); ++p, ++ordinal) {
        auto path = [&] {
          return Cat("resource_profiles[", r, "].scope_profiles[", s, "].profiles[", p, "]");
        };
        if (ordinal >= reject_from_) {
          Reject(Cat(path(), ": the request expands to more than kiln takes in one request (",
                     kMaxBatchFrames, " frames, ", kMaxBatchStackFrames, " stack frames, ",
                     kMaxBatchAttributes, " attributes); send smaller requests"));
          continue;
        }
        size_t events = 0;
        std::string error;
        if (std::string e = CheckKeyValues(rp.resource().attributes()); !e.empty()) {
          error = Cat(" (its resource.attributes", e, ")");
        } else if (std::string se = CheckKeyValues(sp.scope().attributes()); !se.empty()) {
          error = Cat(" (its scope.attributes", se, ")");
        } else {
          error = ValidateProfile(sp.profiles(p), &events);
        }
        if (!error.empty()) {
          Reject(Cat(path(), error[0] == ' ' ? "" : ".", error));
          continue;
        }
        PrepareResource(r, s);
        EmitProfile(sp.profiles(p), events);
        if (overflow_) {
          overflow_at_ = ordinal;
          return {};
        }
        events_ += events;
        ++result_.accepted_profiles;
      }
    }
  }
  if (result_.rejected_profiles > kMaxReportedErrors) {
    CatAppend(&result_.error_message, "; and ", result_.rejected_profiles - kMaxReportedErrors,
              " more rejected profiles");
  }
  return std::move(result_);
}

}  // namespace

// ============================================================================
// [SECTION] Entry point
// ============================================================================

NormalizeResult NormalizeExportRequest(
    const collector::ExportProfilesServiceRequest& request,
    const std::vector<std::pair<std::string, std::string>>& added_attributes) {
  Normalizer first(request, std::numeric_limits<int64_t>::max(), &added_attributes);
  NormalizeResult result = first.Run();
  if (first.overflow_at() < 0) return result;
  // A profile blew a budget half way through its emission. Rather than
  // unpick the caches, normalize again and reject it and every later
  // profile up front. The earlier profiles fit the first time and the run
  // is deterministic, so they fit again; there is at most one rerun.
  return Normalizer(request, first.overflow_at(), &added_attributes).Run();
}

}  // namespace kiln::ingest
