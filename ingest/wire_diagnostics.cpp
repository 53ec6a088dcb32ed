#include "ingest/wire_diagnostics.h"

#include <cstdint>
#include <vector>

#include "ingest/message_text.h"

namespace kiln::ingest {

namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

// protobuf's default recursion limit; deeper input fails to parse there.
constexpr int kMaxDepth = 100;

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

// Strict UTF-8 as protobuf checks proto3 `string` fields: no overlong
// forms, no surrogates, nothing above U+10FFFF. Returns the offset of the
// first bad byte, or -1.
int64_t FirstInvalidUtf8(const uint8_t* p, size_t n) {
  size_t i = 0;
  while (i < n) {
    uint8_t c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t min;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) {
      len = 2, min = 0x80, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, min = 0x800, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, min = 0x10000, cp = c & 0x07;
    } else {
      return static_cast<int64_t>(i);
    }
    if (i + len > n) return static_cast<int64_t>(i);
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return static_cast<int64_t>(i);
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return static_cast<int64_t>(i);
    i += len;
  }
  return -1;
}

bool IsPackable(const FieldDescriptor* f) {
  return f->is_repeated() && f->type() != FieldDescriptor::TYPE_STRING &&
         f->type() != FieldDescriptor::TYPE_BYTES && f->type() != FieldDescriptor::TYPE_MESSAGE &&
         f->type() != FieldDescriptor::TYPE_GROUP;
}

WireType ScalarWireType(const FieldDescriptor* f) {
  switch (f->type()) {
    case FieldDescriptor::TYPE_FIXED64:
    case FieldDescriptor::TYPE_SFIXED64:
    case FieldDescriptor::TYPE_DOUBLE:
      return kFixed64;
    case FieldDescriptor::TYPE_FIXED32:
    case FieldDescriptor::TYPE_SFIXED32:
    case FieldDescriptor::TYPE_FLOAT:
      return kFixed32;
    default:
      return kVarint;
  }
}

class Walker {
 public:
  explicit Walker(const uint8_t* begin) : begin_(begin) {}

  // Walks [p, end) as `d` (nullptr: an unknown group's contents). Returns
  // false with error_ set at the first problem. `group_number` > 0 when
  // inside a group that must end with a matching end-group tag.
  bool Walk(const uint8_t* p, const uint8_t* end, const Descriptor* d, const std::string& path, int depth,
            int group_number, const uint8_t** group_end) {
    std::vector<std::pair<int, int>> counts;  // field number -> elements seen
    while (p < end) {
      const uint8_t* tag_start = p;
      uint64_t tag;
      if (!ReadVarint(&p, end, &tag)) return Fail(path, tag_start, "truncated or overlong tag varint");
      const uint64_t number = tag >> 3;
      const uint32_t wire = static_cast<uint32_t>(tag & 7);
      if (number == 0 || number > 536870911) {
        return Fail(path, tag_start, Cat("invalid field number ", number));
      }
      const FieldDescriptor* f = d != nullptr ? d->FindFieldByNumber(static_cast<int>(number)) : nullptr;
      int element = 0;
      if (f != nullptr && f->is_repeated()) element = Count(&counts, static_cast<int>(number));
      std::string field_path = f == nullptr
                                   ? Cat(path, path.empty() ? "" : " ", "(unknown field ", number, ")")
                                   : Cat(path, path.empty() ? "" : ".", f->name());
      if (f != nullptr && f->is_repeated() && !(wire == kLengthDelimited && IsPackable(f))) {
        CatAppend(&field_path, "[", element, "]");
      }
      switch (wire) {
        case kVarint: {
          uint64_t v;
          if (!ReadVarint(&p, end, &v)) return Fail(field_path, tag_start, "truncated or overlong varint");
          break;
        }
        case kFixed64:
          if (end - p < 8) return Fail(field_path, tag_start, Cat(end - p, " bytes left for a fixed64"));
          p += 8;
          break;
        case kFixed32:
          if (end - p < 4) return Fail(field_path, tag_start, Cat(end - p, " bytes left for a fixed32"));
          p += 4;
          break;
        case kLengthDelimited: {
          uint64_t len;
          if (!ReadVarint(&p, end, &len)) return Fail(field_path, tag_start, "truncated or overlong length");
          if (len > static_cast<uint64_t>(end - p)) {
            // A truncated request is cut inside every enclosing message;
            // the innermost field that breaks is the useful one to name,
            // with the innermost cut-off container for context.
            if (f != nullptr && f->type() == FieldDescriptor::TYPE_MESSAGE && depth + 1 < kMaxDepth &&
                !Walk(p, end, f->message_type(), field_path, depth + 1, 0, nullptr)) {
              if (!noted_cut_) {
                noted_cut_ = true;
                CatAppend(&error_, " (inside ", field_path, " at byte offset ", tag_start - begin_,
                          ", whose length ", len, " exceeds the ", end - p, " bytes left)");
              }
              return false;
            }
            return Fail(field_path, tag_start, Cat("length ", len, " exceeds the ", end - p, " bytes left"));
          }
          const uint8_t* body = p;
          p += len;
          if (f == nullptr) break;  // unknown: skipped by the parser
          if (f->type() == FieldDescriptor::TYPE_MESSAGE) {
            if (depth + 1 >= kMaxDepth) {
              return Fail(field_path, tag_start, Cat("messages nested deeper than ", kMaxDepth));
            }
            if (!Walk(body, p, f->message_type(), field_path, depth + 1, 0, nullptr)) return false;
          } else if (f->type() == FieldDescriptor::TYPE_STRING &&
                     f->file()->syntax() == google::protobuf::FileDescriptor::SYNTAX_PROTO3) {
            int64_t bad = FirstInvalidUtf8(body, len);
            if (bad >= 0) {
              return Fail(field_path, body + bad, "string is not valid UTF-8");
            }
          } else if (IsPackable(f)) {
            if (!WalkPacked(body, p, f, field_path)) return false;
          }
          break;
        }
        case kStartGroup: {
          if (depth + 1 >= kMaxDepth) {
            return Fail(field_path, tag_start, Cat("groups nested deeper than ", kMaxDepth));
          }
          const uint8_t* after = nullptr;
          if (!Walk(p, end, nullptr, field_path, depth + 1, static_cast<int>(number), &after)) {
            return false;
          }
          p = after;
          break;
        }
        case kEndGroup:
          if (group_number == static_cast<int>(number)) {
            *group_end = p;
            return true;
          }
          return Fail(path, tag_start, Cat("unexpected end-group tag for field ", number));
        default:
          return Fail(field_path, tag_start, Cat("invalid wire type ", wire));
      }
    }
    if (group_number > 0) {
      return Fail(path, end, Cat("group of field ", group_number, " is not closed"));
    }
    return true;
  }

  const std::string& error() const { return error_; }

 private:
  static int Count(std::vector<std::pair<int, int>>* counts, int number) {
    for (auto& [n, c] : *counts) {
      if (n == number) return c++;
    }
    counts->emplace_back(number, 1);
    return 0;
  }

  static bool ReadVarint(const uint8_t** p, const uint8_t* end, uint64_t* out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 70 && *p < end; shift += 7) {
      uint8_t b = *(*p)++;
      v |= static_cast<uint64_t>(b & 0x7F) << (shift < 64 ? shift : 63);
      if ((b & 0x80) == 0) {
        *out = v;
        return shift <= 63;
      }
    }
    return false;
  }

  bool WalkPacked(const uint8_t* p, const uint8_t* end, const FieldDescriptor* f, const std::string& path) {
    const WireType wire = ScalarWireType(f);
    const size_t width = wire == kFixed64 ? 8 : wire == kFixed32 ? 4 : 0;
    if (width != 0) {
      if ((end - p) % width != 0) {
        return Fail(path, p, Cat("packed length ", end - p, " is not a multiple of ", width));
      }
      return true;
    }
    while (p < end) {
      const uint8_t* start = p;
      uint64_t v;
      if (!ReadVarint(&p, end, &v)) return Fail(path, start, "truncated or overlong packed varint");
    }
    return true;
  }

  bool Fail(const std::string& path, const uint8_t* at, std::string_view what) {
    error_ = Cat(path.empty() ? std::string("message") : path, " at byte offset ", at - begin_, ": ", what);
    return false;
  }

  const uint8_t* begin_;
  std::string error_;
  bool noted_cut_ = false;
};

}  // namespace

std::string LocateDecodeError(std::string_view bytes, const Descriptor* descriptor) {
  const auto* begin = reinterpret_cast<const uint8_t*>(bytes.data());
  Walker walker(begin);
  if (walker.Walk(begin, begin + bytes.size(), descriptor, "", 0, 0, nullptr)) return {};
  return walker.error();
}

}  // namespace kiln::ingest
