// libFuzzer entry point for one capture parser, chosen at compile time by
// KILN_FUZZ_PARSER (see ingest/capture/CMakeLists.txt, KILN_BUILD_FUZZERS):
//   0 any (sniff + gzip/zstd + dispatch, as ImportBytes), 1 pprof,
//   2 perf script, 3 folded, 4 OTLP protobuf, 5 OTLP JSON.
// A finding is any crash, sanitizer report, leak or timeout; parse errors
// are the expected outcome for most inputs.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "ingest/capture/capture.h"
#include "ingest/capture/export.h"
#include "ingest/capture/importers.h"
#include "storage/model/query.h"

#ifndef KILN_FUZZ_PARSER
#define KILN_FUZZ_PARSER 0
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kiln::capture;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  ImportOptions options;
  options.max_decompressed_bytes = 64 << 20;  // stay inside libFuzzer's RSS limit
  ImportedCapture out;
  ParseContext ctx("fuzz", options, &out);
  absl::Status status;
  switch (KILN_FUZZ_PARSER) {
    case 0: {
      auto c = ImportBytes(input, "fuzz", options);
      status = c.status();
      if (c.ok()) out = std::move(*c);
      break;
    }
    case 1:
      status = ImportPprof(input, ctx);
      break;
    case 2:
      status = ImportPerfScript(input, ctx);
      break;
    case 3:
      status = ImportFolded(input, ctx);
      break;
    case 4:
      status = ImportOtlpProtobuf(input, ctx);
      break;
    case 5:
      status = ImportOtlpJson(input, ctx);
      break;
  }
  if (status.ok()) {
    // Whatever parses must also export: exporters see importer output.
    kiln::storage::Query q;
    // The direct importer calls skip ImportBytes' choice of a default type:
    // the first sample's type (every type exports alike).
    const auto& types = out.batch.dict.sample_types;
    if (!out.batch.samples.empty() && out.batch.samples[0].sample_type < types.size()) {
      q.sample_type = types[out.batch.samples[0].sample_type].type;
    }
    auto slice = kiln::storage::SliceFromBatch(out.batch, q);
    // One export format per input, picked by a hash of it (so a finding
    // replays alike): exporting to all four made each input cost 4 exports
    // and 2 imports, and the text fuzzers ran at 100-150 inputs a second.
    uint32_t hash = 2166136261u;  // FNV-1a
    for (uint8_t byte : input) hash = (hash ^ byte) * 16777619u;
    constexpr ExportFormat kFormats[] = {ExportFormat::kOtlp, ExportFormat::kPprof, ExportFormat::kFolded,
                                         ExportFormat::kSvg};
    ExportOptions eo;
    eo.format = kFormats[hash % 4];
    auto bytes = ExportSlice(slice, eo);
    // Whatever we write, we must read back.
    if (bytes.ok() && (eo.format == ExportFormat::kOtlp || eo.format == ExportFormat::kPprof)) {
      auto back = ImportBytes(*bytes, "roundtrip", options);
      if (!back.ok()) {
        std::fprintf(stderr, "exported %s does not import: %s\n",
                     eo.format == ExportFormat::kOtlp ? "otlp" : "pprof",
                     std::string(back.status().message()).c_str());
        std::abort();
      }
    }
  }
  return 0;
}
