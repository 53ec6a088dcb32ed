// `kiln export` from a store: a time range, kind and filters written as
// folded stacks, OTLP, pprof or SVG. The store is opened read-only, so
// this works while kiln runs.
#include <cstdio>
#include <fstream>
#include <iostream>

#include "app/cli.h"
#include "ingest/capture/export.h"
#include "storage/model/flame_tree.h"
#include "storage/store.h"

namespace kiln::app {

int RunExport(const ExportOptions& options) {
  storage::Query query;
  capture::ExportOptions export_options;
  if (!storage::ParseGroupBy(options.group_by, &export_options.tree)) {
    std::cerr << "kiln export: --group-by wants none, process, thread or an attribute key\n";
    return 2;
  }
  if (!capture::ParseExportFormat(options.format, &export_options.format)) {
    std::cerr << "kiln export: unknown --format \"" << options.format
              << "\" (use folded, otlp, pprof or svg)\n";
    return 2;
  }
  export_options.annotate = options.annotate;
  export_options.tree.transforms = options.transforms;
  export_options.title = "kiln: " + options.data_dir;
  if (absl::Status s = ParseTimeRange(options.from, options.to, &query.from_ns, &query.to_ns); !s.ok()) {
    std::cerr << "kiln export: " << s.message() << "\n";
    return 2;
  }
  absl::StatusOr<std::vector<storage::AttributeFilter>> filters = storage::ParseFilterArguments(options.filters);
  if (!filters.ok()) {
    std::cerr << "kiln export: " << filters.status().message() << "\n";
    return 2;
  }
  query.filters = *std::move(filters);

  auto store = storage::Store::Open(options.data_dir, storage::Store::Mode::kReadOnly);
  if (!store.ok()) {
    std::cerr << "kiln export: " << store.status().message() << "\n";
    return 1;
  }
  // The sample type: on-CPU samples when the store has them (what agents
  // send), else the first stored type; or the one named.
  const std::vector<storage::SampleType> stored = (*store)->Stats().Types();
  if (options.sample_type.empty()) {
    query.sample_type = storage::OnCpuOrFirst(stored);
  } else if (std::optional<storage::SampleType> found = storage::FindSampleType(options.sample_type, stored)) {
    query.sample_type = *found;
  } else if (std::optional<storage::SampleType> named = storage::ParseSampleTypeName(options.sample_type)) {
    query.sample_type = *named;  // none stored: an empty export, as for an empty time range
    std::cerr << "kiln export: note: the store has no " << storage::SampleTypeName(*named)
              << " samples (it has: " << storage::SampleTypeList(stored) << ")\n";
  } else {
    std::cerr << "kiln export: the store has no sample type \"" << options.sample_type
              << "\" (it has: " << storage::SampleTypeList(stored) << ")\n";
    return 2;
  }
  // OTLP keeps every sample's time (pprof and the rest aggregate); with
  // transforms the stacks change, and so does what a time belongs to.
  query.keep_samples = export_options.format == capture::ExportFormat::kOtlp && options.transforms.empty();
  auto slice = (*store)->Run(query);
  if (!slice.ok()) {
    std::cerr << "kiln export: " << slice.status().message() << "\n";
    return 1;
  }
  auto bytes = capture::ExportSlice(*slice, export_options);
  if (!bytes.ok()) {
    std::cerr << "kiln export: " << bytes.status().message() << "\n";
    return 1;
  }
  return WriteCommandOutput("kiln export", *bytes, options.output);
}

int WriteCommandOutput(std::string_view command, const std::string& bytes, const std::string& path) {
  std::ofstream file;
  std::ostream* out = &std::cout;
  if (!path.empty()) {
    file.open(path, std::ios::binary);
    if (!file) {
      std::cerr << command << ": cannot write " << path << "\n";
      return 1;
    }
    out = &file;
  }
  out->write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out->flush();
  return out->good() ? 0 : 1;
}

}  // namespace kiln::app
