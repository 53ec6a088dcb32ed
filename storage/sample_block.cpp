#include "storage/sample_block.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "storage/varint.h"

namespace kiln::storage {

namespace {

void PutColumn(std::string* out, const std::vector<uint64_t>& values) {
  if (values.empty()) return;
  uint64_t max = 0;
  bool constant = true;
  for (uint64_t v : values) {
    max |= v;
    constant = constant && v == values[0];
  }
  if (constant) {
    out->push_back(0);
    PutVarint(out, values[0]);
    return;
  }
  int width = 1;
  while (width < 8 && (max >> (8 * width)) != 0) ++width;
  out->push_back(static_cast<char>(width));
  size_t base = out->size();
  out->resize(base + values.size() * width);
  char* planes = out->data() + base;
  for (int j = 0; j < width; ++j) {
    char* plane = planes + j * values.size();
    for (size_t i = 0; i < values.size(); ++i) plane[i] = static_cast<char>(values[i] >> (8 * j));
  }
}

// Byte planes to values, for a width known at compile time (a scan
// decodes every sample it reads through here).
template <int kWidth>
void JoinPlanes(const uint8_t* __restrict planes, size_t count, uint64_t* __restrict out) {
  const uint8_t* p[8] = {};
  for (int j = 0; j < kWidth; ++j) p[j] = planes + static_cast<size_t>(j) * count;
  for (size_t i = 0; i < count; ++i) {
    // Spelled out per plane: a loop over planes with a variable shift ran
    // several times slower.
    uint64_t v = p[0][i];
    if constexpr (kWidth > 1) v |= static_cast<uint64_t>(p[1][i]) << 8;
    if constexpr (kWidth > 2) v |= static_cast<uint64_t>(p[2][i]) << 16;
    if constexpr (kWidth > 3) v |= static_cast<uint64_t>(p[3][i]) << 24;
    if constexpr (kWidth > 4) v |= static_cast<uint64_t>(p[4][i]) << 32;
    if constexpr (kWidth > 5) v |= static_cast<uint64_t>(p[5][i]) << 40;
    if constexpr (kWidth > 6) v |= static_cast<uint64_t>(p[6][i]) << 48;
    if constexpr (kWidth > 7) v |= static_cast<uint64_t>(p[7][i]) << 56;
    out[i] = v;
  }
}

// Reads a column of `count` values into `out`; false on truncation or an
// unknown tag.
bool GetColumn(const char** p, const char* end, size_t count, std::vector<uint64_t>* out) {
  out->resize(count);
  if (count == 0) return true;
  if (*p >= end) return false;
  auto tag = static_cast<uint8_t>(*(*p)++);
  if (tag == 0) {
    uint64_t v = 0;
    if (!GetVarint(p, end, &v)) return false;
    std::fill(out->begin(), out->end(), v);
    return true;
  }
  if (tag > 8 || static_cast<uint64_t>(end - *p) / tag < count) return false;
  const auto* planes = reinterpret_cast<const uint8_t*>(*p);
  uint64_t* values = out->data();
  switch (tag) {
    case 1: JoinPlanes<1>(planes, count, values); break;
    case 2: JoinPlanes<2>(planes, count, values); break;
    case 3: JoinPlanes<3>(planes, count, values); break;
    case 4: JoinPlanes<4>(planes, count, values); break;
    case 5: JoinPlanes<5>(planes, count, values); break;
    case 6: JoinPlanes<6>(planes, count, values); break;
    case 7: JoinPlanes<7>(planes, count, values); break;
    default: JoinPlanes<8>(planes, count, values); break;
  }
  *p += count * tag;
  return true;
}

}  // namespace

namespace {

// The period of the dominant sampler: the mean of the smallest cluster of
// positive deltas (those within 1.5x the 10th percentile). 0 when there
// are too few deltas to tell.
uint64_t EstimatePeriod(std::vector<uint64_t> deltas) {
  deltas.erase(std::remove(deltas.begin(), deltas.end(), 0), deltas.end());
  if (deltas.size() < 8) return 0;
  auto p10 = deltas.begin() + deltas.size() / 10;
  std::nth_element(deltas.begin(), p10, deltas.end());
  const uint64_t limit = *p10 + *p10 / 2;
  unsigned __int128 sum = 0;
  uint64_t count = 0;
  for (uint64_t d : deltas) {
    if (d <= limit) {
      sum += d;
      ++count;
    }
  }
  return count ? static_cast<uint64_t>(sum / count) : 0;
}

}  // namespace

std::string EncodeSampleBlock(std::vector<BlockSample> samples) {
  std::sort(samples.begin(), samples.end(), [](const BlockSample& a, const BlockSample& b) {
    if (a.attribute_set != b.attribute_set) return a.attribute_set < b.attribute_set;
    return a.time_ns < b.time_ns;
  });
  const size_t n = samples.size();
  std::string out;
  out.reserve(16 + n * 8);
  out.push_back(static_cast<char>(kSampleBlockVersion));
  PutVarint(&out, n);
  if (n == 0) return out;
  int64_t base = samples[0].time_ns;
  for (const BlockSample& s : samples) base = std::min(base, s.time_ns);
  std::vector<uint64_t> starts, deltas;
  for (size_t i = 0; i < n; ++i) {
    if (i == 0 || samples[i].attribute_set != samples[i - 1].attribute_set) {
      starts.push_back(static_cast<uint64_t>(samples[i].time_ns - base));
    } else {
      deltas.push_back(static_cast<uint64_t>(samples[i].time_ns - samples[i - 1].time_ns));
    }
  }
  const uint64_t period = EstimatePeriod(deltas);
  PutVarint(&out, ZigZag(base));
  PutVarint(&out, period);

  std::vector<uint64_t> column(n);
  for (size_t i = 0; i < n; ++i) column[i] = samples[i].attribute_set;
  PutColumn(&out, column);
  for (size_t i = 0; i < n; ++i) column[i] = samples[i].stack;
  PutColumn(&out, column);
  for (size_t i = 0; i < n; ++i) column[i] = samples[i].link;
  PutColumn(&out, column);
  for (size_t i = 0; i < n; ++i) column[i] = ZigZag(samples[i].value);
  PutColumn(&out, column);
  PutColumn(&out, starts);
  std::vector<uint64_t> quotients(deltas.size()), remainders(deltas.size());
  for (size_t i = 0; i < deltas.size(); ++i) {
    uint64_t q = period ? (deltas[i] + period / 2) / period : 0;
    quotients[i] = q;
    remainders[i] = ZigZag(static_cast<int64_t>(deltas[i] - q * period));
  }
  PutColumn(&out, quotients);
  PutColumn(&out, remainders);
  return out;
}

namespace {

// The header: version byte, then the count. Leaves `*p` after the count.
absl::StatusOr<uint64_t> ReadBlockHeader(const char** p, const char* end) {
  if (*p == end) return absl::DataLossError("sample block is empty");
  auto version = static_cast<uint8_t>(*(*p)++);
  if (version != kSampleBlockVersion) {
    return absl::DataLossError(absl::StrCat("sample block version ", version,
                                            " is not supported (this kiln reads version ",
                                            kSampleBlockVersion, ")"));
  }
  uint64_t n = 0;
  if (!GetVarint(p, end, &n)) return absl::DataLossError("sample block: truncated count");
  if (n > kMaxBlockSamples) {
    return absl::DataLossError(absl::StrCat("sample block: count ", n, " exceeds the limit of ",
                                            kMaxBlockSamples));
  }
  return n;
}

}  // namespace

absl::StatusOr<uint64_t> SampleBlockCount(std::string_view block) {
  const char* p = block.data();
  return ReadBlockHeader(&p, p + block.size());
}

absl::Status DecodeSampleBlock(std::string_view block, std::vector<BlockSample>* out) {
  out->clear();
  const char* p = block.data();
  const char* end = p + block.size();
  absl::StatusOr<uint64_t> count = ReadBlockHeader(&p, end);
  if (!count.ok()) return count.status();
  const uint64_t n = *count;
  if (n == 0) return p == end ? absl::OkStatus() : absl::DataLossError("sample block: trailing bytes");
  uint64_t base_zigzag = 0, period = 0;
  if (!GetVarint(&p, end, &base_zigzag) || !GetVarint(&p, end, &period)) {
    return absl::DataLossError("sample block: truncated header");
  }
  auto fail = [](const char* column) {
    return absl::DataLossError(absl::StrCat("sample block: truncated or corrupt ", column, " column"));
  };
  // Column buffers kept per thread: a scan decodes thousands of blocks.
  thread_local std::vector<uint64_t> sets, stacks, links, values, starts, quotients, remainders;
  if (!GetColumn(&p, end, n, &sets)) return fail("attribute set");
  size_t groups = 0;
  for (size_t i = 0; i < n; ++i) groups += (i == 0 || sets[i] != sets[i - 1]);
  if (!GetColumn(&p, end, n, &stacks)) return fail("stack");
  if (!GetColumn(&p, end, n, &links)) return fail("link");
  if (!GetColumn(&p, end, n, &values)) return fail("value");
  if (!GetColumn(&p, end, groups, &starts)) return fail("group start");
  if (!GetColumn(&p, end, n - groups, &quotients)) return fail("time quotient");
  if (!GetColumn(&p, end, n - groups, &remainders)) return fail("time remainder");
  if (p != end) return absl::DataLossError("sample block: trailing bytes");
  out->resize(n);
  // Times in unsigned arithmetic: a damaged block gives wrong times, never
  // a signed overflow (undefined behaviour); real blocks never wrap.
  const auto base = static_cast<uint64_t>(UnZigZag(base_zigzag));
  uint64_t t = base;
  for (size_t i = 0, g = 0, d = 0; i < n; ++i) {
    if (i == 0 || sets[i] != sets[i - 1]) {
      t = base + starts[g++];
    } else {
      t += quotients[d] * period + static_cast<uint64_t>(UnZigZag(remainders[d]));
      ++d;
    }
    if (stacks[i] > UINT32_MAX || sets[i] > UINT32_MAX || links[i] > UINT32_MAX) return fail("id");
    (*out)[i] = {static_cast<int64_t>(t), static_cast<uint32_t>(stacks[i]), static_cast<uint32_t>(sets[i]),
                 static_cast<uint32_t>(links[i]), UnZigZag(values[i])};
  }
  return absl::OkStatus();
}

}  // namespace kiln::storage
