// SampleBlock: the compact on-disk encoding of a run of samples of one kind
// in one time bucket. Pure functions, no RocksDB: the store puts the bytes
// under a block key and RocksDB compresses them with zstd.
//
// Layout (version 1), columnar so each column compresses on its own:
//
//   +---------+-----------+----------------+--------------------------+
//   | u8 ver  | varint n  | zigzag t[0]    | varint t[i]-t[i-1] (n-1) |
//   +---------+-----------+----------------+--------------------------+
//   | varint stack (n) | varint attribute_set (n) | varint link (n)    |
//   +------------------+---------------------------+--------------------+
//   | zigzag value (n) |
//   +------------------+
//
// Samples are sorted by time before encoding, so time deltas are >= 0.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace kiln::storage {

inline constexpr uint8_t kSampleBlockVersion = 1;

// One sample with store-global dictionary ids.
struct BlockSample {
  int64_t time_ns = 0;
  uint32_t stack = 0;
  uint32_t attribute_set = 0;
  uint32_t link = 0;
  int64_t value = 0;
  bool operator==(const BlockSample&) const = default;
};

// Encodes `samples`, which must be sorted by time_ns ascending.
std::string EncodeSampleBlock(const std::vector<BlockSample>& samples);

// Decodes a block into `out` (cleared first). Corrupt or truncated input
// and unknown versions give DataLoss naming the problem; never reads out of
// bounds.
[[nodiscard]] absl::Status DecodeSampleBlock(std::string_view block, std::vector<BlockSample>* out);

}  // namespace kiln::storage
