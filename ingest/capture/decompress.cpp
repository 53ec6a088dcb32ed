// Decompression and text decoding for capture files. Sizes are checked
// while inflating so a small bomb cannot take the machine's memory.
#include <sys/mman.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "ingest/capture/importers.h"

#ifdef KILN_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

namespace kiln::capture {
namespace {

#ifdef KILN_HAVE_LIBDEFLATE
// Whole-buffer gzip (every member) with libdeflate, 2-3x zlib's speed.
// False on any trouble (corrupt, truncated, over the limit): zlib's
// streaming path then runs and says exactly what and where.
bool GunzipWhole(std::string_view data, uint64_t max_bytes, ByteBuffer* out) {
  libdeflate_decompressor* d = libdeflate_alloc_decompressor();
  if (d == nullptr) return false;
  size_t in_pos = 0;
  bool ok = true;
  while (ok) {
    size_t in_used = 0, produced = 0;
    libdeflate_result r;
    while (true) {
      r = libdeflate_gzip_decompress_ex(d, data.data() + in_pos, data.size() - in_pos,
                                        out->data() + out->size(), out->capacity() - out->size(), &in_used,
                                        &produced);
      if (r != LIBDEFLATE_INSUFFICIENT_SPACE) break;
      // Larger than the guess: grow and decode this member again.
      if (out->capacity() > max_bytes ||
          !out->Reserve(std::min<uint64_t>(max_bytes + 1, out->capacity() * 2 + 4096))) {
        break;
      }
    }
    if (r != LIBDEFLATE_SUCCESS) {
      ok = false;
      break;
    }
    out->set_size(out->size() + produced);
    if (out->size() > max_bytes) {
      ok = false;
      break;
    }
    in_pos += in_used;
    // Concatenated members are one stream (gzip(1) semantics); anything
    // else after a member is ignored, as zlib's path does.
    if (!(data.size() - in_pos >= 2 && static_cast<uint8_t>(data[in_pos]) == 0x1f &&
          static_cast<uint8_t>(data[in_pos + 1]) == 0x8b)) {
      break;
    }
  }
  libdeflate_free_decompressor(d);
  if (!ok) out->set_size(0);
  return ok;
}
#endif

absl::StatusOr<ByteBuffer> Gunzip(std::string_view data, uint64_t max_bytes, std::string_view name) {
  ByteBuffer out;
  // The trailer's ISIZE is the size mod 2^32 of the last member: right for
  // the usual single member, a first guess otherwise.
  uint64_t guess = data.size() * 5 + 1024;
  if (data.size() >= 18) {
    uint32_t isize;
    std::memcpy(&isize, data.data() + data.size() - 4, 4);
    // Deflate expands at most ~1032:1; a larger claim is a broken trailer.
    if (isize >= data.size() / 2 && isize <= data.size() * 1032) guess = isize;
  }
  if (!out.Reserve(std::min<uint64_t>(max_bytes, guess) + 1)) {
    return absl::ResourceExhaustedError(absl::StrCat(Av(name), ": out of memory for the gzip content"));
  }
  AdviseHugePages(out.data(), out.capacity());
#ifdef KILN_HAVE_LIBDEFLATE
  if (GunzipWhole(data, max_bytes, &out)) return out;
#endif
  z_stream zs{};
  // 16 + MAX_WBITS: gzip header and trailer, no zlib wrapper.
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) return absl::InternalError("zlib init failed");
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(std::min<size_t>(data.size(), UINT32_MAX));
  absl::Status status;
  while (true) {
    if (out.size() == out.capacity()) {
      // Grown past the guess (several members, or ISIZE mod 2^32).
      if (out.size() >= max_bytes) {
        status = absl::ResourceExhaustedError(
            absl::StrCat(Av(name), ": gzip content is larger than the limit of ", max_bytes, " bytes"));
        break;
      }
      if (!out.Reserve(std::min<uint64_t>(max_bytes + 1, out.capacity() * 2))) {
        status = absl::ResourceExhaustedError(absl::StrCat(Av(name), ": out of memory for the gzip content"));
        break;
      }
    }
    // Straight into the buffer: no bounce buffer, no second copy.
    const size_t room = std::min<size_t>(out.capacity() - out.size(), UINT32_MAX);
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + out.size());
    zs.avail_out = static_cast<uInt>(room);
    int rc = inflate(&zs, Z_NO_FLUSH);
    out.set_size(out.size() + (room - zs.avail_out));
    if (out.size() > max_bytes) {
      status = absl::ResourceExhaustedError(
          absl::StrCat(Av(name), ": gzip content is larger than the limit of ", max_bytes, " bytes"));
      break;
    }
    size_t offset = static_cast<size_t>(reinterpret_cast<const char*>(zs.next_in) - data.data());
    if (rc == Z_STREAM_END) {
      // Concatenated gzip members are one stream (gzip(1) semantics).
      if (offset < data.size() && data.size() - offset >= 2 && static_cast<uint8_t>(data[offset]) == 0x1f &&
          static_cast<uint8_t>(data[offset + 1]) == 0x8b) {
        inflateReset(&zs);
        continue;
      }
      break;
    }
    if (rc == Z_BUF_ERROR && zs.avail_in == 0) {
      status =
          absl::InvalidArgumentError(absl::StrCat(Av(name), ": byte ", offset, ": gzip data is truncated (",
                                                  out.size(), " bytes decompressed so far)"));
      break;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      status = absl::InvalidArgumentError(absl::StrCat(Av(name), ": byte ", offset, ": corrupt gzip data (",
                                                       zs.msg ? zs.msg : "zlib error", ")"));
      break;
    }
    if (zs.avail_in == 0 && zs.avail_out != 0 && rc == Z_OK) {
      // No more input and zlib did not finish: truncated.
      status =
          absl::InvalidArgumentError(absl::StrCat(Av(name), ": byte ", offset, ": gzip data is truncated (",
                                                  out.size(), " bytes decompressed so far)"));
      break;
    }
  }
  inflateEnd(&zs);
  if (!status.ok()) return status;
  return out;
}

absl::StatusOr<ByteBuffer> Unzstd(std::string_view data, uint64_t max_bytes, std::string_view name) {
  ZSTD_DStream* ds = ZSTD_createDStream();
  if (ds == nullptr) return absl::InternalError("zstd init failed");
  ByteBuffer out;
  ZSTD_inBuffer in{data.data(), data.size(), 0};
  char buf[1 << 16];
  absl::Status status;
  size_t last = 1;
  // Runs while input remains, then on until zstd reports the frame complete
  // (last == 0); a call that neither consumes nor produces anything after the
  // input is gone means the data ended mid-frame.
  while (status.ok() && (in.pos < in.size || last != 0)) {
    const size_t consumed_before = in.pos;
    ZSTD_outBuffer ob{buf, sizeof(buf), 0};
    last = ZSTD_decompressStream(ds, &ob, &in);
    if (ZSTD_isError(last)) {
      status = absl::InvalidArgumentError(
          absl::StrCat(Av(name), ": byte ", in.pos, ": corrupt zstd data (", ZSTD_getErrorName(last), ")"));
      break;
    }
    if (out.size() + ob.pos > max_bytes) {
      status = absl::ResourceExhaustedError(
          absl::StrCat(Av(name), ": zstd content is larger than the limit of ", max_bytes, " bytes"));
      break;
    }
    if (!out.Append(buf, ob.pos)) {
      status = absl::ResourceExhaustedError(absl::StrCat(Av(name), ": out of memory for the zstd content"));
      break;
    }
    if (in.pos == in.size && consumed_before == in.pos && ob.pos == 0 && last != 0) {
      status = absl::InvalidArgumentError(absl::StrCat(Av(name), ": byte ", data.size(),
                                                       ": zstd data is truncated (", out.size(),
                                                       " bytes decompressed so far)"));
    }
  }
  ZSTD_freeDStream(ds);
  if (!status.ok()) return status;
  return out;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace

void AdviseHugePages(const void* data, size_t bytes) {
#ifdef MADV_HUGEPAGE
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  if (bytes < 2 * kHuge) return;
  auto begin = (reinterpret_cast<uintptr_t>(data) + kHuge - 1) & ~(kHuge - 1);
  auto end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(kHuge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)data;
  (void)bytes;
#endif
}

Compression SniffCompression(std::string_view head) {
  if (head.size() >= 2 && static_cast<uint8_t>(head[0]) == 0x1f && static_cast<uint8_t>(head[1]) == 0x8b)
    return Compression::kGzip;
  if (head.size() >= 4 && static_cast<uint8_t>(head[0]) == 0x28 && static_cast<uint8_t>(head[1]) == 0xb5 &&
      static_cast<uint8_t>(head[2]) == 0x2f && static_cast<uint8_t>(head[3]) == 0xfd)
    return Compression::kZstd;
  return Compression::kNone;
}

std::string_view CompressionName(Compression compression) {
  switch (compression) {
    case Compression::kNone:
      return "none";
    case Compression::kGzip:
      return "gzip";
    case Compression::kZstd:
      return "zstd";
  }
  return "none";
}

bool ByteBuffer::Reserve(size_t capacity) {
  if (capacity <= capacity_) return true;
  void* p = std::realloc(data_, capacity);
  if (p == nullptr) return false;
  data_ = static_cast<char*>(p);
  capacity_ = capacity;
  return true;
}

bool ByteBuffer::Append(const char* p, size_t n) {
  if (size_ + n > capacity_ && !Reserve(std::max(size_ + n, capacity_ * 2 + 4096))) return false;
  if (n > 0) std::memcpy(data_ + size_, p, n);
  size_ += n;
  return true;
}

absl::StatusOr<ByteBuffer> Decompress(std::string_view data, Compression compression, uint64_t max_bytes,
                                      std::string_view name) {
  switch (compression) {
    case Compression::kGzip:
      return Gunzip(data, max_bytes, name);
    case Compression::kZstd:
      return Unzstd(data, max_bytes, name);
    case Compression::kNone:
      break;
  }
  ByteBuffer copy;
  if (!copy.Append(data.data(), data.size())) return absl::ResourceExhaustedError("out of memory");
  return copy;
}

bool DecodeTextBom(std::string_view data, std::string* out) {
  auto b = [&](size_t i) { return static_cast<uint8_t>(data[i]); };
  if (data.size() >= 3 && b(0) == 0xEF && b(1) == 0xBB && b(2) == 0xBF) {
    *out = std::string(data.substr(3));
    return true;
  }
  if (data.size() < 2) return false;
  bool le = b(0) == 0xFF && b(1) == 0xFE;
  bool be = b(0) == 0xFE && b(1) == 0xFF;
  if (!le && !be) return false;
  std::string result;
  result.reserve(data.size());
  size_t n = (data.size() - 2) / 2;
  for (size_t i = 0; i < n; ++i) {
    size_t p = 2 + 2 * i;
    uint32_t u = le ? (b(p) | (b(p + 1) << 8)) : ((b(p) << 8) | b(p + 1));
    if (u >= 0xD800 && u < 0xDC00 && i + 1 < n) {
      size_t q = p + 2;
      uint32_t u2 = le ? (b(q) | (b(q + 1) << 8)) : ((b(q) << 8) | b(q + 1));
      if (u2 >= 0xDC00 && u2 < 0xE000) {
        AppendUtf8(0x10000 + ((u - 0xD800) << 10) + (u2 - 0xDC00), &result);
        ++i;
        continue;
      }
    }
    if (u >= 0xD800 && u < 0xE000) u = 0xFFFD;  // lone surrogate
    AppendUtf8(u, &result);
  }
  *out = std::move(result);
  return true;
}

}  // namespace kiln::capture
