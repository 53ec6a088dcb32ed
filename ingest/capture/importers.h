// The per-format importers behind ImportBytes (capture.h), exposed for
// unit tests and fuzz targets. Each one parses decompressed content and
// fills ctx.out; errors carry the capture's name and a position.
#pragma once

#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>

#include "absl/container/node_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ingest/capture/capture.h"

namespace kiln::capture {

// Debian's abseil is built without std::string_view aliasing, so
// absl::StrCat and absl's string-keyed hash maps need absl::string_view.
inline absl::string_view Av(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// Shared state of one import: name for messages, options, the result, and
// the progress/cancel plumbing.
class ParseContext {
 public:
  ParseContext(std::string_view name, const ImportOptions& options, ImportedCapture* out)
      : name_(name), options_(options), out_(out) {}

  const std::string& name() const { return name_; }
  const ImportOptions& options() const { return options_; }
  ImportedCapture* out() { return out_; }

  // Reports progress at most every few MB; Cancelled when the caller asked.
  [[nodiscard]] absl::Status Tick(uint64_t bytes_done, uint64_t bytes_total);
  // Records a skipped record with a message (the first ~20 are kept).
  void Skip(std::string message);
  void Warn(std::string message);

  // "NAME: byte 123: what" and "NAME:17: what".
  absl::Status ErrorAtByte(uint64_t offset, std::string_view what) const;
  absl::Status ErrorAtLine(uint64_t line, std::string_view what) const;

 private:
  std::string name_;
  const ImportOptions& options_;
  ImportedCapture* out_;
  uint64_t next_tick_ = 0;
};

// Names as ImportOptions::demangle wants them; remembers what it demangled
// (a profile repeats few names many times). The view is valid until the
// argument's storage goes.
class NameDemangler {
 public:
  explicit NameDemangler(bool enabled) : enabled_(enabled) {}
  std::string_view operator()(std::string_view name);

 private:
  bool enabled_;
  absl::node_hash_map<std::string, std::string> cache_;  // stable values: views stay valid
};

[[nodiscard]] absl::Status ImportFolded(std::string_view text, ParseContext& ctx);
[[nodiscard]] absl::Status ImportPerfScript(std::string_view text, ParseContext& ctx);
[[nodiscard]] absl::Status ImportPprof(std::string_view data, ParseContext& ctx);
[[nodiscard]] absl::Status ImportOtlpProtobuf(std::string_view data, ParseContext& ctx);
[[nodiscard]] absl::Status ImportOtlpJson(std::string_view text, ParseContext& ctx);

// Asks the kernel for transparent huge pages under a large buffer that is
// about to be filled: a 100 MB import otherwise spends a fifth of its time
// in 4 KB page faults. A hint only; harmless where unsupported.
void AdviseHugePages(const void* data, size_t bytes);

// Bytes that are never zero-filled when allocated or grown (a std::string
// resized to 100 MB is: a pass over it, and its page faults, for nothing).
class ByteBuffer {
 public:
  ByteBuffer() = default;
  ByteBuffer(ByteBuffer&& o) noexcept : data_(o.data_), size_(o.size_), capacity_(o.capacity_) {
    o.data_ = nullptr;
    o.size_ = o.capacity_ = 0;
  }
  ByteBuffer& operator=(ByteBuffer&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(capacity_, o.capacity_);
    return *this;
  }
  ByteBuffer(const ByteBuffer&) = delete;
  ByteBuffer& operator=(const ByteBuffer&) = delete;
  ~ByteBuffer() { std::free(data_); }

  // Grows the capacity to at least `capacity` (realloc: large blocks move
  // without a copy); false when out of memory.
  [[nodiscard]] bool Reserve(size_t capacity);
  bool Append(const char* p, size_t n);
  char* data() { return data_; }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  void set_size(size_t n) { size_ = n; }  // n <= capacity(), bytes written by the caller
  std::string_view view() const { return std::string_view(data_, size_); }

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

// gzip (all members) or zstd (all frames); fails beyond `max_bytes`.
[[nodiscard]] absl::StatusOr<ByteBuffer> Decompress(std::string_view data, Compression compression,
                                                    uint64_t max_bytes, std::string_view name);

// Text with a UTF-8 BOM, or UTF-16 LE/BE with a BOM, as UTF-8 without BOM.
// Returns false (and leaves `out` alone) when `data` is already plain.
bool DecodeTextBom(std::string_view data, std::string* out);

// OTLP JSON: rewrites hex ids (traceId, spanId, profileId) as base64 so
// protobuf's JSON parser accepts them, and checks syntax and nesting depth
// with line:column positions. Exposed for tests.
[[nodiscard]] absl::StatusOr<std::string> PrepareOtlpJson(std::string_view text, std::string_view name);

}  // namespace kiln::capture
