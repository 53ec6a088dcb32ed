// LEB128 varints and zigzag, the integer encoding of every key and block in
// the store. Header-only: the hot loops inline them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kiln::storage {

inline void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

inline uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t UnZigZag(uint64_t v) {
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}

// Reads a varint from [*p, end). Returns false (leaving *p anywhere) on
// truncation or a varint longer than 10 bytes; never reads past `end`.
inline bool GetVarint(const char** p, const char* end, uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift < 64 && *p < end; shift += 7) {
    auto byte = static_cast<uint8_t>(**p);
    ++*p;
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *v = result;
      return true;
    }
  }
  return false;
}

// Reads a value's fields in order from [p, end): after the first failure
// every read gives 0 and `ok` stays false, so a decoder checks once at the
// end. Never reads past `end`.
struct VarintReader {
  const char* p;
  const char* end;
  bool ok = true;
  uint64_t Next() {
    uint64_t v = 0;
    if (ok && !GetVarint(&p, end, &v)) ok = false;
    return v;
  }
  uint8_t Byte() {
    if (!ok || p >= end) {
      ok = false;
      return 0;
    }
    return static_cast<uint8_t>(*p++);
  }
  // A count of entries of at least `min_bytes` each: more than the bytes
  // left is corrupt (bounds what a damaged value can make a reader allocate).
  bool Count(uint64_t* n, size_t min_bytes) {
    *n = Next();
    return ok && *n <= static_cast<uint64_t>(end - p) / min_bytes;
  }
};

// Big-endian fixed-width integers: keys sort bytewise in numeric order.
inline void PutBigEndian64(std::string* out, uint64_t v) {
  for (int i = 7; i >= 0; --i) out->push_back(static_cast<char>((v >> (i * 8)) & 0xff));
}
inline void PutBigEndian32(std::string* out, uint32_t v) {
  for (int i = 3; i >= 0; --i) out->push_back(static_cast<char>((v >> (i * 8)) & 0xff));
}
inline uint64_t GetBigEndian64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}
inline uint32_t GetBigEndian32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

}  // namespace kiln::storage
