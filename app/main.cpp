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
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

#include "app/cli.h"
#include "app/metrics_listen.h"
#include "ingest/forward/forwarder.h"
#include "app/demo_profile.h"
#include "app/desktop_settings.h"
#include "app/gui_app.h"
#include "ingest/otlp_receiver.h"
#include "kiln_version.h"
#include "storage/store.h"

namespace kiln::app {
namespace {

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
  // --forward: requests accepted by this window's receiver are passed on.
  absl::StatusOr<std::unique_ptr<ingest::Forwarder>> forwarder =
      StartForwarding(where.forward, **store, &resolved->options);
  if (!forwarder.ok()) {
    std::fprintf(stderr, "kiln: %s\n", std::string(forwarder.status().message()).c_str());
    return 2;
  }
  auto receiver = std::make_unique<ReceiverControl>(**store);
  receiver->SetForwarder(forwarder->get());  // reset after the receiver, below
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
        resolved->options.security.auth_token, &metrics_symbolizer, [r = receiver.get()] { return r->forward_status(); });
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
  forwarder->reset();  // after the receiver: nothing queues any more
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
#if defined(__GLIBC__)
  // glibc raises its mmap threshold to the largest block freed (up to 32
  // MiB): from then on a query's symbol tables and slices, tens of MB each
  // and freed within a second, come from the heap arenas, whose freed
  // pages stay in RSS between queries. A fixed threshold hands every block
  // of 1 MiB or more back to the system when it is freed (issue 29: the
  // live window's RSS 293-342 MiB became 280-289, its start-up peak
  // 435-451 MiB became 338-342; tests/bench/window_live_rss.sh).
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif

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
  AddForwardFlags(cli, &where.forward);
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

  // Each subcommand's flags come from its own cli_*.cpp (app/cli.h).
  const Subcommand subcommands[] = {
      AddExportCommand(cli, where.data_dir), AddDiffCommand(cli),
      AddImportCommand(cli, where.data_dir), AddDumpCommand(cli),
      AddStatsCommand(cli, where.data_dir),  AddSymbolsCommand(cli, where.data_dir),
      AddMcpCommand(cli, where.data_dir),
  };

  CLI11_PARSE(cli, argc, argv);
  gui.retention_age_given = retention_age_option->count() > 0;
  gui.retention_size_given = retention_size_option->count() > 0;

  for (const Subcommand& sub : subcommands) {
    if (sub.command->parsed()) return sub.run();
  }
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
