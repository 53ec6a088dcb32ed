#include "storage/sample_block.h"

#include "absl/strings/str_cat.h"
#include "storage/varint.h"

namespace kiln::storage {

std::string EncodeSampleBlock(const std::vector<BlockSample>& samples) {
  std::string out;
  out.reserve(1 + 10 + samples.size() * 8);
  out.push_back(static_cast<char>(kSampleBlockVersion));
  PutVarint(&out, samples.size());
  if (samples.empty()) return out;
  PutVarint(&out, ZigZag(samples[0].time_ns));
  for (size_t i = 1; i < samples.size(); ++i) {
    PutVarint(&out, static_cast<uint64_t>(samples[i].time_ns - samples[i - 1].time_ns));
  }
  for (const BlockSample& s : samples) PutVarint(&out, s.stack);
  for (const BlockSample& s : samples) PutVarint(&out, s.attribute_set);
  for (const BlockSample& s : samples) PutVarint(&out, s.link);
  for (const BlockSample& s : samples) PutVarint(&out, ZigZag(s.value));
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
  // Every sample needs at least 5 bytes (one per column), which bounds a
  // corrupt count before we allocate for it.
  if (n > static_cast<uint64_t>(end - p) / 5 + 1) {
    return absl::DataLossError(absl::StrCat("sample block: count ", n, " exceeds block size"));
  }
  out->resize(n);
  if (n == 0) return absl::OkStatus();
  uint64_t v = 0;
  auto fail = [](const char* column) {
    return absl::DataLossError(absl::StrCat("sample block: truncated ", column, " column"));
  };
  if (!GetVarint(&p, end, &v)) return fail("time");
  int64_t t = UnZigZag(v);
  (*out)[0].time_ns = t;
  for (uint64_t i = 1; i < n; ++i) {
    if (!GetVarint(&p, end, &v)) return fail("time");
    t += static_cast<int64_t>(v);
    (*out)[i].time_ns = t;
  }
  for (uint64_t i = 0; i < n; ++i) {
    if (!GetVarint(&p, end, &v) || v > UINT32_MAX) return fail("stack");
    (*out)[i].stack = static_cast<uint32_t>(v);
  }
  for (uint64_t i = 0; i < n; ++i) {
    if (!GetVarint(&p, end, &v) || v > UINT32_MAX) return fail("attribute set");
    (*out)[i].attribute_set = static_cast<uint32_t>(v);
  }
  for (uint64_t i = 0; i < n; ++i) {
    if (!GetVarint(&p, end, &v) || v > UINT32_MAX) return fail("link");
    (*out)[i].link = static_cast<uint32_t>(v);
  }
  for (uint64_t i = 0; i < n; ++i) {
    if (!GetVarint(&p, end, &v)) return fail("value");
    (*out)[i].value = UnZigZag(v);
  }
  if (p != end) return absl::DataLossError("sample block: trailing bytes");
  return absl::OkStatus();
}

}  // namespace kiln::storage
