// `kiln import --data-dir DIR FILE...`: capture files into a store
// (ingest/capture/capture_commands.h does the work).
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "app/cli.h"
#include "ingest/capture/capture_commands.h"

namespace kiln::app {

Subcommand AddImportCommand(CLI::App& cli, const std::string& default_data_dir) {
  auto o = std::make_shared<capture::ImportCommand>();
  o->data_dir = default_data_dir;
  CLI::App* cmd = cli.add_subcommand("import", "Import capture files into a store");
  cmd->add_option("--data-dir", o->data_dir, "Store directory")->capture_default_str();
  cmd->add_option("--sample-type", o->sample_type, "pprof: import only this sample type (default: every one)");
  cmd->add_option("--event", o->perf_event, "perf script: the event to read");
  cmd->add_flag("--raw-names", o->raw_names, "perf script and folded: keep C++/Rust names mangled");
  cmd->add_option("files", o->files, "OTLP (protobuf/JSON), pprof, folded or perf script files")->required();
  return {cmd, [o] { return capture::RunImportCommand(*o, std::cout, std::cerr); }};
}

}  // namespace kiln::app
