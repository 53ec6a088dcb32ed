// SampleBlock: the compact on-disk encoding of a run of samples of one kind
// in one time bucket. Pure functions, no RocksDB: the store puts the bytes
// under a block key and RocksDB compresses them with zstd.
//
// Layout (version 1), columnar so each column compresses on its own:
//
//   +--------+----------+---------------+
//   | u8 ver | varint n | zigzag t[0]   |   header
//   +--------+----------+---------------+
//   | column: t[i] - t[i-1], i = 1..n-1 |   time deltas (>= 0, sorted input)
//   | column: stack id            (n)   |
//   | column: attribute set id    (n)   |
//   | column: link id             (n)   |
//   | column: zigzag value        (n)   |
//   +-----------------------------------+
//
// A column is one tag byte, then:
//   tag 0      varint v          every value equals v
//   tag w=1..8 w planes of count bytes: plane j holds byte j (little end
//              first) of every value
// Byte planes put the slowly changing high bytes of time deltas and ids
// next to each other, which zstd (applied by RocksDB) compresses far
// better than interleaved varints.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace kiln::storage {

inline constexpr uint8_t kSampleBlockVersion = 1;
// Writers split longer runs; readers reject larger counts as corrupt, which
// bounds what a damaged block can make a reader allocate.
inline constexpr uint64_t kMaxBlockSamples = uint64_t{1} << 20;

// One sample with store-global dictionary ids.
struct BlockSample {
  int64_t time_ns = 0;
  uint32_t stack = 0;
  uint32_t attribute_set = 0;
  uint32_t link = 0;
  int64_t value = 0;
  bool operator==(const BlockSample&) const = default;
};

// Encodes `samples`, which must be sorted by time_ns ascending and number
// at most kMaxBlockSamples.
std::string EncodeSampleBlock(const std::vector<BlockSample>& samples);

// Decodes a block into `out` (cleared first). Corrupt or truncated input
// and unknown versions give DataLoss naming the problem; never reads out of
// bounds.
[[nodiscard]] absl::Status DecodeSampleBlock(std::string_view block, std::vector<BlockSample>* out);

}  // namespace kiln::storage
