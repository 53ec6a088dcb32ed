#include "storage/sample_block.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <tuple>

namespace kiln::storage {

namespace {
void SortLikeBlock(std::vector<BlockSample>* v) {
  std::sort(v->begin(), v->end(), [](const BlockSample& a, const BlockSample& b) {
    return std::tie(a.attribute_set, a.time_ns) < std::tie(b.attribute_set, b.time_ns);
  });
}
}  // namespace

TEST_CASE("sample blocks round trip in (attribute set, time) order, negative times and values too") {
  std::vector<BlockSample> in = {{1'700'000'000'000'000'000, 4'000'000'000u, 9, 0, 1'000'000},
                                 {-5, 1, 2, 0, 1},
                                 {0, 7, 0, 3, -9},
                                 {-7, 8, 2, 1, 2}};
  std::vector<BlockSample> out;
  REQUIRE(DecodeSampleBlock(EncodeSampleBlock(in), &out).ok());
  SortLikeBlock(&in);
  CHECK(out == in);
  REQUIRE(DecodeSampleBlock(EncodeSampleBlock({}), &out).ok());
  CHECK(out.empty());
}

TEST_CASE("periodic samples store their time deltas as period multiples plus small jitter") {
  std::vector<BlockSample> in;
  std::mt19937 rng(7);
  // 40 threads sampled at 20 Hz (every 1-3 ticks) with up to 20 us jitter.
  for (uint32_t thread = 1; thread <= 40; ++thread) {
    int64_t t = 1'700'000'000'000'000'000 + thread * 1'000'000;
    for (int i = 0; i < 250; ++i) {
      t += 50'000'000 * (1 + static_cast<int64_t>(rng() % 3));
      in.push_back({t + static_cast<int64_t>(rng() % 20'000), static_cast<uint32_t>(rng() % 1500), thread, 0, 1});
    }
  }
  std::string block = EncodeSampleBlock(in);
  // Per sample: 1 byte of set id, 2 of stack, 1 quotient, 3 remainder (the
  // remainder is the jitter; without the period it would be 4+ bytes of
  // delta), constant link and value.
  CHECK(block.size() < in.size() * 7 + 400);
  std::vector<BlockSample> out;
  REQUIRE(DecodeSampleBlock(block, &out).ok());
  SortLikeBlock(&in);
  CHECK(out == in);
}

TEST_CASE("blocks without a period (few or irregular samples) round trip") {
  std::vector<BlockSample> in = {{10, 1, 1, 0, 1}, {13, 1, 1, 0, 1}, {13, 2, 1, 0, 5}, {1000, 3, 1, 0, 1}};
  std::vector<BlockSample> out;
  REQUIRE(DecodeSampleBlock(EncodeSampleBlock(in), &out).ok());
  CHECK(out == in);
}

TEST_CASE("corrupt blocks give DataLoss, never a crash") {
  std::vector<BlockSample> in = {{10, 1, 1, 0, 1}, {20, 2, 1, 0, 1}};
  std::string block = EncodeSampleBlock(in);
  std::vector<BlockSample> out;
  for (size_t n = 0; n < block.size(); ++n) {
    CHECK(DecodeSampleBlock(std::string_view(block.data(), n), &out).code() ==
          absl::StatusCode::kDataLoss);
  }
  std::string wrong_version = block;
  wrong_version[0] = 9;
  absl::Status s = DecodeSampleBlock(wrong_version, &out);
  CHECK(s.code() == absl::StatusCode::kDataLoss);
  CHECK(s.message().find("version 9") != std::string_view::npos);
  // A huge count with constant columns would be tiny on disk; it must be
  // refused, not allocated.
  std::string huge_count = std::string(1, 1) + "\xff\xff\xff\xff\x0f";
  absl::Status huge = DecodeSampleBlock(huge_count, &out);
  CHECK(huge.code() == absl::StatusCode::kDataLoss);
  CHECK(huge.message().find("exceeds the limit") != std::string_view::npos);
  std::mt19937 rng(42);
  for (int i = 0; i < 2000; ++i) {
    std::string junk(rng() % 64, '\0');
    for (char& c : junk) c = static_cast<char>(rng());
    if (!junk.empty()) junk[0] = 1;
    (void)DecodeSampleBlock(junk, &out);  // must not crash or read out of bounds (ASan in CI)
  }
}

}  // namespace kiln::storage
