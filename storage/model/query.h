// Queries over samples, and the one implementation of their semantics.
//
// A query selects samples by sample type, time range [from, to) and
// attribute filters, and aggregates them into a ProfileSlice (weight per
// distinct stack and attribute set) or a Timeline (weight per time
// bucket). The store scans its blocks and captures scan their batch, but
// both decide what a sample contributes only through the functions here,
// so a capture and the same data in a store give the same answers.
//
// Threads: pure functions and single-owner accumulators.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "storage/model/profile_model.h"

namespace kiln::storage {

// Samples match a filter when their attribute set has `key` with any of
// `values`. Filters with different keys must all match (AND).
struct AttributeFilter {
  std::string key;
  std::vector<std::string> values;
  bool operator==(const AttributeFilter&) const = default;
};

struct Query {
  SampleType sample_type;  // on-CPU samples unless set
  int64_t from_ns = std::numeric_limits<int64_t>::min();  // inclusive
  int64_t to_ns = std::numeric_limits<int64_t>::max();    // exclusive
  std::vector<AttributeFilter> filters;
  // Also list every selected sample in the slice (ProfileSlice::samples),
  // not only the weights per stack: what an OTLP export needs to keep each
  // sample's time.
  bool keep_samples = false;
  bool operator==(const Query&) const = default;
};

// Filters from command-line arguments "KEY=VALUE": a repeated key ORs its
// values, distinct keys AND. An argument without '=' (or with an empty key)
// is an error naming it.
absl::StatusOr<std::vector<AttributeFilter>> ParseFilterArguments(const std::vector<std::string>& arguments);

// Sample weight per fixed-width time bucket, for the timeline.
struct Timeline {
  int64_t start_ns = 0;   // start of bucket 0
  int64_t bucket_ns = 1;  // width of every bucket
  std::vector<int64_t> weights;
  std::vector<uint64_t> events;
};

// Which attribute sets of `dict` pass `filters` (AND over keys, OR over
// values): one byte per set, 1 = passes.
std::vector<uint8_t> MatchAttributeSets(const ProfileDictionary& dict, const std::vector<AttributeFilter>& filters);

// What one query selects, resolved against one dictionary: a source asks
// Selects() for each sample it scans.
class SampleSelector {
 public:
  SampleSelector(const ProfileDictionary& dict, const Query& query);
  // False when the dictionary has no sample of the query's type (nothing
  // can match; a source may skip its scan).
  bool any_type() const { return sample_type_ != kNoType; }
  uint32_t sample_type() const { return sample_type_; }
  bool Selects(uint32_t sample_type, int64_t time_ns, uint32_t attribute_set, uint32_t link = 0) const {
    return sample_type == sample_type_ && time_ns >= from_ns_ && time_ns < to_ns_ &&
           SelectsSet(attribute_set) && SelectsSpan(attribute_set, link);
  }
  // The attribute filters alone: for pre-aggregated samples already known
  // to be of the type and in the range. A summary has no links: a source
  // with span filters (spans()) must not use one.
  bool SelectsSet(uint32_t attribute_set) const {
    return attribute_set < passes_.size() && passes_[attribute_set] != 0;
  }
  // Filters on "trace_id" / "span_id" (lowercase hex): matched against the
  // sample's link, or where it has none, its attributes of those names
  // (spans.h). Their values, by key; empty when there are none.
  const std::vector<AttributeFilter>& spans() const { return span_filters_; }

 private:
  bool SelectsSpan(uint32_t attribute_set, uint32_t link) const {
    if (span_filters_.empty()) return true;
    return (link < link_passes_.size() && link_passes_[link] != 0) ||
           (attribute_set < span_set_passes_.size() && span_set_passes_[attribute_set] != 0);
  }
  static constexpr uint32_t kNoType = UINT32_MAX;
  uint32_t sample_type_;
  int64_t from_ns_, to_ns_;
  std::vector<uint8_t> passes_;
  std::vector<AttributeFilter> span_filters_;
  std::vector<uint8_t> link_passes_;      // per link: its ids pass every span filter
  std::vector<uint8_t> span_set_passes_;  // per attribute set, for samples without a link's ids
};

// Adds selected samples into a slice: weight = sum of values, events =
// number of samples, per distinct (stack, attribute set), plus the slice's
// totals and first/last sample times. The caller fills the dictionary.
class SliceAggregator {
 public:
  // `stack_count`: stacks are < this (dense ids index an array).
  // `keep_samples`: also list each sample added (Query::keep_samples).
  SliceAggregator(ProfileSlice* slice, size_t stack_count, bool keep_samples = false);
  void Add(uint32_t stack, uint32_t attribute_set, int64_t time_ns, int64_t value, uint32_t link = 0);
  // Pre-aggregated samples (a store's summary): their sums, and the first
  // and last time of the samples summed, given separately.
  void AddSummed(uint32_t stack, uint32_t attribute_set, int64_t weight, uint64_t events);
  void AddTimes(int64_t first_ns, int64_t last_ns);
  // Adds another aggregation of the same dictionary (a scan shard's):
  // its entries new here are appended in its order.
  void Merge(const ProfileSlice& part);

 private:
  uint32_t Entry(uint32_t stack, uint32_t attribute_set);  // index into weights

  ProfileSlice& slice_;
  size_t stack_count_;
  bool keep_samples_;
  bool any_ = false;
  // A stack's first entry by array index; a stack seen with several
  // attribute sets chains its entries (usually one or two).
  std::vector<uint32_t> first_entry_;
  std::vector<uint32_t> next_entry_;
};

// The span a timeline covers: the query's range, where an open end is the
// first (or one past the last) sample the source holds, of any type: a
// source's timelines line up whatever type or filter they show.
struct TimeSpan {
  int64_t from_ns = 0;
  int64_t to_ns = 1;  // exclusive, > from_ns
};
TimeSpan TimelineSpan(const Query& query, int64_t source_first_ns, int64_t source_last_ns);

// `bucket_count` zeroed buckets evenly covering `span` (the last one
// reaching its end), and adding a sample to one.
Timeline EmptyTimeline(TimeSpan span, int bucket_count);
void AddToTimeline(Timeline* timeline, int64_t time_ns, int64_t value);
// The bucket AddToTimeline puts `time_ns` in, or -1 outside the timeline.
int64_t TimelineIndex(const Timeline& timeline, int64_t time_ns);

// --- In-memory batches: a capture file viewed or exported without a store.

// The slice copies the batch's dictionary (indices stay valid).
std::shared_ptr<const ProfileSlice> SliceFromBatch(const ProfileBatch& batch, const Query& query);
// Indices of the batch samples the query selects.
std::vector<uint32_t> SelectSamples(const ProfileBatch& batch, const Query& query);
// Weight over time, as Store::RunTimeline. Empty for bucket_count <= 0.
Timeline TimelineFromBatch(const ProfileBatch& batch, const Query& query, int bucket_count);

}  // namespace kiln::storage
