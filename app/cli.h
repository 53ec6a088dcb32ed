// The kiln command line: one function per subcommand, each returning the
// process exit code, and each subcommand's flags registered by its own
// cli_*.cpp (Add*Command); main.cpp lists them, parses (CLI11) and runs the
// one given.
#pragma once

#include <signal.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "app/receiver_control.h"
#include "storage/model/time_text.h"
#include "storage/model/transforms.h"
#include "storage/store.h"

namespace CLI {
class App;
}
namespace kiln::ingest {
class Forwarder;
}

namespace kiln::app {

// Times on the command line: storage/model/time_text.h.
using storage::FormatTime;
using storage::ParseTimeRange;

// A subcommand of kiln, added to the command line by its cli_*.cpp: its
// flags are bound to options the `run` closure owns.
struct Subcommand {
  CLI::App* command = nullptr;  // command->parsed(): the command line named it
  std::function<int()> run;     // after parsing: runs it, the process exit code
};
// `default_data_dir` is --data-dir's default (kiln's own store).
Subcommand AddExportCommand(CLI::App& cli, const std::string& default_data_dir);  // cli_export.cpp
Subcommand AddDiffCommand(CLI::App& cli);                                          // cli_diff.cpp
Subcommand AddImportCommand(CLI::App& cli, const std::string& default_data_dir);  // cli_import.cpp
Subcommand AddDumpCommand(CLI::App& cli);                                          // cli_dump.cpp
Subcommand AddStatsCommand(CLI::App& cli, const std::string& default_data_dir);   // cli_stats.cpp
Subcommand AddSymbolsCommand(CLI::App& cli, const std::string& default_data_dir); // cli_symbols.cpp
Subcommand AddMcpCommand(CLI::App& cli, const std::string& default_data_dir);     // cli_mcp.cpp

// Where symbols come from besides the profile's own paths (--debug-dir,
// --debuginfod-urls); used by the window and --headless.
struct SymbolFlags {
  std::vector<std::string> debug_dirs;
  std::string debuginfod_urls;  // "" = $DEBUGINFOD_URLS
};

// --forward and its companions (ingest/forward/forwarder.h).
struct ForwardFlags {
  std::vector<std::string> targets;  // --forward HOST:PORT, repeatable
  std::vector<std::string> http_urls;  // --forward-http URL, repeatable
  bool tls = false;                  // --forward-tls
  std::string ca_file;               // --forward-ca-file (implies TLS)
  std::vector<std::string> headers;  // --forward-header KEY=VALUE, repeatable
  uint64_t max_bytes = storage::StoreOptions().max_forward_bytes;  // --forward-max-queue
};

struct HeadlessOptions {
  ReceiverFlags receiver;  // --listen, --auth-token-file, --tls-*
  ForwardFlags forward;
  std::string metrics_listen;  // --metrics-listen: "" = no /metrics
  // --disk-reserve: new data is refused while less is free (StoreOptions).
  uint64_t disk_reserve_bytes = storage::StoreOptions().disk_reserve_bytes;
  // --retention-age, --retention-size (README, "Retention"); 0 keeps
  // everything. The size limit keeps a laptop's disk safe; no age limit by
  // default, since an age limit would delete imported or old captures a
  // user opens a store for.
  std::string retention_age = "0";
  uint64_t retention_size_bytes = uint64_t{4} << 30;
  // --dictionary-memory: the in-memory dictionary's budget (StoreOptions::
  // max_dictionary_memory): past it the oldest samples go.
  uint64_t dictionary_memory_bytes = storage::StoreOptions().max_dictionary_memory;
  uint64_t sender_value_bytes = storage::StoreOptions().max_attribute_value_bytes_per_sender;
  std::string data_dir;
  SymbolFlags symbols;
};

// The store options these flags ask for.
absl::StatusOr<storage::StoreOptions> StoreOptionsFrom(const HeadlessOptions& options);
// Registers --forward, --forward-tls, --forward-ca-file, --forward-header
// and --forward-max-queue (cli_forward.cpp).
void AddForwardFlags(CLI::App& cli, ForwardFlags* flags);
// With --forward: the forwarder, started on `store`, and `receiver` set to
// queue every accepted request for it; null without. An error names the
// bad flag.
absl::StatusOr<std::unique_ptr<ingest::Forwarder>> StartForwarding(const ForwardFlags& flags, storage::Store& store,
                                                                    ingest::ReceiverOptions* receiver);

// Runs the receiver and the store until SIGINT/SIGTERM.
int RunHeadless(const HeadlessOptions& options);

// Blocks SIGINT and SIGTERM in this thread and returns them, for sigwait():
// called before any thread starts, so gRPC's threads inherit the mask and
// only the sigwait() of `kiln --headless` or `kiln dump --listen` sees them.
sigset_t BlockShutdownSignals();

struct ExportOptions {
  std::string data_dir;
  std::string format = "folded";
  std::string sample_type;  // "" = on-CPU samples when stored, else the first type
  std::string group_by = "process";
  std::string from;                  // Unix ns or RFC 3339, "" = all
  std::string to;
  std::vector<std::string> filters;  // KEY=VALUE, repeated keys OR, distinct keys AND
  bool annotate = false;
  std::vector<storage::Transform> transforms;  // in command-line order
  std::string output;                // "" = stdout
};
int RunExport(const ExportOptions& options);

// One side of `kiln diff`: a capture file, or a store's range.
struct DiffSide {
  std::string input;     // capture file; "" = the store in data_dir
  std::string data_dir;
  std::string from, to;  // Unix ns or RFC 3339, "" = open
  std::vector<std::string> filters;  // KEY=VALUE, this side only
};
struct DiffOptions {
  DiffSide base, target;
  std::string format = "folded";  // folded | json | svg
  std::string sample_type;        // "" = each side's default (they must agree)
  std::string group_by = "none";
  std::vector<std::string> filters;  // KEY=VALUE, both sides
  std::vector<storage::Transform> transforms;  // both sides, in order
  bool absolute = false;  // compare weights, not shares of each side's total
  bool hide_inline = false;
  bool annotate = false;
  bool raw_names = false;
  std::string perf_event;
  std::string output;  // "" = stdout
};
int RunDiff(const DiffOptions& options);

// Writes a command's result to `path` (stdout when empty). Returns the exit
// code (1, naming the file, when it cannot be written).
int WriteCommandOutput(std::string_view command, const std::string& bytes, const std::string& path);

// `kiln dump FILE...`: every sample of each capture, one block each (or
// one JSON object per line with --json). Exit 1 when a file failed.
struct DumpOptions {
  std::vector<std::string> files;
  std::string listen;  // --listen ADDR: a receiver that prints and stores nothing
  bool json = false;
  bool raw_names = false;
  uint64_t limit = 0;  // 0 = every sample
};
int RunDump(const DumpOptions& options);

struct StatsOptions {
  std::string data_dir;
};
int RunStats(const StatsOptions& options);

// `kiln symbols add --data-dir DIR FILE...`: stores the symbols of each ELF
// file under the executables it matches. When a kiln is running on the store
// the files are handed to it (app/symbol_requests.h) and its answer, awaited
// up to `wait_seconds`, is printed. Exit 1 when any file failed or no answer
// came.
struct SymbolsAddOptions {
  std::string data_dir;
  std::vector<std::string> files;
  int wait_seconds = 60;
};
int RunSymbolsAdd(const SymbolsAddOptions& options);

// `kiln symbols list --data-dir DIR`: every executable with its ids and
// symbol status (read-only, works while kiln runs).
struct SymbolsListOptions {
  std::string data_dir;
};
int RunSymbolsList(const SymbolsListOptions& options);

}  // namespace kiln::app
