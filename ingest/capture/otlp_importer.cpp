// OTLP capture files: ExportProfilesServiceRequest or ProfilesData (same
// field numbers, so one parse serves both), in protobuf or OTLP JSON. The
// normalization is the receiver's own (ingest/otlp_normalizer.h): a file
// and a live request mean exactly the same thing.
//
// [SECTION] Locating protobuf errors
// [SECTION] OTLP JSON: syntax check and hex ids
// [SECTION] Importers
#include <google/protobuf/arena.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/util/json_util.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "ingest/capture/importers.h"
#include "ingest/capture/wire_reader.h"
#include "ingest/otlp_normalizer.h"

namespace kiln::capture {
namespace {

using Request = opentelemetry::proto::collector::profiles::v1development::ExportProfilesServiceRequest;
namespace pb = google::protobuf;

constexpr int kMaxDepth = 64;

// ============================================================================
// [SECTION] Locating protobuf errors
// ============================================================================

// protobuf's parser says only "failed"; walk the wire format with the
// message descriptors to find the first broken byte and the field path.
bool LocateWireError(const pb::Descriptor* desc, std::string_view data, uint64_t base, int depth,
                     std::string* path, uint64_t* offset, std::string* what) {
  if (depth > kMaxDepth) {
    *offset = base;
    *what = "messages nested deeper than 64 levels";
    return true;
  }
  WireReader r(data, base);
  uint32_t field, wire;
  while (r.NextField(&field, &wire)) {
    const pb::FieldDescriptor* fd = desc->FindFieldByNumber(static_cast<int>(field));
    if (fd != nullptr && fd->type() == pb::FieldDescriptor::TYPE_MESSAGE && wire == WireReader::kLen) {
      std::string_view payload;
      uint64_t payload_offset;
      if (!r.Bytes(&payload, &payload_offset)) break;
      size_t keep = path->size();
      absl::StrAppend(path, path->empty() ? "" : ".", fd->name());
      if (LocateWireError(fd->message_type(), payload, payload_offset, depth + 1, path, offset, what)) {
        return true;
      }
      path->resize(keep);
      continue;
    }
    if (fd != nullptr && fd->type() == pb::FieldDescriptor::TYPE_STRING && wire == WireReader::kLen) {
      std::string_view payload;
      uint64_t payload_offset;
      if (!r.Bytes(&payload, &payload_offset)) break;
      // proto3 strings must be UTF-8; protobuf rejects the message otherwise.
      if (!pb::internal::IsStructurallyValidUTF8(payload.data(), static_cast<int>(payload.size()))) {
        absl::StrAppend(path, path->empty() ? "" : ".", fd->name());
        *offset = payload_offset;
        *what = "string field is not valid UTF-8";
        return true;
      }
      continue;
    }
    if (!r.Skip(wire)) break;
  }
  if (r.error() != nullptr) {
    *offset = r.error_offset();
    *what = r.error();
    return true;
  }
  return false;
}

// ============================================================================
// [SECTION] OTLP JSON: syntax check and hex ids
// ============================================================================

// A small JSON scanner: copies the text, rewriting the values of the id
// fields (OTLP JSON writes them as hex, protobuf's JSON mapping expects
// base64), and reports syntax errors with line:column.
class JsonPrep {
 public:
  JsonPrep(std::string_view text, std::string_view name) : s_(text), name_(name) {}

  absl::StatusOr<std::string> Run() {
    out_.reserve(s_.size() + s_.size() / 8);
    Ws();
    if (!Value(0)) return Error();
    Ws();
    if (p_ != s_.size()) {
      msg_ = "trailing characters after the JSON value";
      return Error();
    }
    return std::move(out_);
  }

 private:
  absl::Status Error() const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < p_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return absl::InvalidArgumentError(absl::StrCat(Av(name_), ":", line, ":", col, ": ", msg_));
  }
  bool Fail(const char* m) {
    if (msg_.empty()) msg_ = m;
    return false;
  }
  void Ws() {
    size_t start = p_;
    while (p_ < s_.size() && (s_[p_] == ' ' || s_[p_] == '\t' || s_[p_] == '\n' || s_[p_] == '\r')) ++p_;
    out_.append(s_.substr(start, p_ - start));
  }
  // Copies `c` and steps over it when it is next.
  bool Take(char c) {
    if (p_ >= s_.size() || s_[p_] != c) return false;
    out_.push_back(c);
    ++p_;
    return true;
  }
  // After an object member or array element: ',' (*more = true) or `close`
  // (*more = false), with the white space around; anything else fails.
  bool Next(char close, bool* more, const char* expected) {
    Ws();
    if (Take(',')) {
      Ws();
      *more = true;
      return true;
    }
    if (Take(close)) {
      *more = false;
      return true;
    }
    return Fail(expected);
  }
  // Scans a string starting at '"'; sets *raw to its content (escapes kept).
  bool String(std::string_view* raw) {
    if (p_ >= s_.size() || s_[p_] != '"') return Fail("expected a string");
    size_t start = ++p_;
    while (p_ < s_.size() && s_[p_] != '"') {
      if (s_[p_] == '\\') {
        ++p_;
        if (p_ >= s_.size()) break;
      } else if (static_cast<unsigned char>(s_[p_]) < 0x20) {
        return Fail("control character inside a string");
      }
      ++p_;
    }
    if (p_ >= s_.size()) return Fail("unterminated string");
    *raw = s_.substr(start, p_ - start);
    ++p_;
    return true;
  }
  static bool IsIdKey(std::string_view k) {
    return k == "traceId" || k == "trace_id" || k == "spanId" || k == "span_id" || k == "profileId" ||
           k == "profile_id";
  }
  bool Value(int depth) {
    if (depth > kMaxDepth) return Fail("JSON nested deeper than 64 levels");
    if (p_ >= s_.size()) return Fail("unexpected end of input");
    char c = s_[p_];
    if (Take('{')) {
      Ws();
      if (Take('}')) return true;
      for (bool more = true; more;) {
        std::string_view key;
        size_t key_start = p_;
        if (!String(&key)) return false;
        out_.append(s_.substr(key_start, p_ - key_start));
        Ws();
        if (p_ >= s_.size() || s_[p_] != ':') return Fail("expected ':' after an object key");
        out_.push_back(':');
        ++p_;
        Ws();
        if (IsIdKey(key) && p_ < s_.size() && s_[p_] == '"') {
          std::string_view hex;
          if (!String(&hex)) return false;
          bool is_hex = hex.size() % 2 == 0;
          for (char h : hex) is_hex = is_hex && std::isxdigit(static_cast<unsigned char>(h));
          if (!is_hex) return Fail("id is not an even number of hex digits");
          out_.push_back('"');
          out_.append(absl::Base64Escape(absl::HexStringToBytes(Av(hex))));
          out_.push_back('"');
        } else if (!Value(depth + 1)) {
          return false;
        }
        if (!Next('}', &more, "expected ',' or '}' in an object")) return false;
      }
      return true;
    }
    if (Take('[')) {
      Ws();
      if (Take(']')) return true;
      for (bool more = true; more;) {
        if (!Value(depth + 1)) return false;
        if (!Next(']', &more, "expected ',' or ']' in an array")) return false;
      }
      return true;
    }
    if (c == '"') {
      size_t start = p_;
      std::string_view raw;
      if (!String(&raw)) return false;
      out_.append(s_.substr(start, p_ - start));
      return true;
    }
    size_t start = p_;
    if (c == '-' || (c >= '0' && c <= '9')) {
      ++p_;
      while (p_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[p_])) || s_[p_] == '.' ||
                                s_[p_] == 'e' || s_[p_] == 'E' || s_[p_] == '+' || s_[p_] == '-'))
        ++p_;
    } else if (s_.substr(p_, 4) == "true" || s_.substr(p_, 4) == "null") {
      p_ += 4;
    } else if (s_.substr(p_, 5) == "false") {
      p_ += 5;
    } else {
      return Fail("unexpected character");
    }
    out_.append(s_.substr(start, p_ - start));
    return true;
  }

  std::string_view s_;
  std::string_view name_;
  size_t p_ = 0;
  std::string out_;
  std::string msg_;
};

// ============================================================================
// [SECTION] Importers
// ============================================================================

absl::Status Normalize(const Request& request, ParseContext& ctx) {
  ingest::NormalizeResult result = ingest::NormalizeExportRequest(request);
  ImportedCapture* out = ctx.out();
  if (result.rejected_profiles > 0) {
    if (result.accepted_profiles == 0) {
      return absl::InvalidArgumentError(absl::StrCat(ctx.name(), ": every profile (",
                                                     result.rejected_profiles,
                                                     ") was rejected: ", result.error_message));
    }
    out->skipped_records += static_cast<uint64_t>(result.rejected_profiles);
    ctx.Warn(absl::StrCat(ctx.name(), ": ", result.rejected_profiles,
                          " profiles rejected: ", result.error_message));
  }
  out->batch = std::move(result.batch);
  return absl::OkStatus();
}

}  // namespace

absl::Status ImportOtlpProtobuf(std::string_view data, ParseContext& ctx) {
  if (data.size() > static_cast<size_t>(INT32_MAX)) {
    return ctx.ErrorAtByte(0, "OTLP message larger than 2 GiB (protobuf's limit)");
  }
  pb::Arena arena;
  auto* request = pb::Arena::CreateMessage<Request>(&arena);
  bool parsed;
  {
    // protobuf logs bad UTF-8 to stderr; our error message says it better.
    pb::LogSilencer silence;
    parsed = request->ParseFromArray(data.data(), static_cast<int>(data.size()));
  }
  if (!parsed) {
    std::string path;
    uint64_t offset = 0;
    std::string what = "not a valid OTLP protobuf message";
    LocateWireError(Request::descriptor(), data, 0, 0, &path, &offset, &what);
    return ctx.ErrorAtByte(offset,
                           absl::StrCat(path.empty() ? "" : "in ", path, path.empty() ? "" : ": ", what));
  }
  if (absl::Status s = ctx.Tick(data.size(), data.size()); !s.ok()) return s;
  return Normalize(*request, ctx);
}

absl::StatusOr<std::string> PrepareOtlpJson(std::string_view text, std::string_view name) {
  JsonPrep prep(text, name);
  return prep.Run();
}

absl::Status ImportOtlpJson(std::string_view text, ParseContext& ctx) {
  absl::StatusOr<std::string> json = PrepareOtlpJson(text, ctx.name());
  if (!json.ok()) return json.status();
  pb::Arena arena;
  auto* request = pb::Arena::CreateMessage<Request>(&arena);
  pb::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;  // OTLP: receivers ignore unknown fields
  auto status = pb::util::JsonStringToMessage(*json, request, options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(ctx.name(), ": not a valid OTLP JSON profiles message: ",
                     std::string(status.message().data(), status.message().size())));
  }
  if (absl::Status s = ctx.Tick(text.size(), text.size()); !s.ok()) return s;
  return Normalize(*request, ctx);
}

}  // namespace kiln::capture
