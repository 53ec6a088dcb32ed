#include "storage/sample_block.h"

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

// Reads a column of `count` values into `out`; false on truncation or an
// unknown tag.
bool GetColumn(const char** p, const char* end, size_t count, std::vector<uint64_t>* out) {
  out->assign(count, 0);
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
  for (int j = 0; j < tag; ++j) {
    const uint8_t* plane = planes + j * count;
    for (size_t i = 0; i < count; ++i) (*out)[i] |= static_cast<uint64_t>(plane[i]) << (8 * j);
  }
  *p += count * tag;
  return true;
}

}  // namespace

std::string EncodeSampleBlock(const std::vector<BlockSample>& samples) {
  std::string out;
  out.reserve(16 + samples.size() * 8);
  out.push_back(static_cast<char>(kSampleBlockVersion));
  PutVarint(&out, samples.size());
  if (samples.empty()) return out;
  PutVarint(&out, ZigZag(samples[0].time_ns));
  std::vector<uint64_t> column(samples.size() - 1);
  for (size_t i = 1; i < samples.size(); ++i) {
    column[i - 1] = static_cast<uint64_t>(samples[i].time_ns - samples[i - 1].time_ns);
  }
  PutColumn(&out, column);
  column.resize(samples.size());
  for (size_t i = 0; i < samples.size(); ++i) column[i] = samples[i].stack;
  PutColumn(&out, column);
  for (size_t i = 0; i < samples.size(); ++i) column[i] = samples[i].attribute_set;
  PutColumn(&out, column);
  for (size_t i = 0; i < samples.size(); ++i) column[i] = samples[i].link;
  PutColumn(&out, column);
  for (size_t i = 0; i < samples.size(); ++i) column[i] = ZigZag(samples[i].value);
  PutColumn(&out, column);
  return out;
}

absl::Status DecodeSampleBlock(std::string_view block, std::vector<BlockSample>* out) {
  out->clear();
  const char* p = block.data();
  const char* end = p + block.size();
  if (block.empty()) return absl::DataLossError("sample block is empty");
  auto version = static_cast<uint8_t>(*p++);
  if (version != kSampleBlockVersion) {
    return absl::DataLossError(absl::StrCat("sample block version ", version,
                                            " is not supported (this kiln reads version ",
                                            kSampleBlockVersion, ")"));
  }
  uint64_t n = 0;
  if (!GetVarint(&p, end, &n)) return absl::DataLossError("sample block: truncated count");
  if (n > kMaxBlockSamples) {
    return absl::DataLossError(absl::StrCat("sample block: count ", n, " exceeds the limit of ",
                                            kMaxBlockSamples));
  }
  if (n == 0) return p == end ? absl::OkStatus() : absl::DataLossError("sample block: trailing bytes");
  uint64_t first = 0;
  if (!GetVarint(&p, end, &first)) return absl::DataLossError("sample block: truncated first time");
  std::vector<uint64_t> deltas, stacks, sets, links, values;
  auto fail = [](const char* column) {
    return absl::DataLossError(absl::StrCat("sample block: truncated or corrupt ", column, " column"));
  };
  if (!GetColumn(&p, end, n - 1, &deltas)) return fail("time");
  if (!GetColumn(&p, end, n, &stacks)) return fail("stack");
  if (!GetColumn(&p, end, n, &sets)) return fail("attribute set");
  if (!GetColumn(&p, end, n, &links)) return fail("link");
  if (!GetColumn(&p, end, n, &values)) return fail("value");
  if (p != end) return absl::DataLossError("sample block: trailing bytes");
  out->resize(n);
  int64_t t = UnZigZag(first);
  for (uint64_t i = 0; i < n; ++i) {
    if (i > 0) t += static_cast<int64_t>(deltas[i - 1]);
    if (stacks[i] > UINT32_MAX || sets[i] > UINT32_MAX || links[i] > UINT32_MAX) return fail("id");
    (*out)[i] = {t, static_cast<uint32_t>(stacks[i]), static_cast<uint32_t>(sets[i]),
                 static_cast<uint32_t>(links[i]), UnZigZag(values[i])};
  }
  return absl::OkStatus();
}

}  // namespace kiln::storage
