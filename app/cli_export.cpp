// `kiln export` from a store: a time range, kind and filters written as
// folded stacks, OTLP, pprof or SVG. The store is opened read-only, so
// this works while kiln runs. With --input, a converter of capture files
// (ingest/capture/capture_commands.h).
#include <cstdio>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>
#include <memory>

#include "app/cli.h"
#include "app/cli_transforms.h"
#include "ingest/capture/capture_commands.h"
#include "ingest/capture/export.h"
#include "storage/model/flame_tree.h"
#include "storage/store.h"

namespace kiln::app {

int RunExport(const ExportOptions& options) {
  storage::Query query;
  capture::ExportOptions export_options;
  if (!storage::ParseGroupBy(options.group_by, &export_options.tree)) {
    std::cerr << "kiln export: --group-by wants " << storage::kGroupByChoices << "\n";
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
  query.keep_samples = (export_options.format == capture::ExportFormat::kOtlp && options.transforms.empty()) ||
                       storage::NeedsSamples(export_options.tree);
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

Subcommand AddExportCommand(CLI::App& cli, const std::string& default_data_dir) {
  struct Flags {
    ExportOptions options;
    std::string input, perf_event;
    bool hide_inline = false, raw_names = false;
    CLI::Option* group_by = nullptr;
    std::unique_ptr<TransformFlags> transforms;
  };
  auto f = std::make_shared<Flags>();
  f->options.data_dir = default_data_dir;
  ExportOptions& o = f->options;
  CLI::App* cmd = cli.add_subcommand("export", "Write stored profiles, or convert a capture file");
  cmd->add_option("--data-dir", o.data_dir, "Store directory")->capture_default_str();
  cmd->add_option("--input", f->input, "Read this capture file instead of a store (a converter)");
  cmd->add_option("--format", o.format, "folded, otlp, pprof or svg")->capture_default_str();
  f->group_by = cmd->add_option("--group-by", o.group_by,
                                std::string(storage::kGroupByChoices))
                    ->capture_default_str();
  cmd->add_option("--sample-type,--kind", o.sample_type,
                  "The sample type to write: a type name (cpu, alloc_space), type/unit, or on-cpu, off-cpu, "
                  "probe (default: pprof's default for pprof input, else on-CPU samples)");
  cmd->add_option("--event", f->perf_event, "perf script input: the event to read");
  cmd->add_flag("--hide-inline", f->hide_inline, "Leave inlined frames out (with --input)");
  cmd->add_flag("--raw-names", f->raw_names,
                "perf script and folded input: keep C++/Rust names mangled (as stackcollapse-perf.pl)");
  cmd->add_option("--from", o.from, "Start (Unix ns or RFC 3339), inclusive");
  cmd->add_option("--to", o.to, "End (Unix ns or RFC 3339), exclusive");
  cmd->add_option("--filter", o.filters, "KEY=VALUE attribute filter (repeatable)");
  cmd->add_flag("--annotate", o.annotate, "Suffix kernel frames _[k] and JIT frames _[j]");
  cmd->add_option("-o,--output", o.output, "Write to a file instead of stdout");
  f->transforms = std::make_unique<TransformFlags>(cmd);
  return {cmd, [f]() -> int {
            ExportOptions& o = f->options;
            if (!f->transforms->CollectInto(&o.transforms)) return 2;
            if (f->input.empty()) return RunExport(o);
            capture::ConvertCommand convert;
            convert.input = f->input;
            convert.format = o.format;
            // Unset sample type/group-by let the converter choose from the capture.
            if (f->group_by->count() > 0) convert.group_by = o.group_by;
            if (absl::Status s = ParseTimeRange(o.from, o.to, &convert.from_ns, &convert.to_ns); !s.ok()) {
              std::fprintf(stderr, "kiln export: %s\n", std::string(s.message()).c_str());
              return 2;
            }
            convert.filters = o.filters;
            convert.annotate = o.annotate;
            convert.hide_inline = f->hide_inline;
            convert.sample_type = o.sample_type;
            convert.perf_event = f->perf_event;
            convert.raw_names = f->raw_names;
            convert.transforms = o.transforms;
            convert.output = o.output;
            return capture::RunConvertCommand(convert, std::cout, std::cerr);
          }};
}

}  // namespace kiln::app
