// `kiln dump FILE...`: every sample of a capture, readably (or as JSON
// lines), for people debugging what a producer sends.
#include <cstdio>
#include <string>

#include "app/cli.h"
#include "ingest/capture/capture.h"
#include "ingest/capture/dump.h"
#include "storage/model/sample_type.h"

namespace kiln::app {

int RunDump(const DumpOptions& options) {
  int code = 0;
  for (const std::string& path : options.files) {
    capture::ImportOptions import;
    import.demangle = !options.raw_names;
    absl::StatusOr<capture::ImportedCapture> imported = capture::ImportFile(path, import);
    if (!imported.ok()) {
      std::fprintf(stderr, "kiln dump: %s\n", std::string(imported.status().message()).c_str());
      code = 1;
      continue;
    }
    const storage::ProfileBatch& batch = imported->batch;
    // The header goes to stderr with --json, so stdout is JSON lines only.
    std::FILE* head = options.json ? stderr : stdout;
    std::fprintf(head, "# %s: %s%s, %s samples", path.c_str(),
                 std::string(capture::CaptureFormatName(imported->format)).c_str(),
                 imported->compression == capture::Compression::kNone
                     ? ""
                     : (" (" + std::string(capture::CompressionName(imported->compression)) + ")").c_str(),
                 storage::FormatCount(batch.samples.size()).c_str());
    if (imported->skipped_records > 0)
      std::fprintf(head, ", %s records skipped", storage::FormatCount(imported->skipped_records).c_str());
    std::fprintf(head, "\n");
    for (const std::string& w : imported->warnings) std::fprintf(head, "# warning: %s\n", w.c_str());
    if (!options.json) std::fprintf(stdout, "\n");
    uint64_t number = 0;
    for (const storage::Sample& s : batch.samples) {
      if (options.limit > 0 && number >= options.limit) {
        std::fprintf(head, "# ... %s more samples not shown (--limit %llu)\n",
                     storage::FormatCount(batch.samples.size() - number).c_str(),
                     static_cast<unsigned long long>(options.limit));
        break;
      }
      ++number;
      if (options.json) {
        std::fputs((capture::DumpSampleJson(batch, s) + "\n").c_str(), stdout);
      } else {
        std::fputs(capture::DumpSampleText(batch, s, number).c_str(), stdout);
      }
    }
  }
  std::fflush(stdout);
  return code;
}

}  // namespace kiln::app
