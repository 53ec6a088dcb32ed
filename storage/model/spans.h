// Spans: which trace and span a sample was taken in (issue 31), and the
// weight of each span over a selection. A sample's span is its OTLP link
// (trace and span ids, raw bytes) or, where a sender put them as
// attributes (pprof labels "trace_id" / "span_id", as Go's, Java's and
// Python's SDKs write them), those; both are spelled as lowercase hex, as
// OTLP/JSON writes ids and as `--filter trace_id=HEX` takes them. Pure
// (model_test).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "storage/model/profile_model.h"

namespace kiln::storage {

namespace attr {
inline constexpr std::string_view kTraceId = "trace_id";
inline constexpr std::string_view kSpanId = "span_id";
inline constexpr std::string_view kSpanName = "span_name";
}  // namespace attr

// Lowercase hex of raw bytes ("" for none), and back (either case);
// nullopt for text that is not an even number of hex digits.
std::string HexId(std::string_view bytes);
std::optional<std::string> BytesOfHex(std::string_view hex);

// A filter value for trace_id or span_id must be an id in hex ("zz" would
// select nothing and say nothing); an error naming the key and the value,
// else OK (any other key: OK).
absl::Status CheckSpanFilterValue(std::string_view key, std::string_view value);

struct SpanIdentity {
  std::string trace;  // lowercase hex, "" when not said
  std::string span;
  bool empty() const { return trace.empty() && span.empty(); }
  bool operator==(const SpanIdentity&) const = default;
};
// The link's ids where it has them, else the attribute set's (lowercased).
SpanIdentity SpanOf(const ProfileDictionary& dict, uint32_t link, uint32_t attribute_set);

// `slice` with each kept sample's link (Query::keep_samples) written into
// its attribute set as trace_id and span_id, and the weights aggregated
// again per (stack, attribute set): trees are built from those weights, so
// this is what grouping a tree by span reads. A link's ids win over
// attributes of those names (as in SpanOf). A slice without kept samples
// or links is returned as it is.
std::shared_ptr<const ProfileSlice> SliceWithSpanAttributes(std::shared_ptr<const ProfileSlice> slice);

// The group of a tree by span (GroupBy::kSpan): "NAME (span HEX)", or
// "span HEX" without a span_name, "trace HEX" with a trace id alone, or
// kNoSpan; and back, the filter that selects a group's samples (key
// trace_id or span_id and the id; nullopt for kNoSpan and other text).
inline constexpr std::string_view kNoSpan = "no span";
std::string SpanGroupLabel(const ProfileDictionary& dict, uint32_t attribute_set);
std::optional<std::pair<std::string, std::string>> SpanFilterOfGroupLabel(std::string_view label);

// One span's share of a selection.
struct SpanRow {
  SpanIdentity id;
  std::string name;  // the span_name attribute, when a sender gave it
  int64_t weight = 0;
  uint64_t samples = 0;
  int64_t first_ns = 0, last_ns = 0;
  std::vector<std::string> threads;  // ThreadInstanceLabel: "python3 [1234] · MainThread [1234]", sorted, distinct
};
// Per span of `slice`'s kept samples (Query::keep_samples), heaviest
// first; samples in no span are counted in `*unspanned` (may be null).
std::vector<SpanRow> SpansOf(const ProfileSlice& slice, uint64_t* unspanned = nullptr);

}  // namespace kiln::storage
