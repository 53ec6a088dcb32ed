// Entry points of capture import: read, decompress, sniff, dispatch.
#include "ingest/capture/capture.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>

#include "absl/strings/str_cat.h"
#include "ingest/capture/importers.h"
#include "ingest/symbols/demangle.h"

namespace kiln::capture {
namespace {

constexpr uint64_t kTickBytes = 4 << 20;
constexpr size_t kMaxKeptMessages = 20;

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
bool IsHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// True when the first few KB look like text (no NUL, few control bytes).
bool LooksLikeText(std::string_view data) {
  size_t n = std::min<size_t>(data.size(), 4096);
  if (n == 0) return false;
  size_t control = 0, invalid = 0;
  for (size_t i = 0; i < n; ++i) {
    auto c = static_cast<uint8_t>(data[i]);
    if (c == 0) return false;
    if (c < 0x20 && c != '\n' && c != '\r' && c != '\t') ++control;
    if (c >= 0x80) {
      // Mostly well-formed UTF-8 (a stray Latin-1 byte is still text; a
      // sequence cut at the window's end is fine).
      size_t len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
      bool ok = len != 0;
      for (size_t k = 1; ok && k < len && i + k < n; ++k) {
        ok = (static_cast<uint8_t>(data[i + k]) & 0xC0) == 0x80;
      }
      if (ok) {
        i += len - 1;
      } else {
        ++invalid;
      }
    }
  }
  return control * 50 < n && invalid * 10 < n + 20;
}

// A perf script stack line: whitespace, a hex address, a symbol, " (dso)".
bool LooksLikePerfStackLine(std::string_view line) {
  size_t i = 0;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  if (i == 0) return false;
  size_t start = i;
  while (i < line.size() && IsHex(line[i])) ++i;
  if (i == start) return false;
  if (line.find(" (") != std::string_view::npos && line.back() == ')') return true;
  // `-F ip,sym` without dso: "  addr sym".
  return i < line.size() && (line[i] == ' ' || line[i] == '\t');
}

// A perf script event header: "comm pid[/tid] [cpu] [time:] [period] event:"
// (the comm may hold spaces; old perf prints no time): it ends with ':' and
// a field after the first is a pid.
bool LooksLikePerfHeader(std::string_view line) {
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
  if (line.empty() || line.back() != ':' || line[0] == ' ' || line[0] == '\t') return false;
  size_t pos = line.find_first_of(" \t");
  while (pos != std::string_view::npos) {
    const size_t start = line.find_first_not_of(" \t", pos);
    if (start == std::string_view::npos) break;
    pos = line.find_first_of(" \t", start);
    const std::string_view field = line.substr(start, pos == std::string_view::npos ? pos : pos - start);
    const size_t slash = field.find('/');
    auto digits = [](std::string_view d) {
      return !d.empty() && std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (digits(field.substr(0, slash)) && (slash == std::string_view::npos || digits(field.substr(slash + 1)))) {
      return true;
    }
  }
  return false;
}

// A frame line of old perf, which did not indent them: "addr sym (dso)".
bool LooksLikeUnindentedPerfFrame(std::string_view line) {
  size_t i = 0;
  while (i < line.size() && IsHex(line[i])) ++i;
  return i > 0 && i < line.size() && line[i] == ' ' && !line.empty() && line.back() == ')' &&
         line.find(" (") != std::string_view::npos;
}

// Protobuf: distinguishes pprof's Profile from OTLP's request/ProfilesData.
// Both begin with field 1 (length-delimited); OTLP has only fields 1 and 2
// at the top level and field 1 holds a ResourceProfiles (a message with a
// nested message), while pprof's field 1 is a ValueType of two varints.
CaptureFormat SniffProtobuf(std::string_view data) {
  size_t pos = 0;
  auto varint = [&](uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64 && pos < data.size(); shift += 7) {
      auto b = static_cast<uint8_t>(data[pos++]);
      *v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  };
  for (int fields = 0; fields < 64 && pos < data.size(); ++fields) {
    uint64_t tag;
    if (!varint(&tag)) return CaptureFormat::kPprof;
    uint64_t field = tag >> 3, wire = tag & 7;
    if (field > 2) return CaptureFormat::kPprof;
    if (wire != 2) return CaptureFormat::kPprof;
    uint64_t len;
    if (!varint(&len) || len > data.size() - pos) return CaptureFormat::kPprof;
    std::string_view payload = data.substr(pos, len);
    pos += len;
    if (field == 1) {
      // Look at the first tag inside: OTLP ResourceProfiles starts with a
      // message or string (wire type 2); pprof ValueType with varints.
      if (payload.empty()) continue;
      auto first = static_cast<uint8_t>(payload[0]);
      return (first & 7) == 2 ? CaptureFormat::kOtlpProtobuf : CaptureFormat::kPprof;
    }
  }
  return CaptureFormat::kOtlpProtobuf;
}

int64_t FileMtimeNs(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return 0;
  return int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
}

}  // namespace

std::string_view CaptureFormatName(CaptureFormat format) {
  switch (format) {
    case CaptureFormat::kUnknown:
      return "unknown";
    case CaptureFormat::kOtlpProtobuf:
      return "otlp";
    case CaptureFormat::kOtlpJson:
      return "otlp-json";
    case CaptureFormat::kPprof:
      return "pprof";
    case CaptureFormat::kFolded:
      return "folded";
    case CaptureFormat::kPerfScript:
      return "perf-script";
  }
  return "unknown";
}

std::string_view NameDemangler::operator()(std::string_view name) {
  // Itanium C++ ("_Z...") and Rust ("_ZN...E" legacy, "_R..." v0) only,
  // and Rust legacy names perf already made paths of ("...::h<16 hex>").
  if (!enabled_) return name;
  const bool mangled = name.size() >= 3 && name[0] == '_' && (name[1] == 'Z' || name[1] == 'R');
  const bool rust_path = name.size() > 19 && name.compare(name.size() - 19, 3, "::h") == 0;
  if (!mangled && !rust_path) return name;
  auto [it, added] = cache_.try_emplace(std::string(name));
  if (added) it->second = symbols::Demangle(it->first);
  return it->second;
}

absl::Status ParseContext::Tick(uint64_t bytes_done, uint64_t bytes_total) {
  if (bytes_done < next_tick_) return absl::OkStatus();
  next_tick_ = bytes_done + kTickBytes;
  if (options_.cancel != nullptr && options_.cancel->load(std::memory_order_relaxed)) {
    return absl::CancelledError(absl::StrCat(name_, ": import cancelled"));
  }
  if (options_.progress) {
    ImportProgress p{bytes_done, bytes_total, out_->batch.samples.size()};
    if (!options_.progress(p)) return absl::CancelledError(absl::StrCat(name_, ": import cancelled"));
  }
  return absl::OkStatus();
}

void ParseContext::Skip(std::string message) {
  ++out_->skipped_records;
  if (out_->warnings.size() < kMaxKeptMessages) out_->warnings.push_back(std::move(message));
}

void ParseContext::Warn(std::string message) {
  if (out_->warnings.size() < kMaxKeptMessages) out_->warnings.push_back(std::move(message));
}

absl::Status ParseContext::ErrorAtByte(uint64_t offset, std::string_view what) const {
  return absl::InvalidArgumentError(absl::StrCat(name_, ": byte ", offset, ": ", Av(what)));
}

absl::Status ParseContext::ErrorAtLine(uint64_t line, std::string_view what) const {
  return absl::InvalidArgumentError(absl::StrCat(name_, ":", line, ": ", Av(what)));
}

std::string_view DescribeNonProfile(std::string_view data) {
  // Magic numbers at the start (file(1)'s magic database has the same);
  // the advice says what to do where there is something to do.
  using namespace std::string_view_literals;  // the magic numbers hold NUL bytes
  static constexpr std::pair<std::string_view, std::string_view> kMagic[] = {
      {"\x89PNG\r\n\x1a\n"sv, "a PNG image"},
      {"\xff\xd8\xff"sv, "a JPEG image"},
      {"GIF87a"sv, "a GIF image"},
      {"GIF89a"sv, "a GIF image"},
      {"%PDF-"sv, "a PDF document"},
      {"PK\x03\x04"sv, "a ZIP archive (unpack it and open the profile inside)"},
      {"\x7f" "ELF"sv, "an ELF executable (to name its frames, use `kiln symbols add` or drop it on the window)"},
      {"PERFILE2"sv, "a perf.data recording (convert it with `perf script > out.perf` and open that)"},
      {"FLR\0"sv, "a Java Flight Recorder file (async-profiler's jfrconv converts it to pprof or collapsed stacks)"},
      {"SQLite format 3\0"sv, "an SQLite database"},
      {"\xfd" "7zXZ\0"sv, "an xz file (kiln reads gzip and zstd: decompress it first)"},
      {"7z\xbc\xaf\x27\x1c"sv, "a 7-Zip archive"},
      {"\x1f\x9d"sv, "a compress (.Z) file (decompress it first)"},
  };
  for (const auto& [magic, what] : kMagic) {
    if (data.substr(0, magic.size()) == magic) return what;
  }
  // bzip2: "BZh", the block size, then the block magic (pi's digits in BCD).
  if (data.size() >= 10 && data.substr(0, 3) == "BZh" && data[3] >= '1' && data[3] <= '9' &&
      data.substr(4, 6) == "1AY&SY") {
    return "a bzip2 file (kiln reads gzip and zstd: decompress it first)";
  }
  // HTML, usually a download that fetched a page instead of the file.
  size_t i = 0;
  while (i < data.size() && IsSpace(data[i])) ++i;
  std::string head(data.substr(i, 15));
  for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (head.starts_with("<!doctype html") || head.starts_with("<html")) {
    return "an HTML page (if it was downloaded, the download fetched a page instead of the file)";
  }
  if (data.size() > 262 && data.substr(257, 5) == "ustar") return "a tar archive (unpack it and open the profile inside)";
  return {};
}

CaptureFormat SniffFormat(std::string_view data) {
  size_t i = 0;
  while (i < data.size() && IsSpace(data[i])) ++i;
  if (i == data.size()) return CaptureFormat::kUnknown;
  const bool text = LooksLikeText(data);
  if (text && data[i] == '{') {
    // `{` then a key or `}`: a protobuf can start with "\n{" (field 1, 123
    // bytes long), so the brace alone proves nothing.
    size_t j = i + 1;
    while (j < data.size() && IsSpace(data[j])) ++j;
    if (j == data.size() || data[j] == '"' || data[j] == '}') return CaptureFormat::kOtlpJson;
  }
  if (text) {
    // Look at up to 200 lines: any perf stack line or perf header wins.
    size_t pos = 0;
    int lines = 0;
    bool after_header = false;  // the line before was an event header
    while (pos < data.size() && lines < 200) {
      size_t end = data.find('\n', pos);
      if (end == std::string_view::npos) end = data.size();
      std::string_view line = data.substr(pos, end - pos);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      pos = end + 1;
      ++lines;
      if (line.substr(0, 10) == "# ========" || line.substr(0, 10) == "# cmdline ") {
        return CaptureFormat::kPerfScript;
      }
      if (LooksLikePerfStackLine(line)) return CaptureFormat::kPerfScript;
      if (after_header && LooksLikeUnindentedPerfFrame(line)) return CaptureFormat::kPerfScript;
      after_header = LooksLikePerfHeader(line);
    }
    return CaptureFormat::kFolded;
  }
  return SniffProtobuf(data);
}

namespace {

// Runs the importer of out->format on `data`.
absl::Status ImportAs(std::string_view data, std::string_view name, const ImportOptions& options,
                      ImportedCapture* out) {
  ParseContext ctx(name, options, out);
  switch (out->format) {
    case CaptureFormat::kUnknown:
      return absl::InvalidArgumentError(absl::StrCat(Av(name), ": byte 0: empty file, nothing to import"));
    case CaptureFormat::kOtlpProtobuf:
      return ImportOtlpProtobuf(data, ctx);
    case CaptureFormat::kOtlpJson:
      return ImportOtlpJson(data, ctx);
    case CaptureFormat::kPprof:
      return ImportPprof(data, ctx);
    case CaptureFormat::kFolded:
      return ImportFolded(data, ctx);
    case CaptureFormat::kPerfScript:
      return ImportPerfScript(data, ctx);
  }
  return absl::InternalError("unknown capture format");
}

}  // namespace

absl::StatusOr<ImportedCapture> ImportBytes(std::string_view bytes, std::string_view name,
                                            const ImportOptions& options) {
  ImportedCapture out;
  out.file_bytes = bytes.size();
  out.compression = SniffCompression(bytes);
  ByteBuffer decompressed;
  std::string_view data = bytes;
  if (out.compression != Compression::kNone) {
    auto d = Decompress(bytes, out.compression, options.max_decompressed_bytes, name);
    if (!d.ok()) return d.status();
    decompressed = std::move(*d);
    data = decompressed.view();
  }
  std::string text;
  if (DecodeTextBom(data, &text)) data = text;
  out.decompressed_bytes = data.size();
  if (const std::string_view what = DescribeNonProfile(data); !what.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Av(name), ": this is ", Av(what),
                     ", not a profile; kiln opens OTLP (protobuf or JSON), pprof, perf script text and folded "
                     "stacks, plain, gzip or zstd"));
  }
  out.format = SniffFormat(data);

  absl::Status status = ImportAs(data, name, options, &out);
  if (!status.ok() && !absl::IsCancelled(status) && out.format != CaptureFormat::kPprof &&
      out.format != CaptureFormat::kOtlpProtobuf) {
    // Sniffing text is a heuristic; a binary capture that happens to look
    // like text still opens if it parses as protobuf. The text error is the
    // one reported when that fails too.
    ImportedCapture retry;
    retry.file_bytes = out.file_bytes;
    retry.compression = out.compression;
    retry.decompressed_bytes = out.decompressed_bytes;
    retry.format = SniffProtobuf(data);
    if (ImportAs(data, name, options, &retry).ok() && !retry.batch.samples.empty()) {
      out = std::move(retry);
      status = absl::OkStatus();
    }
  }
  if (!status.ok()) return status;

  // Data range, sample types present, the type to show first.
  const auto& types = out.batch.dict.sample_types;
  std::vector<uint8_t> present(types.size(), 0);
  int64_t first = std::numeric_limits<int64_t>::max(), last = std::numeric_limits<int64_t>::min();
  for (const storage::Sample& s : out.batch.samples) {
    first = std::min(first, s.time_ns);
    last = std::max(last, s.time_ns);
    if (s.sample_type < present.size()) present[s.sample_type] = 1;
  }
  out.sample_types.clear();
  for (size_t i = 0; i < types.size(); ++i) {
    if (present[i]) out.sample_types.push_back(types[i].type);
  }
  if (!out.batch.samples.empty()) {
    out.first_time_ns = first;
    out.last_time_ns = last;
    out.timed = first != last;
  }
  if (out.format != CaptureFormat::kPprof || out.sample_types.empty()) {
    out.default_sample_type = storage::OnCpuOrFirst(out.sample_types);
  }
  if (out.range_end_ns <= out.range_start_ns) {  // the importer did not declare one
    out.range_start_ns = out.first_time_ns;
    out.range_end_ns = out.last_time_ns;
  }
  return out;
}

absl::StatusOr<ImportedCapture> ImportFile(const std::string& path, const ImportOptions& options) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  // A regular file is read in one go into a buffer of its size that is
  // never zero-filled first (a std::string would be: a pass over 100 MB
  // for nothing); pipes and files that grow meanwhile continue below.
  std::unique_ptr<char[]> buffer;
  size_t size = 0, capacity = 0;
  struct stat st {};
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    capacity = static_cast<size_t>(st.st_size);
    buffer.reset(new char[capacity]);
    AdviseHugePages(buffer.get(), capacity);
  }
  bool failed = false;
  std::string rest;  // beyond the file's size at open
  while (true) {
    if (size < capacity) {
      ssize_t n = read(fd, buffer.get() + size, capacity - size);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) failed = true;
      if (n <= 0) break;
      size += static_cast<size_t>(n);
      continue;
    }
    char chunk[1 << 16];
    ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) failed = true;
    if (n <= 0) break;
    rest.append(chunk, static_cast<size_t>(n));
  }
  close(fd);
  if (failed) return absl::DataLossError(absl::StrCat(path, ": read error: ", std::strerror(errno)));
  ImportOptions opts = options;
  if (opts.anchor_time_ns == 0) opts.anchor_time_ns = FileMtimeNs(path);
  if (rest.empty()) return ImportBytes(std::string_view(buffer.get(), size), path, opts);
  std::string all(buffer.get(), size);
  buffer.reset();
  all += rest;
  return ImportBytes(all, path, opts);
}

}  // namespace kiln::capture
