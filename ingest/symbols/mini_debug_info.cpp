#include "ingest/symbols/mini_debug_info.h"

#include <lzma.h>

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace kiln::symbols::internal {

absl::StatusOr<std::string> XzDecode(const uint8_t* in, size_t in_size, const std::string& name) {
  lzma_stream strm = LZMA_STREAM_INIT;
  if (lzma_stream_decoder(&strm, UINT64_MAX, 0) != LZMA_OK)
    return absl::ResourceExhaustedError(name + ": liblzma could not start a decoder");
  std::string out(std::min<size_t>(in_size * 4 + 4096, kMaxMiniDebugInfoBytes), '\0');
  strm.next_in = in;
  strm.avail_in = in_size;
  strm.next_out = reinterpret_cast<uint8_t*>(out.data());
  strm.avail_out = out.size();
  lzma_ret ret;
  while ((ret = lzma_code(&strm, LZMA_FINISH)) == LZMA_OK || (ret == LZMA_BUF_ERROR && strm.avail_out == 0)) {
    if (strm.avail_out != 0) continue;
    if (out.size() >= kMaxMiniDebugInfoBytes) {
      lzma_end(&strm);
      return absl::ResourceExhaustedError(absl::StrCat(name, ": .gnu_debugdata decompresses to more than ",
                                                       kMaxMiniDebugInfoBytes, " bytes"));
    }
    size_t used = out.size();
    out.resize(std::min(out.size() * 2, kMaxMiniDebugInfoBytes));
    strm.next_out = reinterpret_cast<uint8_t*>(out.data()) + used;
    strm.avail_out = out.size() - used;
  }
  size_t produced = out.size() - strm.avail_out;
  lzma_end(&strm);
  if (ret != LZMA_STREAM_END)
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": .gnu_debugdata is not a valid xz stream (liblzma error ", static_cast<int>(ret), ")"));
  out.resize(produced);
  return out;
}

}  // namespace kiln::symbols::internal
