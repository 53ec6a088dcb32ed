// `kiln dump FILE...`: every sample of a capture, readably (or as JSON
// lines), for people debugging what a producer sends; `kiln dump --listen
// ADDR`: the same for every request an OTLP receiver that stores nothing
// is sent.
#include <signal.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <mutex>
#include <string>

#include <CLI/CLI.hpp>
#include <memory>

#include "app/cli.h"
#include "ingest/capture/capture.h"
#include "ingest/capture/dump.h"
#include "ingest/otlp_receiver.h"
#include "storage/model/sample_type.h"
#include "storage/store.h"

namespace kiln::app {
namespace {

// One sample as --json or the text form asks: the one printer of both modes.
void PrintSample(const DumpOptions& options, const storage::ProfileBatch& batch, const storage::Sample& s,
                 uint64_t number) {
  std::fputs(options.json ? (capture::DumpSampleJson(batch, s) + "\n").c_str()
                          : capture::DumpSampleText(batch, s, number).c_str(),
             stdout);
}

int RunDumpListen(const DumpOptions& options) {
  const sigset_t signals = BlockShutdownSignals();
  // The receiver keeps its Log in a store; samples are not written to it.
  // A private one, removed on the way out.
  std::string dir = (std::filesystem::temp_directory_path() / "kiln-dump-XXXXXX").string();
  if (mkdtemp(dir.data()) == nullptr) {
    std::perror("kiln dump: a temporary directory");
    return 1;
  }
  struct Remove {
    std::string path;
    ~Remove() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  } remove{dir};
  auto store = storage::Store::Open(dir, storage::Store::Mode::kReadWrite);
  if (!store.ok()) {
    std::fprintf(stderr, "kiln dump: %s\n", std::string(store.status().message()).c_str());
    return 1;
  }
  std::FILE* head = options.json ? stderr : stdout;
  std::mutex mu;  // receiver workers print one request at a time
  uint64_t number = 0;
  ingest::ReceiverOptions receiver_options;
  receiver_options.listen_address = options.listen;
  receiver_options.store_samples = false;
  receiver_options.on_batch = [&](const std::string& peer, const storage::ProfileBatch& batch) {
    std::lock_guard lock(mu);
    std::fprintf(head, "# request from %s: %s samples\n", peer.c_str(), storage::FormatCount(batch.samples.size()).c_str());
    if (!options.json) std::fprintf(stdout, "\n");
    for (const storage::Sample& s : batch.samples) PrintSample(options, batch, s, ++number);
    std::fflush(stdout);
    std::fflush(head);
  };
  // What the receiver logs (a request refused, with the field path that
  // was wrong; a new sender) is what someone debugging a producer needs
  // beside the samples.
  receiver_options.on_log = [&](storage::LogLevel level, const std::string& message) {
    std::lock_guard lock(mu);
    std::fprintf(head, "# %s: %s\n", std::string(storage::LogLevelName(level)).c_str(), message.c_str());
    std::fflush(head);
  };
  auto receiver = ingest::OtlpReceiver::Start(store->get(), receiver_options);
  if (!receiver.ok()) {
    std::fprintf(stderr, "kiln dump: %s\n", std::string(receiver.status().message()).c_str());
    return 1;
  }
  std::fprintf(head, "# kiln dump: listening on %s for OTLP profiles, printing each request, storing nothing; "
                     "Ctrl-C stops\n",
               (*receiver)->stats().listen_address.c_str());
  std::fflush(head);
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  (*receiver)->Stop();
  std::lock_guard lock(mu);
  std::fprintf(head, "# kiln dump: stopped after %s samples\n", storage::FormatCount(number).c_str());
  return 0;
}

}  // namespace

int RunDump(const DumpOptions& options) {
  if (!options.listen.empty()) {
    if (!options.files.empty()) {
      std::fprintf(stderr, "kiln dump: give files or --listen, not both\n");
      return 2;
    }
    return RunDumpListen(options);
  }
  if (options.files.empty()) {
    std::fprintf(stderr, "kiln dump: give capture files, or --listen ADDR to print what senders send\n");
    return 2;
  }
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
      PrintSample(options, batch, s, ++number);
    }
  }
  std::fflush(stdout);
  return code;
}

Subcommand AddDumpCommand(CLI::App& cli) {
  auto o = std::make_shared<DumpOptions>();
  CLI::App* cmd =
      cli.add_subcommand("dump", "Print every sample of capture files (or of requests sent to --listen) readably");
  cmd->add_flag("--json", o->json, "One JSON object per sample and line");
  cmd->add_option("--limit", o->limit, "At most this many samples per file (0: all)");
  cmd->add_flag("--raw-names", o->raw_names, "perf script and folded: keep C++/Rust names mangled");
  cmd->add_option("--listen", o->listen,
                  "Receive OTLP gRPC on this address (e.g. 127.0.0.1:11000) and print each request; stores "
                  "nothing");
  cmd->add_option("files", o->files, "OTLP (protobuf/JSON), pprof, folded or perf script files");
  return {cmd, [o] { return RunDump(*o); }};
}

}  // namespace kiln::app
