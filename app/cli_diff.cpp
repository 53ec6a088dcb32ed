// `kiln diff BASE TARGET`: two profiles (capture files or store ranges)
// merged into one tree and written as difffolded.pl-style folded text,
// JSON with shares and significance, or a diff flame graph SVG.
#include <iostream>
#include <map>
#include <memory>

#include <CLI/CLI.hpp>

#include "app/cli.h"
#include "app/cli_transforms.h"
#include "ingest/capture/capture.h"
#include "ingest/capture/export.h"
#include "storage/model/diff.h"
#include "storage/model/folded.h"
#include "storage/store.h"

namespace kiln::app {

namespace {

struct LoadedSide {
  std::shared_ptr<const storage::ProfileSlice> slice;
  std::string title;
};

// Opens each store once (both sides may read one store).
class Stores {
 public:
  absl::StatusOr<storage::Store*> Get(const std::string& dir) {
    auto it = open_.find(dir);
    if (it == open_.end()) {
      auto store = storage::Store::Open(dir, storage::Store::Mode::kReadOnly);
      if (!store.ok()) return store.status();
      it = open_.emplace(dir, *std::move(store)).first;
    }
    return it->second.get();
  }

 private:
  std::map<std::string, std::unique_ptr<storage::Store>> open_;
};

absl::StatusOr<LoadedSide> LoadSide(const DiffSide& side, const DiffOptions& options,
                                    const storage::FlameTreeOptions& tree, std::string_view name,
                                    Stores* stores) {
  storage::Query query;
  if (absl::Status s = ParseTimeRange(side.from, side.to, &query.from_ns, &query.to_ns); !s.ok()) return s;
  std::vector<std::string> filter_args = options.filters;
  filter_args.insert(filter_args.end(), side.filters.begin(), side.filters.end());
  absl::StatusOr<std::vector<storage::AttributeFilter>> filters = storage::ParseFilterArguments(filter_args);
  if (!filters.ok()) return filters.status();
  query.filters = *std::move(filters);
  query.keep_samples = storage::NeedsSamples(tree);

  // The sample type: the one named, else the source's default.
  auto choose = [&](const std::vector<storage::SampleType>& types, const storage::SampleType& fallback,
                    const std::string& what) -> absl::Status {
    if (options.sample_type.empty()) {
      query.sample_type = fallback;
    } else if (std::optional<storage::SampleType> t = storage::FindSampleType(options.sample_type, types)) {
      query.sample_type = *t;
    } else {
      return absl::NotFoundError(absl::StrCat(what, " has no sample type \"", options.sample_type,
                                              "\" (it has: ", storage::SampleTypeList(types), ")"));
    }
    return absl::OkStatus();
  };
  LoadedSide out;
  if (!side.input.empty()) {
    capture::ImportOptions import;
    import.perf_event = options.perf_event;
    import.demangle = !options.raw_names;
    absl::StatusOr<capture::ImportedCapture> c = capture::ImportFile(side.input, import);
    if (!c.ok()) return c.status();
    for (const std::string& w : c->warnings) std::cerr << "kiln diff: " << name << ": " << w << "\n";
    if (absl::Status s = choose(c->sample_types, c->default_sample_type, side.input); !s.ok()) return s;
    out.slice = storage::SliceFromBatch(c->batch, query);
    out.title = side.input.substr(side.input.rfind('/') + 1);
  } else {
    absl::StatusOr<storage::Store*> store = stores->Get(side.data_dir);
    if (!store.ok()) return store.status();
    const std::vector<storage::SampleType> stored = (*store)->Stats().Types();
    if (absl::Status s = choose(stored, storage::OnCpuOrFirst(stored), "the store " + side.data_dir); !s.ok()) {
      return s;
    }
    absl::StatusOr<std::shared_ptr<const storage::ProfileSlice>> slice = (*store)->Run(query);
    if (!slice.ok()) return slice.status();
    out.slice = *std::move(slice);
    out.title = side.data_dir + (side.from.empty() && side.to.empty() ? "" : " " + side.from + ".." + side.to);
  }
  if (out.slice->total_events == 0) {
    std::cerr << "kiln diff: note: the " << name << " has no " << storage::SampleTypeName(query.sample_type)
              << " samples in its selection\n";
  }
  return out;
}

}  // namespace

int RunDiff(const DiffOptions& options) {
  storage::FlameTreeOptions tree;
  if (!storage::ParseGroupBy(options.group_by, &tree)) {
    std::cerr << "kiln diff: --group-by wants " << storage::kGroupByChoices << "\n";
    return 2;
  }
  tree.show_inline = !options.hide_inline;
  tree.transforms = options.transforms;
  capture::ExportOptions export_options;
  if (options.format != "folded" && options.format != "json" && options.format != "svg") {
    std::cerr << "kiln diff: unknown --format \"" << options.format << "\" (use folded, json or svg)\n";
    return 2;
  }
  for (const auto* side : {&options.base, &options.target}) {
    if (side->input.empty() && side->data_dir.empty()) {
      std::cerr << "kiln diff: each side needs a capture file or a store (--base-data-dir, --target-data-dir "
                   "or --data-dir)\n";
      return 2;
    }
  }
  Stores stores;
  absl::StatusOr<LoadedSide> base = LoadSide(options.base, options, tree, "baseline", &stores);
  if (!base.ok()) {
    std::cerr << "kiln diff: baseline: " << base.status().message() << "\n";
    return 1;
  }
  absl::StatusOr<LoadedSide> target = LoadSide(options.target, options, tree, "target", &stores);
  if (!target.ok()) {
    std::cerr << "kiln diff: target: " << target.status().message() << "\n";
    return 1;
  }
  const storage::SampleType& bt = base->slice->sample_type.type;
  const storage::SampleType& tt = target->slice->sample_type.type;
  if (!(bt == tt)) {
    std::cerr << "kiln diff: the sides hold different sample types (" << storage::SampleTypeName(bt) << " and "
              << storage::SampleTypeName(tt) << "); pick one with --sample-type\n";
    return 2;
  }
  const storage::DiffTree diff = storage::BuildDiffTree(base->slice, target->slice, tree);
  const bool normalized = !options.absolute;
  std::string bytes;
  if (options.format == "folded") {
    for (const std::string& line : storage::DiffFoldedLines(diff, {.annotate = options.annotate})) {
      bytes += line;
      bytes += '\n';
    }
  } else if (options.format == "json") {
    bytes = capture::DiffJson(diff, normalized);
  } else {
    export_options.title = absl::StrCat("Diff: ", base->title, " → ", target->title);
    bytes = capture::DiffFlameGraphSvg(diff, export_options, normalized);
  }
  return WriteCommandOutput("kiln diff", bytes, options.output);
}

Subcommand AddDiffCommand(CLI::App& cli) {
  struct Flags {
    DiffOptions options;
    std::string data_dir;  // for a side given no file or store of its own
    std::unique_ptr<TransformFlags> transforms;
  };
  auto f = std::make_shared<Flags>();
  DiffOptions& o = f->options;
  CLI::App* cmd = cli.add_subcommand(
      "diff", "Compare two profiles (capture files or store ranges): what grew, what shrank, what is noise");
  cmd->add_option("base", o.base.input, "Baseline capture file (or use --base-data-dir)");
  cmd->add_option("target", o.target.input, "Target capture file (or use --target-data-dir)");
  cmd->add_option("--data-dir", f->data_dir, "Store for a side given no file or store of its own");
  for (auto [side, name] : {std::pair{&o.base, std::string("base")}, {&o.target, std::string("target")}}) {
    cmd->add_option("--" + name + "-data-dir", side->data_dir, "The " + name + " side's store");
    cmd->add_option("--" + name + "-from", side->from, "The " + name + " side's start (Unix ns or RFC 3339)");
    cmd->add_option("--" + name + "-to", side->to, "The " + name + " side's end, exclusive");
    cmd->add_option("--" + name + "-filter", side->filters, "KEY=VALUE for the " + name + " side only (repeatable)");
  }
  cmd->add_option("--format", o.format, "folded (difffolded.pl style), json or svg")->capture_default_str();
  cmd->add_option("--sample-type", o.sample_type, "The sample type to compare (default: each side's)");
  cmd->add_option("--group-by", o.group_by,
                  std::string(storage::kGroupByChoices))
      ->capture_default_str();
  cmd->add_option("--filter", o.filters, "KEY=VALUE attribute filter for both sides (repeatable)");
  cmd->add_flag("--absolute", o.absolute, "Compare weights instead of shares of each side's total");
  cmd->add_flag("--hide-inline", o.hide_inline, "Leave inlined frames out");
  cmd->add_flag("--annotate", o.annotate, "folded: suffix kernel frames _[k] and JIT frames _[j]");
  cmd->add_flag("--raw-names", o.raw_names, "perf script and folded input: keep C++/Rust names mangled");
  cmd->add_option("--event", o.perf_event, "perf script input: the event to read");
  cmd->add_option("-o,--output", o.output, "Write to a file instead of stdout");
  f->transforms = std::make_unique<TransformFlags>(cmd);
  return {cmd, [f]() -> int {
            DiffOptions& o = f->options;
            if (!f->transforms->CollectInto(&o.transforms)) return 2;
            for (DiffSide* side : {&o.base, &o.target}) {
              if (side->input.empty() && side->data_dir.empty()) side->data_dir = f->data_dir;
            }
            return RunDiff(o);
          }};
}

}  // namespace kiln::app
