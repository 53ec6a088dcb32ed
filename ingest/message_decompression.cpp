#include "ingest/message_decompression.h"

#include <zlib.h>

#include <algorithm>

#include "ingest/message_text.h"

namespace kiln::ingest {

std::string_view SniffCompression(std::string_view bytes) {
  if (bytes.size() < 2) return {};
  const auto b0 = static_cast<unsigned char>(bytes[0]);
  const auto b1 = static_cast<unsigned char>(bytes[1]);
  if (b0 == 0x1f && b1 == 0x8b) return "gzip";
  // zlib header: method 8 (deflate), window <= 32 KiB, check bits.
  if ((b0 & 0x0f) == 8 && (b0 >> 4) <= 7 && (b0 * 256 + b1) % 31 == 0) return "deflate";
  return {};
}

absl::StatusOr<std::string> InflateMessage(std::string_view compressed, std::string_view encoding,
                                           size_t max_bytes) {
  z_stream z{};
  // 16 + 15: gzip wrapper; 15: zlib wrapper.
  const int window_bits = encoding == "gzip" ? 16 + MAX_WBITS : MAX_WBITS;
  if (inflateInit2(&z, window_bits) != Z_OK) {
    return absl::InternalError("zlib inflateInit2 failed");
  }
  std::string out;
  // Room for one byte past the limit, so "exactly the limit" and "more"
  // are told apart.
  const size_t cap = max_bytes + 1;
  out.resize(std::min(cap, std::max<size_t>(64 << 10, compressed.size() * 4)));
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  z.avail_in = static_cast<uInt>(compressed.size());
  size_t produced = 0;
  absl::Status status;
  for (;;) {
    if (produced == out.size()) {
      if (out.size() >= cap) {
        status = absl::ResourceExhaustedError(
            Cat("request decompresses to more than the limit of ", max_bytes, " bytes"));
        break;
      }
      out.resize(std::min(cap, out.size() * 2));
    }
    z.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    z.avail_out = static_cast<uInt>(std::min<size_t>(out.size() - produced, 1u << 30));
    const uInt before = z.avail_out;
    const int rc = inflate(&z, Z_NO_FLUSH);
    produced += before - z.avail_out;
    if (rc == Z_STREAM_END) {
      if (z.avail_in == 0) break;
      // Concatenated gzip members are one stream (RFC 1952).
      if (inflateReset(&z) != Z_OK) {
        status = absl::InternalError("zlib inflateReset failed");
        break;
      }
      continue;
    }
    // No progress although there is room for output: the input ended
    // before the stream did.
    if (rc == Z_BUF_ERROR && (z.avail_in == 0 || z.avail_out != 0)) {
      status = absl::InvalidArgumentError(
          Cat(encoding, " data ends early (", compressed.size(), " compressed bytes)"));
      break;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      status = absl::InvalidArgumentError(Cat(encoding, " data is corrupt at compressed byte offset ",
                                              compressed.size() - z.avail_in, ": ",
                                              z.msg != nullptr ? z.msg : "unknown zlib error"));
      break;
    }
  }
  inflateEnd(&z);
  if (!status.ok()) return status;
  if (produced > max_bytes) {
    return absl::ResourceExhaustedError(
        Cat("request decompresses to more than the limit of ", max_bytes, " bytes"));
  }
  out.resize(produced);
  return out;
}

}  // namespace kiln::ingest
