#include "ingest/capture/capture_commands.h"

#include <chrono>
#include <fstream>
#include <iostream>
#include <map>

#include "absl/strings/str_cat.h"
#include "ingest/capture/export.h"
#include "ingest/capture/importers.h"
#include "storage/model/query.h"

namespace kiln::capture {
namespace {

// Progress on stderr at most every 500 ms, only once an import runs long.
class ProgressPrinter {
 public:
  ProgressPrinter(std::ostream& err, std::string name) : err_(err), name_(std::move(name)) {}
  bool operator()(const ImportProgress& p) {
    auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(500)) return true;
    if (last_ == std::chrono::steady_clock::time_point{}) {
      last_ = now;  // first call: start the clock, print nothing yet
      return true;
    }
    last_ = now;
    err_ << "  " << name_ << ": " << (p.bytes_done >> 20) << " / " << (p.bytes_total >> 20) << " MB, "
         << p.samples << " samples\n";
    return true;
  }

 private:
  std::ostream& err_;
  std::string name_;
  std::chrono::steady_clock::time_point last_{};
};

void PrintWarnings(const ImportedCapture& c, const std::string& prefix, std::ostream& err) {
  if (c.skipped_records > 0) {
    err << prefix << c.skipped_records << " records skipped\n";
  }
  for (const std::string& w : c.warnings) err << prefix << "  " << w << "\n";
}

bool HasProcessAttributes(const storage::ProfileDictionary& d) {
  for (const storage::Attribute& a : d.attributes) {
    if (a.key < d.strings.size()) {
      std::string_view k = d.strings[a.key];
      if (k == storage::attr::kProcessExecutableName || k == storage::attr::kProcessExecutablePath ||
          k == storage::attr::kServiceName || k == storage::attr::kProcessPid) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace

absl::StatusOr<StoreImportResult> ImportIntoStore(storage::Store* store, const std::string& path,
                                                  const ImportOptions& options) {
  auto capture = ImportFile(path, options);
  if (!capture.ok()) {
    (void)store->AppendLog(storage::LogLevel::kError,
                           absl::StrCat("import failed: ", capture.status().message()));
    return capture.status();
  }
  StoreImportResult result;
  result.samples = capture->batch.samples.size();
  if (absl::Status s = store->Write(capture->batch); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(path, ": store write failed: ", s.message()));
  }
  (void)store->AppendLog(
      storage::LogLevel::kInfo,
      absl::StrCat("imported ", path, " (", Av(CaptureFormatName(capture->format)), "): ", result.samples,
                   " samples, ", capture->skipped_records, " records skipped"));
  capture->batch = {};
  result.capture = std::move(*capture);
  return result;
}

int RunImportCommand(const ImportCommand& command, std::ostream& out, std::ostream& err) {
  if (command.files.empty()) {
    err << "kiln import: no files given (kiln import --data-dir DIR FILE...)\n";
    return 2;
  }
  std::string dir = command.data_dir.empty() ? storage::DefaultDataDirectory() : command.data_dir;
  auto store = storage::Store::Open(dir, storage::Store::Mode::kReadWrite);
  if (!store.ok()) {
    err << "kiln import: " << store.status().message() << "\n";
    return 1;
  }
  int failed = 0;
  for (const std::string& path : command.files) {
    ImportOptions options;
    options.sample_type = command.sample_type;
    options.perf_event = command.perf_event;
    options.demangle = !command.raw_names;
    ProgressPrinter printer(err, path);
    if (command.progress) options.progress = [&](const ImportProgress& p) { return printer(p); };
    auto t0 = std::chrono::steady_clock::now();
    auto result = ImportIntoStore(store->get(), path, options);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!result.ok()) {
      err << "kiln import: " << result.status().message() << "\n";
      ++failed;
      continue;
    }
    const ImportedCapture& c = result->capture;
    out << path << ": " << CaptureFormatName(c.format);
    if (c.compression != Compression::kNone) out << " (" << CompressionName(c.compression) << ")";
    out << ", " << result->samples << " samples";
    out << " (" << storage::SampleTypeList(c.sample_types) << "), " << c.skipped_records << " skipped, " << absl::StrCat(secs) << " s\n";
    PrintWarnings(c, "kiln import: ", err);
  }
  out << "store: " << dir << "\n";
  return failed == 0 ? 0 : 1;
}

int RunConvertCommand(const ConvertCommand& command, std::ostream& out, std::ostream& err) {
  ExportOptions export_options;
  if (!ParseExportFormat(command.format, &export_options.format)) {
    err << "kiln export: unknown --format \"" << command.format << "\" (use otlp, pprof, folded or svg)\n";
    return 2;
  }
  if (command.input.empty()) {
    err << "kiln export: --input FILE is required\n";
    return 2;
  }
  storage::Query query;
  if (!command.group_by.empty() && !storage::ParseGroupBy(command.group_by, &export_options.tree)) {
    err << "kiln export: --group-by wants " << storage::kGroupByChoices << "\n";
    return 2;
  }
  absl::StatusOr<std::vector<storage::AttributeFilter>> filters = storage::ParseFilterArguments(command.filters);
  if (!filters.ok()) {
    err << "kiln export: " << filters.status().message() << "\n";
    return 2;
  }
  query.filters = *std::move(filters);
  query.from_ns = command.from_ns;
  query.to_ns = command.to_ns;

  ImportOptions options;
  options.perf_event = command.perf_event;
  options.demangle = !command.raw_names;
  auto capture = ImportFile(command.input, options);
  if (!capture.ok()) {
    err << "kiln export: " << capture.status().message() << "\n";
    return 1;
  }
  PrintWarnings(*capture, "kiln export: ", err);
  query.sample_type = capture->default_sample_type;
  if (!command.sample_type.empty()) {
    std::optional<storage::SampleType> chosen = storage::FindSampleType(command.sample_type, capture->sample_types);
    if (!chosen) {
      err << "kiln export: " << command.input << " has no sample type \"" << command.sample_type
          << "\" (it has: " << storage::SampleTypeList(capture->sample_types) << ")\n";
      return 2;
    }
    query.sample_type = *chosen;
  }
  if (command.group_by.empty()) {
    export_options.tree.group_by =
        HasProcessAttributes(capture->batch.dict) ? storage::GroupBy::kProcess : storage::GroupBy::kNone;
  }
  export_options.annotate = command.annotate;
  export_options.node_color = command.node_color;
  export_options.tree.show_inline = !command.hide_inline;
  export_options.tree.transforms = command.transforms;
  export_options.title =
      command.title.empty() ? command.input.substr(command.input.rfind('/') + 1) : command.title;
  if (storage::SelectSamples(capture->batch, query).empty()) {
    err << "kiln export: note: no " << storage::SampleTypeName(query.sample_type)
        << " samples in the selection\n";
  }
  auto bytes = ExportBatch(capture->batch, query, export_options);
  if (!bytes.ok()) {
    err << "kiln export: " << bytes.status().message() << "\n";
    return 1;
  }
  if (command.output.empty() || command.output == "-") {
    out.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
    out.flush();
    return out.good() ? 0 : 1;
  }
  std::ofstream file(command.output, std::ios::binary | std::ios::trunc);
  if (!file) {
    err << "kiln export: cannot write " << command.output << "\n";
    return 1;
  }
  file.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
  file.close();
  if (!file) {
    err << "kiln export: write to " << command.output << " failed\n";
    return 1;
  }
  return 0;
}

}  // namespace kiln::capture
