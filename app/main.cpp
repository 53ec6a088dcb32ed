// kiln: the desktop profile viewer and OTLP profiles receiver.
//
//   kiln [--listen ADDR] [--data-dir DIR] [FILE...] [--open FILE]   window + receiver (default)
//   kiln --headless [--listen ADDR] [--data-dir DIR]
//   kiln export --data-dir DIR --format folded|otlp|pprof|svg [--sample-type T] [--group-by G] [--from T] [--to T]
//   kiln export --input FILE --format ...           (a converter; no store)
//   kiln export ... --invert --focus=FN --hide=REGEX ...  (transforms, in order)
//   kiln diff BASE TARGET | --base-data-dir DIR --base-from T ... --format folded|json|svg
//   kiln import --data-dir DIR FILE...
//   kiln stats --data-dir DIR
//   kiln symbols add --data-dir DIR FILE...  /  kiln symbols list --data-dir DIR
#include <signal.h>
#include <stdlib.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <tuple>

#include "app/cli.h"
#include "app/metrics_listen.h"
#include "app/demo_profile.h"
#include "app/desktop_settings.h"
#include "app/gui_app.h"
#include "ingest/capture/capture_commands.h"
#include "ingest/otlp_receiver.h"
#include "kiln_version.h"
#include "storage/store.h"

namespace kiln::app {
namespace capture = kiln::capture;
namespace {

// The transform flags of `kiln export` and `kiln diff` (--invert,
// --focus=FN, ...): one option per kind, applied in command-line order.
class TransformFlags {
 public:
  explicit TransformFlags(CLI::App* command) : command_(command) {
    using Kind = storage::Transform::Kind;
    Add(Kind::kInvert, false, "Reverse each stack: leaf first (a bottom-up tree)");
    Add(Kind::kFocusFunction, true, "Keep stacks through FN, each starting at FN's outermost call");
    option_for_callees_ = command->add_option("--callees-of", "The same as --focus (FN's callees, merged)")
                              ->allow_extra_args(false)
                              ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    Add(Kind::kFocusSubtree, true, "Keep stacks starting with the path A;B;C, each starting at C");
    Add(Kind::kCallersOf, true, "Keep stacks through FN, each inverted from FN's innermost call up to the root");
    Add(Kind::kMerge, true, "Remove FN's frames; their weight goes to the caller");
    Add(Kind::kHide, true, "Remove frames whose name matches REGEX (RE2); the weight stays");
    Add(Kind::kCollapseRecursion, false,
        "Consecutive repeats of a frame become one; with =FN, all of FN's recursion (also indirect)");
    Add(Kind::kCollapseDirectRecursion, true, "Consecutive repeats of FN become one");
    Add(Kind::kCollapseLibrary, true, "Consecutive frames of executable EXE (file name) become one frame");
    Add(Kind::kDropKernel, false, "Remove kernel frames");
  }

  // After parsing: the transforms in the order they were given.
  absl::StatusOr<std::vector<storage::Transform>> Collect() const {
    std::vector<storage::Transform> out;
    std::map<const CLI::Option*, size_t> seen;
    for (const CLI::Option* o : command_->parse_order()) {
      std::string flag;
      for (const auto& [option, name] : options_) {
        if (option == o) flag = name;
      }
      if (o == option_for_callees_) flag = "callees-of";
      if (flag.empty()) continue;
      const size_t k = seen[o]++;
      const std::vector<std::string>& values = o->results();
      std::string spec = flag;
      if (k < values.size() && !values[k].empty() && values[k] != "true") spec += "=" + values[k];
      absl::StatusOr<storage::Transform> t = storage::ParseTransform(spec);
      if (!t.ok()) return t.status();
      out.push_back(*std::move(t));
    }
    return out;
  }

 private:
  void Add(storage::Transform::Kind kind, bool takes_value, const std::string& help) {
    const std::string name(storage::TransformFlag(kind));
    // One value per use (never the positional arguments after it), every
    // use kept: --hide a --hide b hides both.
    CLI::Option* o = command_->add_option("--" + name, help)
                         ->allow_extra_args(false)
                         ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    if (!takes_value) o->expected(0, 1);
    options_.emplace_back(o, name);
  }

  CLI::App* command_;
  std::vector<std::pair<const CLI::Option*, std::string>> options_;
  const CLI::Option* option_for_callees_ = nullptr;
};

int RunWindow(const HeadlessOptions& where, GuiOptions gui, bool receive) {
  std::string data_dir = where.data_dir;
  if (gui.demo) {
    // The demo never touches the user's store: it fills a fresh temporary one.
    std::string tmpl = (std::filesystem::temp_directory_path() / "kiln-demo-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) {
      std::perror("kiln: cannot create a temporary directory for --demo");
      return 1;
    }
    data_dir = tmpl;
  }
  absl::StatusOr<storage::StoreOptions> store_options = StoreOptionsFrom(where);
  if (!store_options.ok()) {
    std::fprintf(stderr, "kiln: %s\n", std::string(store_options.status().message()).c_str());
    return 2;
  }
  if (gui.demo) {
    // The demo's samples are stamped now; it keeps them whatever the limits.
    store_options->retention_age = std::chrono::nanoseconds(0);
    store_options->retention_size_bytes = 0;
  }
  auto store = storage::Store::Open(data_dir, storage::Store::Mode::kReadWrite, *store_options);
  if (!store.ok()) {
    std::fprintf(stderr, "kiln: %s\n", std::string(store.status().message()).c_str());
    return 1;
  }
  if (gui.demo) {
#ifdef KILN_NO_DEMO_PROFILE
    std::fprintf(stderr, "kiln: this build has no demo profile\n");
    return 2;
#endif
    int64_t now = storage::UnixNowNs();
    if (auto s = (*store)->Write(BuildDemoProfile(now)); !s.ok()) {
      std::fprintf(stderr, "kiln: writing the demo profile failed: %s\n", std::string(s.message()).c_str());
      return 1;
    }
  }
  // The window's saved choices (listen on loopback only, a token it made)
  // apply when the command line does not say otherwise.
  const SettingsPaths settings_paths = DefaultSettingsPaths();
  std::vector<std::string> ignored;
  const DesktopSettings settings = LoadSettings(settings_paths, &ignored);
  absl::StatusOr<ResolvedReceiver> resolved = ResolveReceiverOptions(
      where.receiver, [](const char* name) { return std::getenv(name); },
      SavedTokenFile(settings_paths.preferences), settings.listen);
  if (!resolved.ok()) {
    std::fprintf(stderr, "kiln: %s\n", std::string(resolved.status().message()).c_str());
    return 2;
  }
  auto receiver = std::make_unique<ReceiverControl>(**store);
  if (receive) {
    if (absl::Status started = receiver->Start(*resolved); !started.ok()) {
      // The window is still useful without a listener (viewing stored
      // data), so this is a warning, shown in the Log view too. The status
      // line shows where kiln listens; stdout stays quiet so a failure to
      // open the window is the one line a user sees.
      std::fprintf(stderr, "kiln: not receiving: %s\n", std::string(started.message()).c_str());
      (void)(*store)->AppendLog(storage::LogLevel::kError,
                                "not receiving: " + std::string(started.message()));
    }
  }
  SymbolizerSlot metrics_symbolizer;  // the window's store's symbolizer, while it runs
  std::shared_ptr<void> metrics;      // stops before the receiver and store go
  if (!where.metrics_listen.empty()) {
    absl::StatusOr<std::shared_ptr<void>> started = StartMetricsListen(
        where.metrics_listen, [r = receiver.get()] { return r->stats(); }, **store,
        resolved->options.security.auth_token, &metrics_symbolizer);
    gui.metrics_symbolizer = &metrics_symbolizer;
    if (!started.ok()) {
      std::fprintf(stderr, "kiln: %s\n", std::string(started.status().message()).c_str());
      return 1;
    }
    metrics = *std::move(started);
  }
  gui.data_dir = data_dir;
  gui.saved_token_file = SavedTokenFile(settings_paths.preferences);
  int code = RunGui(**store, receiver.get(), gui);
  metrics.reset();
  receiver.reset();
  store->reset();
  if (gui.demo) std::filesystem::remove_all(data_dir);
  return code;
}

}  // namespace
}  // namespace kiln::app

int main(int argc, char** argv) {
  using namespace kiln::app;
  // A client that disconnects must not kill the receiver with SIGPIPE.
  signal(SIGPIPE, SIG_IGN);

  CLI::App cli{"kiln: a desktop viewer for OpenTelemetry profiles, with an OTLP receiver"};
  cli.set_version_flag("--version", std::string("kiln ") + kiln::kVersion);
  cli.require_subcommand(0, 1);

  HeadlessOptions where;
  where.data_dir = kiln::storage::DefaultDataDirectory();
  bool headless = false;
  GuiOptions gui;
  std::string size;
  cli.add_flag("--headless", headless, "Run the receiver and store without a window");
  CLI::Option* listen_option =
      cli.add_option("--listen", where.receiver.listen_address,
                     "Address for OTLP gRPC (default 0.0.0.0:11000; the window also receives with --demo, "
                     "--screenshot or capture files only when this is given)");
  cli.add_option("--metrics-listen", where.metrics_listen,
                 "Serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9464); with a token, scrapes "
                 "send it as basic auth's password");
  cli.add_option("--auth-token-file", where.receiver.auth_token_file,
                 "Require senders to present the token in this file (authorization: Bearer); also "
                 "KILN_AUTH_TOKEN");
  CLI::Option* retention_age_option =
      cli.add_option("--retention-age", where.retention_age,
                     "Delete samples older than this: 90s, 30m, 12h, 14d, 2w; 0 keeps them")
          ->capture_default_str();
  CLI::Option* retention_size_option =
      cli.add_option(
             "--retention-size", where.retention_size_bytes,
             "Delete the oldest samples while the store is larger than this (e.g. 4GiB); 0 = no limit")
          ->transform(CLI::AsSizeValue(false))
          ->capture_default_str();
  cli.add_option("--dictionary-memory", where.dictionary_memory_bytes,
                 "Memory for the dictionary (names, stacks, attributes): past it the oldest samples are "
                 "deleted, as for --retention-size (e.g. 512MiB); 0 = no limit")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  cli.add_option("--sender-values", where.sender_value_bytes,
                 "Bytes of distinct attribute values one sending address may bring (pids, thread names, "
                 "...): past it its new values are stored as \"other\", counted; a collector forwarding a "
                 "fleet is one address (e.g. 128MiB); 0 = no limit")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  cli.add_option("--disk-reserve", where.disk_reserve_bytes,
                 "Refuse new data while less than this is free on the store's disk (e.g. 512MiB, 2GB)")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  cli.add_option("--max-sender-rate", where.receiver.max_sender_bytes_per_second,
                 "Refuse (retryably) requests from a host sending more than this many bytes per second, "
                 "averaged over 10 s (e.g. 20MiB); 0 = no limit")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  cli.add_option("--tls-cert", where.receiver.tls_cert_file,
                 "Serve OTLP over TLS with this certificate (PEM)");
  cli.add_option("--tls-key", where.receiver.tls_key_file, "The TLS certificate's private key (PEM)");
  cli.add_option("--tls-client-ca", where.receiver.tls_client_ca_file,
                 "Require client certificates signed by this CA (PEM): mutual TLS");
  cli.add_option("--data-dir", where.data_dir, "Store directory")->capture_default_str();
  kiln::app::WindowFlags window_flags(cli, &gui);  // --tab and the views' own options
  cli.add_option("--size", size, "Window size WxH, e.g. 1920x1080");
  cli.add_option("--screenshot", gui.screenshot_path, "Write a PNG of the window once the view is drawn, then exit");
  cli.add_flag("--demo", gui.demo, "Fill a temporary store with a built-in synthetic profile");
  std::vector<std::string> open_files, positional_files;
  cli.add_option("--open", open_files, "Open a capture file in the window (repeatable)");
  cli.add_option("files", positional_files, "Capture files to open in the window");
  std::vector<std::string> window_transforms;
  cli.add_option("--transform", window_transforms,
                 "Start every source with this transform, e.g. focus=main, invert, hide=^std:: (repeatable, in order)")
      ->allow_extra_args(false);
  cli.add_option("--compare", gui.compare,
                 "Show every source as a diff against the previous period (previous) or another source (its name)");
  cli.add_option("--debug-dir", where.symbols.debug_dirs,
                 "Also look for debug files here, like /usr/lib/debug (repeatable)");
  cli.add_option("--debuginfod-urls", where.symbols.debuginfod_urls,
                 "debuginfod servers to fetch debug files from (space-separated; default $DEBUGINFOD_URLS)");

  ExportOptions export_options;
  export_options.data_dir = where.data_dir;
  CLI::App* export_cmd = cli.add_subcommand("export", "Write stored profiles, or convert a capture file");
  std::string input, perf_event;
  bool hide_inline = false;
  export_cmd->add_option("--data-dir", export_options.data_dir, "Store directory")->capture_default_str();
  export_cmd->add_option("--input", input, "Read this capture file instead of a store (a converter)");
  export_cmd->add_option("--format", export_options.format, "folded, otlp, pprof or svg")->capture_default_str();
  CLI::Option* group_opt =
      export_cmd->add_option("--group-by", export_options.group_by, "none, process, thread, instance (process and pid), instance-thread or an attribute key")
          ->capture_default_str();
  export_cmd->add_option("--sample-type,--kind", export_options.sample_type,
                         "The sample type to write: a type name (cpu, alloc_space), type/unit, or on-cpu, off-cpu, "
                         "probe (default: pprof's default for pprof input, else on-CPU samples)");
  export_cmd->add_option("--event", perf_event, "perf script input: the event to read");
  export_cmd->add_flag("--hide-inline", hide_inline, "Leave inlined frames out (with --input)");
  bool raw_names = false;
  export_cmd->add_flag("--raw-names", raw_names,
                       "perf script and folded input: keep C++/Rust names mangled (as stackcollapse-perf.pl)");
  export_cmd->add_option("--from", export_options.from, "Start (Unix ns or RFC 3339), inclusive");
  export_cmd->add_option("--to", export_options.to, "End (Unix ns or RFC 3339), exclusive");
  export_cmd->add_option("--filter", export_options.filters, "KEY=VALUE attribute filter (repeatable)");
  export_cmd->add_flag("--annotate", export_options.annotate, "Suffix kernel frames _[k] and JIT frames _[j]");
  export_cmd->add_option("-o,--output", export_options.output, "Write to a file instead of stdout");
  TransformFlags export_transforms(export_cmd);

  DiffOptions diff_options;
  CLI::App* diff_cmd = cli.add_subcommand(
      "diff", "Compare two profiles (capture files or store ranges): what grew, what shrank, what is noise");
  diff_cmd->add_option("base", diff_options.base.input, "Baseline capture file (or use --base-data-dir)");
  diff_cmd->add_option("target", diff_options.target.input, "Target capture file (or use --target-data-dir)");
  std::string diff_data_dir;
  diff_cmd->add_option("--data-dir", diff_data_dir, "Store for a side given no file or store of its own");
  for (auto [side, name] : {std::pair{&diff_options.base, std::string("base")}, {&diff_options.target, std::string("target")}}) {
    diff_cmd->add_option("--" + name + "-data-dir", side->data_dir, "The " + name + " side's store");
    diff_cmd->add_option("--" + name + "-from", side->from, "The " + name + " side's start (Unix ns or RFC 3339)");
    diff_cmd->add_option("--" + name + "-to", side->to, "The " + name + " side's end, exclusive");
    diff_cmd->add_option("--" + name + "-filter", side->filters, "KEY=VALUE for the " + name + " side only (repeatable)");
  }
  diff_cmd->add_option("--format", diff_options.format, "folded (difffolded.pl style), json or svg")->capture_default_str();
  diff_cmd->add_option("--sample-type", diff_options.sample_type, "The sample type to compare (default: each side's)");
  diff_cmd->add_option("--group-by", diff_options.group_by, "none, process, thread, instance (process and pid), instance-thread or an attribute key")->capture_default_str();
  diff_cmd->add_option("--filter", diff_options.filters, "KEY=VALUE attribute filter for both sides (repeatable)");
  diff_cmd->add_flag("--absolute", diff_options.absolute, "Compare weights instead of shares of each side's total");
  diff_cmd->add_flag("--hide-inline", diff_options.hide_inline, "Leave inlined frames out");
  diff_cmd->add_flag("--annotate", diff_options.annotate, "folded: suffix kernel frames _[k] and JIT frames _[j]");
  diff_cmd->add_flag("--raw-names", diff_options.raw_names, "perf script and folded input: keep C++/Rust names mangled");
  diff_cmd->add_option("--event", diff_options.perf_event, "perf script input: the event to read");
  diff_cmd->add_option("-o,--output", diff_options.output, "Write to a file instead of stdout");
  TransformFlags diff_transforms(diff_cmd);

  capture::ImportCommand import_options;
  import_options.data_dir = where.data_dir;
  CLI::App* import_cmd = cli.add_subcommand("import", "Import capture files into a store");
  import_cmd->add_option("--data-dir", import_options.data_dir, "Store directory")->capture_default_str();
  import_cmd->add_option("--sample-type", import_options.sample_type,
                         "pprof: import only this sample type (default: every one)");
  import_cmd->add_option("--event", import_options.perf_event, "perf script: the event to read");
  import_cmd->add_flag("--raw-names", import_options.raw_names,
                       "perf script and folded: keep C++/Rust names mangled");
  import_cmd->add_option("files", import_options.files, "OTLP (protobuf/JSON), pprof, folded or perf script files")
      ->required();

  DumpOptions dump_options;
  CLI::App* dump_cmd =
      cli.add_subcommand("dump", "Print every sample of capture files (or of requests sent to --listen) readably");
  dump_cmd->add_flag("--json", dump_options.json, "One JSON object per sample and line");
  dump_cmd->add_option("--limit", dump_options.limit, "At most this many samples per file (0: all)");
  dump_cmd->add_flag("--raw-names", dump_options.raw_names, "perf script and folded: keep C++/Rust names mangled");
  dump_cmd->add_option("--listen", dump_options.listen,
                       "Receive OTLP gRPC on this address (e.g. 127.0.0.1:11000) and print each request; stores "
                       "nothing");
  dump_cmd->add_option("files", dump_options.files, "OTLP (protobuf/JSON), pprof, folded or perf script files");

  StatsOptions stats_options;
  stats_options.data_dir = where.data_dir;
  CLI::App* stats_cmd = cli.add_subcommand("stats", "Show what a store holds");
  stats_cmd->add_option("--data-dir", stats_options.data_dir, "Store directory")->capture_default_str();

  CLI::App* symbols_cmd = cli.add_subcommand("symbols", "Symbols for native frames: add files, list status");
  symbols_cmd->require_subcommand(1);
  SymbolsAddOptions symbols_add;
  symbols_add.data_dir = where.data_dir;
  CLI::App* symbols_add_cmd = symbols_cmd->add_subcommand(
      "add", "Store the symbols of ELF files (executables, libraries, debug files)");
  symbols_add_cmd->add_option("--data-dir", symbols_add.data_dir, "Store directory")->capture_default_str();
  symbols_add_cmd->add_option("files", symbols_add.files, "ELF files, matched by htlhash or GNU build id")
      ->required();
  symbols_add_cmd
      ->add_option("--wait", symbols_add.wait_seconds,
                   "When kiln is running on the store: seconds to wait for its answer")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  SymbolsListOptions symbols_list;
  symbols_list.data_dir = where.data_dir;
  CLI::App* symbols_list_cmd =
      symbols_cmd->add_subcommand("list", "Every executable seen, with its ids and symbol status");
  symbols_list_cmd->add_option("--data-dir", symbols_list.data_dir, "Store directory")->capture_default_str();

  CLI11_PARSE(cli, argc, argv);
  gui.retention_age_given = retention_age_option->count() > 0;
  gui.retention_size_given = retention_size_option->count() > 0;

  for (auto [command, flags, target] : {std::tuple{export_cmd, &export_transforms, &export_options.transforms},
                                        {diff_cmd, &diff_transforms, &diff_options.transforms}}) {
    if (!command->parsed()) continue;
    absl::StatusOr<std::vector<kiln::storage::Transform>> transforms = flags->Collect();
    if (!transforms.ok()) {
      std::fprintf(stderr, "kiln %s: %s\n", command->get_name().c_str(),
                   std::string(transforms.status().message()).c_str());
      return 2;
    }
    *target = *std::move(transforms);
  }
  if (diff_cmd->parsed()) {
    for (DiffSide* side : {&diff_options.base, &diff_options.target}) {
      if (side->input.empty() && side->data_dir.empty()) side->data_dir = diff_data_dir;
    }
    return RunDiff(diff_options);
  }

  if (export_cmd->parsed() && !input.empty()) {
    capture::ConvertCommand convert;
    convert.input = input;
    convert.format = export_options.format;
    // Unset sample type/group-by let the converter choose from the capture.
    if (group_opt->count() > 0) convert.group_by = export_options.group_by;
    if (absl::Status s = ParseTimeRange(export_options.from, export_options.to, &convert.from_ns, &convert.to_ns);
        !s.ok()) {
      std::fprintf(stderr, "kiln export: %s\n", std::string(s.message()).c_str());
      return 2;
    }
    convert.filters = export_options.filters;
    convert.annotate = export_options.annotate;
    convert.hide_inline = hide_inline;
    convert.sample_type = export_options.sample_type;
    convert.perf_event = perf_event;
    convert.raw_names = raw_names;
    convert.transforms = export_options.transforms;
    convert.output = export_options.output;
    return capture::RunConvertCommand(convert, std::cout, std::cerr);
  }
  if (export_cmd->parsed()) return RunExport(export_options);
  if (import_cmd->parsed()) return capture::RunImportCommand(import_options, std::cout, std::cerr);
  if (stats_cmd->parsed()) return RunStats(stats_options);
  if (dump_cmd->parsed()) return RunDump(dump_options);
  if (symbols_add_cmd->parsed()) return RunSymbolsAdd(symbols_add);
  if (symbols_list_cmd->parsed()) return RunSymbolsList(symbols_list);
  if (headless && (!open_files.empty() || !positional_files.empty())) {
    std::fprintf(stderr, "kiln: --headless opens no capture files; use `kiln import --data-dir DIR FILE...`\n");
    return 2;
  }
  if (headless) return RunHeadless(where);
  if (!size.empty()) {
    if (std::sscanf(size.c_str(), "%dx%d", &gui.width, &gui.height) != 2 || gui.width < 200 ||
        gui.height < 150) {
      std::fprintf(stderr, "kiln: --size wants WIDTHxHEIGHT (at least 200x150), got \"%s\"\n", size.c_str());
      return 2;
    }
    gui.size_given = true;
  }
  for (const std::string& spec : window_transforms) {
    absl::StatusOr<kiln::storage::Transform> t = kiln::storage::ParseTransform(spec);
    if (!t.ok()) {
      std::fprintf(stderr, "kiln: --transform: %s\n", std::string(t.status().message()).c_str());
      return 2;
    }
    gui.transforms.push_back(*std::move(t));
  }
  if (std::string error; !window_flags.Apply(&error)) {
    std::fprintf(stderr, "kiln: %s\n", error.c_str());
    return 2;
  }
  gui.open_files = open_files;
  gui.debug_dirs = where.symbols.debug_dirs;
  gui.debuginfod_urls = where.symbols.debuginfod_urls;
  gui.open_files.insert(gui.open_files.end(), positional_files.begin(), positional_files.end());
  // A demo, a screenshot or a look at capture files is not a server: the
  // receiver starts for them only when --listen asks for it.
  const bool receive =
      listen_option->count() > 0 || (!gui.demo && gui.screenshot_path.empty() && gui.open_files.empty());
  return RunWindow(where, gui, receive);
}
