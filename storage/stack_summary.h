// StackSummary: one hour of one sample type's samples, pre-aggregated, so
// that a query over a day reads 24 summaries instead of 110 M samples.
// Pure functions, no RocksDB: the store keeps one summary per (sample
// type, hour) that is over, builds it in the background, deletes it in the
// same RocksDB batch as any write or deletion that touches its hour, and
// queries use it only for hours wholly inside their range (storage/README.md,
// "Long ranges").
//
// A summary is exact: the sums of values and sample counts per (attribute
// set, stack), the first and last sample time per attribute set, and the
// sums per (attribute set, 10 s bucket) for timelines. Either part is
// left out when it would not be much smaller than the samples (a laptop's
// hour of mostly distinct stacks): queries then read that hour's samples.
//
// Layout (version 1), all varints unless said:
//
//   u8 version | samples | flags (1 = stacks, 2 = buckets)
//   sets:    n | per set: set id delta, zigzag first time delta from the
//            hour's start, last - first
//   stacks:  n | per entry, sorted by (set, stack): set delta, stack delta
//            (from the previous entry of the same set, else from 0),
//            zigzag weight, events
//   buckets: n | per entry, sorted by (set, bucket): set delta, bucket
//            delta (bucket offset within the hour), zigzag weight, events
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "storage/sample_block.h"

namespace kiln::storage {

inline constexpr uint8_t kStackSummaryVersion = 1;
// A summary covers an hour: 360 of the blocks' 10 s buckets.
inline constexpr int64_t kBucketsPerSummary = 360;
inline constexpr int64_t kSummaryNs = kBucketNs * kBucketsPerSummary;
// The hour holding `time_ns`.
inline int64_t HourOf(int64_t time_ns) { return FloorDiv(time_ns, kSummaryNs); }

struct StackSummary {
  struct Set {
    uint32_t attribute_set = 0;
    int64_t first_ns = 0, last_ns = 0;
    bool operator==(const Set&) const = default;
  };
  struct Weight {  // one (attribute set, stack) or (attribute set, bucket)
    uint32_t attribute_set = 0;
    uint32_t key = 0;  // stack id, or bucket offset within the hour
    int64_t weight = 0;
    uint64_t events = 0;
    bool operator==(const Weight&) const = default;
  };
  int64_t hour = 0;  // covers buckets [hour * 360, hour * 360 + 360)
  uint64_t samples = 0;
  bool has_stacks = false;
  bool has_buckets = false;
  std::vector<Set> sets;        // sorted by attribute set
  std::vector<Weight> stacks;   // sorted by (attribute set, stack)
  std::vector<Weight> buckets;  // sorted by (attribute set, bucket offset)
  bool operator==(const StackSummary&) const = default;
};

// Accumulates the samples of one hour (any order) into a summary.
class StackSummaryBuilder {
 public:
  explicit StackSummaryBuilder(int64_t hour) { summary_.hour = hour; }
  // Samples outside the hour are a caller error and are ignored.
  void Add(const BlockSample& s);
  // Sorts, and keeps a part only where it has at most half as many entries
  // as there were samples.
  StackSummary Finish() &&;

 private:
  struct Sum {
    int64_t weight = 0;
    uint64_t events = 0;
  };
  static uint64_t Key(uint32_t set, uint32_t k) { return uint64_t{set} << 32 | k; }
  StackSummary summary_;
  absl::flat_hash_map<uint64_t, Sum> stacks_, buckets_;
  absl::flat_hash_map<uint32_t, StackSummary::Set> sets_;
};

std::string EncodeStackSummary(const StackSummary& summary);
// DataLoss naming the problem for corrupt, truncated or unknown input; never
// reads out of bounds. `hour` is not stored (it is the key's).
[[nodiscard]] absl::Status DecodeStackSummary(std::string_view bytes, int64_t hour, StackSummary* out);

}  // namespace kiln::storage
