// The capture commands of the kiln command line, as functions main() calls
// after parsing arguments (CLI11 in app/main.cpp):
//   kiln import --data-dir DIR FILE...             -> RunImportCommand
//   kiln export --input FILE --format F [...] [-o OUT] -> RunConvertCommand
// and the one-file "import into a store" step the GUI's File menu shares.
//
// Threads: each call is self-contained; ImportIntoStore may run on a worker
// while the UI reads the same store (Store is thread safe).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ingest/capture/capture.h"
#include "ingest/capture/export.h"
#include "storage/store.h"

namespace kiln::capture {

struct ImportCommand {
  std::string data_dir;  // "" = storage::DefaultDataDirectory()
  std::vector<std::string> files;
  std::string sample_type;  // pprof --sample-type
  std::string perf_event;   // perf script --event
  bool raw_names = false;   // ImportOptions::demangle off
  bool progress = true;     // progress lines on `err` for big files
};
// Exit code: 0 all imported, 1 some file failed (the others are still
// imported), 2 bad usage. One summary line per file on `out`.
int RunImportCommand(const ImportCommand& command, std::ostream& out, std::ostream& err);

struct ConvertCommand {
  std::string input;
  std::string format = "folded";  // otlp | pprof | folded | svg
  std::string group_by;           // "" = process when the capture names processes, else none
  int64_t from_ns = std::numeric_limits<int64_t>::min();  // already parsed by main
  int64_t to_ns = std::numeric_limits<int64_t>::max();
  std::vector<std::string> filters;  // KEY=VALUE; same key ORs, different keys AND
  bool annotate = false;
  bool hide_inline = false;
  std::string sample_type;  // storage::FindSampleType name; "" = the capture's default
  std::string perf_event;   // perf script input: which event
  bool raw_names = false;   // ImportOptions::demangle off
  std::vector<storage::Transform> transforms;  // in order (storage/model/transforms.h)
  std::string title;        // svg title; "" = the input's file name
  std::string output;       // "" = `out`
  // svg colours; main passes ui::NodeColor so the SVG matches the window.
  decltype(ExportOptions::node_color) node_color;
};
// Reads one capture file and writes it in another format, no store needed.
int RunConvertCommand(const ConvertCommand& command, std::ostream& out, std::ostream& err);

struct StoreImportResult {
  ImportedCapture capture;  // the batch is moved into the store (left empty)
  uint64_t samples = 0;
};
// Imports one file into an open store and logs it in the store's log.
[[nodiscard]] absl::StatusOr<StoreImportResult> ImportIntoStore(storage::Store* store,
                                                                const std::string& path,
                                                                const ImportOptions& options);

}  // namespace kiln::capture
