// Capture files in: content sniffing and the importers that turn OTLP
// (protobuf or JSON), pprof, folded stacks and `perf script` text into one
// storage::ProfileBatch.
//
// Threads: every function here is a pure function of its input (plus the
// file it reads); call them from any thread, any number at once. A large
// pprof is read by the calling thread and one more it starts and joins
// (both cores of a small machine). The progress callback runs on the
// calling thread. Results own all their data.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "storage/model/profile_model.h"

namespace kiln::capture {

enum class CaptureFormat : uint8_t {
  kUnknown,
  kOtlpProtobuf,  // ExportProfilesServiceRequest or ProfilesData
  kOtlpJson,
  kPprof,
  kFolded,
  kPerfScript,
};
std::string_view CaptureFormatName(CaptureFormat format);  // "otlp", "otlp-json", ...

enum class Compression : uint8_t { kNone, kGzip, kZstd };
std::string_view CompressionName(Compression compression);  // "none", "gzip", "zstd"

struct ImportProgress {
  uint64_t bytes_done = 0;   // input bytes consumed (decompressed)
  uint64_t bytes_total = 0;  // decompressed size
  uint64_t samples = 0;      // samples produced so far
};

struct ImportOptions {
  // pprof: import only this sample type, by name ("cpu", "alloc_space") or
  // "type/unit". Empty: every sample type, each kept apart.
  std::string sample_type;
  // perf script: only samples of this event ("cycles", "cpu-clock"...).
  // Empty: the first event seen, as stackcollapse-perf.pl does, because
  // merging cycles with instructions gives a meaningless total.
  std::string perf_event;
  // perf script: weight = the sample period when perf printed one (what
  // stackcollapse-perf.pl sums), else 1 per sample.
  bool perf_use_period = true;
  // perf script and folded: C++ and Rust symbol names demangled as
  // `addr2line -C` prints them (perf built without a demangler prints them
  // mangled). false keeps them as written, as stackcollapse-perf.pl does.
  bool demangle = true;
  // Captures without absolute timestamps (folded, pprof without
  // time_nanos, perf script's boot-relative clock) are anchored here
  // (Unix ns). ImportFile uses the file's modification time when 0.
  int64_t anchor_time_ns = 0;
  // Refuse inputs that decompress to more than this (zip bombs).
  uint64_t max_decompressed_bytes = uint64_t{4} << 30;
  // Called every few MB of input; return false to cancel (the import then
  // fails with absl::CancelledError).
  std::function<bool(const ImportProgress&)> progress;
  // Checked at the same points as `progress`; may be set from any thread.
  const std::atomic<bool>* cancel = nullptr;
};

struct ImportedCapture {
  storage::ProfileBatch batch;
  CaptureFormat format = CaptureFormat::kUnknown;
  Compression compression = Compression::kNone;
  uint64_t file_bytes = 0;          // as read
  uint64_t decompressed_bytes = 0;  // what the parser saw
  // Every sample type with samples (batch.dict order), and the one a viewer
  // shows first: pprof's default_sample_type, else its last type; for other
  // formats on-CPU samples when present, else the first type.
  std::vector<storage::SampleType> sample_types;
  storage::SampleType default_sample_type;
  // perf script: the event whose samples were imported ("cycles").
  std::string perf_event;
  // Bad records skipped instead of failing the import (folded lines
  // without a count, unrecognized perf lines, samples of other events...).
  uint64_t skipped_records = 0;
  std::vector<std::string> warnings;  // human readable, at most ~20
  int64_t first_time_ns = 0;          // data range (0, 0 when there are no samples)
  int64_t last_time_ns = 0;
  // The capture's own time range for a time axis: pprof's time_nanos ..
  // time_nanos + duration_nanos (all its samples sit at time_nanos), OTLP
  // and perf the data range (end inclusive).
  int64_t range_start_ns = 0;
  int64_t range_end_ns = 0;
  // Whether samples carry times of their own (more than one distinct time):
  // only then is there a timeline to select from. Most pprof files and every
  // folded file have one time for all samples.
  bool timed = false;
};

// Detects compression and format from the first bytes, never the name.
Compression SniffCompression(std::string_view head);
// `data` is decompressed content.
CaptureFormat SniffFormat(std::string_view data);
// What a common file that is not a profile is, from its first bytes ("a PNG
// image", "a perf.data recording", ...), or "" when it may be a profile:
// such a file is refused by name instead of with a parser's error at some
// byte ("byte 11: Profile: invalid field number 0" for a PNG).
std::string_view DescribeNonProfile(std::string_view data);

// Reads, decompresses, sniffs and imports one file. Errors name the file
// and the position: "FILE: byte 1234: ..." or "FILE:17: ...".
[[nodiscard]] absl::StatusOr<ImportedCapture> ImportFile(const std::string& path,
                                                         const ImportOptions& options = {});

// The same for bytes already in memory; `name` is used in messages.
[[nodiscard]] absl::StatusOr<ImportedCapture> ImportBytes(std::string_view bytes, std::string_view name,
                                                          const ImportOptions& options = {});

}  // namespace kiln::capture
