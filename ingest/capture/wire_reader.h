// WireReader: a bounds-checked protobuf wire-format cursor that knows the
// absolute byte offset of everything it reads, so decoders can say where a
// file is broken. No allocation; views point into the caller's buffer.
#pragma once

#include <cstdint>
#include <string_view>

namespace kiln::capture {

class WireReader {
 public:
  enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLen = 2, kFixed32 = 5 };

  // `base` is the absolute offset of data[0] in the file (for messages).
  WireReader(std::string_view data, uint64_t base)
      : p_(reinterpret_cast<const uint8_t*>(data.data())), begin_(p_), end_(p_ + data.size()), base_(base) {}

  bool done() const { return p_ >= end_; }
  uint64_t offset() const { return base_ + static_cast<uint64_t>(p_ - begin_); }
  const char* error() const { return error_; }

  // Reads a field tag. False at the end or on error (see error()).
  bool NextField(uint32_t* field, uint32_t* wire) {
    if (p_ >= end_) return false;
    field_offset_ = offset();
    uint64_t tag;
    if (!Varint(&tag)) return false;
    *field = static_cast<uint32_t>(tag >> 3);
    *wire = static_cast<uint32_t>(tag & 7);
    if (*field == 0 || (tag >> 3) > 0x1fffffff) return Fail("invalid field number 0");
    return true;
  }
  uint64_t field_offset() const { return field_offset_; }

  bool Varint(uint64_t* v) {
    // Fast path for one byte.
    if (p_ < end_ && *p_ < 0x80) {
      *v = *p_++;
      return true;
    }
    uint64_t result = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (p_ >= end_) return Fail("truncated varint");
      uint8_t b = *p_++;
      if (shift == 63 && b > 1) return Fail("varint longer than 64 bits");
      result |= uint64_t{b & 0x7fu} << shift;
      if (b < 0x80) {
        *v = result;
        return true;
      }
    }
    return Fail("varint longer than 10 bytes");
  }

  bool Bytes(std::string_view* out, uint64_t* payload_offset) {
    uint64_t len;
    if (!Varint(&len)) return false;
    if (len > static_cast<uint64_t>(end_ - p_)) {
      Fail(
          "length-delimited field runs past the end of its message (truncated or "
          "a huge declared length)");
      error_offset_ = field_offset_;  // where the broken field starts
      return false;
    }
    *payload_offset = offset();
    *out = std::string_view(reinterpret_cast<const char*>(p_), len);
    p_ += len;
    return true;
  }

  // Skips a field of wire type `wire` (unknown fields are legal).
  bool Skip(uint32_t wire) {
    uint64_t v;
    std::string_view s;
    switch (wire) {
      case kVarint:
        return Varint(&v);
      case kFixed64:
        if (end_ - p_ < 8) return Fail("truncated fixed64");
        p_ += 8;
        return true;
      case kLen:
        return Bytes(&s, &v);
      case kFixed32:
        if (end_ - p_ < 4) return Fail("truncated fixed32");
        p_ += 4;
        return true;
      default:
        return Fail("unsupported wire type (groups or garbage)");
    }
  }

  bool Fixed64(uint64_t* v) {
    if (end_ - p_ < 8) return Fail("truncated fixed64");
    uint64_t r = 0;
    for (int i = 0; i < 8; ++i) r |= uint64_t{p_[i]} << (8 * i);
    p_ += 8;
    *v = r;
    return true;
  }

  bool Fail(const char* message) {
    if (error_ == nullptr) error_ = message;
    error_offset_ = offset();
    return false;
  }
  uint64_t error_offset() const { return error_offset_; }

 private:
  const uint8_t* p_;
  const uint8_t* begin_;
  const uint8_t* end_;
  uint64_t base_;
  uint64_t field_offset_ = 0;
  uint64_t error_offset_ = 0;
  const char* error_ = nullptr;
};

}  // namespace kiln::capture
