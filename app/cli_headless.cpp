// `kiln --headless`: the receiver and the store without a window.
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "app/cli.h"
#include "app/desktop_settings.h"
#include "app/metrics_listen.h"
#include "app/retention_limits.h"
#include "app/symbol_requests.h"
#include "app/symbol_service.h"
#include "ingest/forward/forwarder.h"
#include "ingest/otlp_receiver.h"
#include "storage/store.h"

namespace kiln::app {

absl::StatusOr<storage::StoreOptions> StoreOptionsFrom(const HeadlessOptions& options) {
  absl::StatusOr<std::chrono::nanoseconds> age = ParseRetentionAge(options.retention_age);
  if (!age.ok()) return absl::InvalidArgumentError("--retention-age " + std::string(age.status().message()));
  storage::StoreOptions store;
  store.disk_reserve_bytes = options.disk_reserve_bytes;
  store.retention_age = *age;
  store.retention_size_bytes = options.retention_size_bytes;
  store.max_dictionary_memory = options.dictionary_memory_bytes;
  store.max_attribute_value_bytes_per_sender =
      options.sender_value_bytes == 0 ? UINT64_MAX : options.sender_value_bytes;
  store.max_forward_bytes = options.forward.max_bytes;
  return store;
}

sigset_t BlockShutdownSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

int RunHeadless(const HeadlessOptions& options) {
  const sigset_t signals = BlockShutdownSignals();

  absl::StatusOr<storage::StoreOptions> store_options = StoreOptionsFrom(options);
  if (!store_options.ok()) {
    std::fprintf(stderr, "kiln: %s\n", std::string(store_options.status().message()).c_str());
    return 2;
  }
  auto store = storage::Store::Open(options.data_dir, storage::Store::Mode::kReadWrite, *store_options);
  if (!store.ok()) {
    std::fprintf(stderr, "kiln: %s\n", std::string(store.status().message()).c_str());
    return 1;
  }
  absl::StatusOr<ResolvedReceiver> resolved = ResolveReceiverOptions(
      options.receiver, [](const char* name) { return std::getenv(name); },
      SavedTokenFile(DefaultSettingsPaths().preferences));
  if (!resolved.ok()) {
    std::fprintf(stderr, "kiln: %s\n", std::string(resolved.status().message()).c_str());
    return 2;
  }
  absl::StatusOr<std::unique_ptr<ingest::Forwarder>> forwarder =
      StartForwarding(options.forward, **store, &resolved->options);
  if (!forwarder.ok()) {
    std::fprintf(stderr, "kiln: %s\n", std::string(forwarder.status().message()).c_str());
    return 2;
  }
  auto receiver = ingest::OtlpReceiver::Start(store->get(), resolved->options);
  if (!receiver.ok()) {
    std::fprintf(stderr, "kiln: %s\n", std::string(receiver.status().message()).c_str());
    return 1;
  }
  const ingest::ReceiverSecurity& security = resolved->options.security;
  std::printf("kiln: listening on %s for OTLP profiles (gRPC ProfilesService/Export%s)\n",
              (*receiver)->stats().listen_address.c_str(),
              security.tls() ? (security.tls_client_ca_file.empty() ? ", TLS" : ", mutual TLS") : "");
  if (security.auth_token.empty()) {
    std::printf(
        "kiln: no token required: anyone who reaches this port can send (--auth-token-file FILE or "
        "KILN_AUTH_TOKEN requires one)\n");
  } else {
    std::printf("kiln: senders must present the token from %s (kiln-agent -auth-token-file FILE)\n",
                resolved->token_source.c_str());
  }
  std::printf(
      "kiln: storing in %s, keeping %s\n", options.data_dir.c_str(),
      store_options->retention_age.count() == 0 && options.retention_size_bytes == 0
          ? "everything (no retention)"
          : ("the last " +
             (store_options->retention_age.count() ? options.retention_age : std::string("(any age)")) +
             (options.retention_size_bytes
                  ? " and at most " + storage::FormatBytes(options.retention_size_bytes)
                  : std::string()))
                .c_str());
  const std::vector<ingest::ForwardTarget> forward_targets =
      *forwarder ? (*forwarder)->Targets() : std::vector<ingest::ForwardTarget>{};
  for (const ingest::ForwardTarget& t : forward_targets) {
    const storage::ForwardBacklog owed = (*store)->ForwardBacklogOf(t.target);
    std::printf("kiln: forwarding every accepted request to %s%s%s (%llu owed from before)\n", t.target.c_str(),
                t.http ? " (OTLP/HTTP)" : "", t.tls ? " over TLS" : "", static_cast<unsigned long long>(owed.requests));
  }
  std::fflush(stdout);
  (void)(*store)->AppendLog(storage::LogLevel::kInfo, "listening on " + (*receiver)->stats().listen_address);
  std::shared_ptr<void> metrics;  // stops before the receiver, symbolizer and store go
  SymbolizerSlot symbolizer;  // scraped from the exporter's threads once it runs
  if (!options.metrics_listen.empty()) {
    absl::StatusOr<std::shared_ptr<void>> started = StartMetricsListen(
        options.metrics_listen,
        [r = receiver->get()]() -> std::optional<ingest::ReceiverStats> { return r->stats(); }, **store,
        security.auth_token, &symbolizer,
        [f = forwarder->get()] { return f ? f->Status() : std::vector<ingest::ForwardStatus>{}; });
    if (!started.ok()) {
      std::fprintf(stderr, "kiln: %s\n", std::string(started.status().message()).c_str());
      return 1;
    }
    metrics = *std::move(started);
  }

  // Names for native frames, found in the background (logged in the store,
  // visible with `kiln symbols list`).
  SymbolSourceOptions symbol_options;
  symbol_options.debug_dirs = options.symbols.debug_dirs;
  symbol_options.debuginfod_urls = DebuginfodUrls(options.symbols.debuginfod_urls);
  if (!symbol_options.debuginfod_urls.empty()) {
    std::printf("kiln: fetching missing debug files from debuginfod (%zu server%s)\n",
                symbol_options.debuginfod_urls.size(), symbol_options.debuginfod_urls.size() == 1 ? "" : "s");
  }
  symbol_options.request_dir = SymbolRequestDir(options.data_dir);  // `kiln symbols add` meanwhile
  symbol_options.echo = [](const std::string& line) {
    std::printf("kiln: %s\n", line.c_str());
    std::fflush(stdout);
  };
  auto symbols = std::make_unique<SymbolService>(**store, symbol_options);
  symbolizer.Set(symbols.get());

  // A reporter prints a line every 5 s while data arrives, so a user sees
  // an agent is connected without opening the window.
  // It also copies the Log's warnings and errors to stderr: what needs a
  // person (retention at its limit, caps reached, refusals, connections
  // closed, a token sent in clear) is logged once per change, so stderr
  // carries what matters and not every request or symbol miss.
  std::atomic<bool> stop{false};
  std::vector<storage::LogEntry> started_log = (*store)->ReadLog(1);
  uint64_t echoed_log = started_log.empty() ? 0 : started_log.front().sequence;
  auto echo_log = [&] {
    std::vector<storage::LogEntry> entries = (*store)->ReadLog(200);  // newest first
    for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
      if (it->sequence <= echoed_log) continue;
      echoed_log = it->sequence;
      if (it->level < storage::LogLevel::kWarning) continue;
      std::fprintf(stderr, "kiln: %s: %s\n", std::string(storage::LogLevelName(it->level)).c_str(),
                   it->message.c_str());
    }
  };
  std::thread reporter([&] {
    uint64_t last_samples = 0, last_rejected = 0;
    std::vector<ingest::ForwardStatus> last_forward;
    while (!stop.load()) {
      for (int i = 0; i < 50 && !stop.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      echo_log();
      ingest::ReceiverStats st = (*receiver)->stats();
      if (st.samples_accepted != last_samples || st.profiles_rejected != last_rejected) {
        std::printf("kiln: %llu samples received (+%llu), %zu agent(s) active, %llu profiles rejected\n",
                    static_cast<unsigned long long>(st.samples_accepted),
                    static_cast<unsigned long long>(st.samples_accepted - last_samples), st.peers.size(),
                    static_cast<unsigned long long>(st.profiles_rejected));
        std::fflush(stdout);
        last_samples = st.samples_accepted;
        last_rejected = st.profiles_rejected;
      }
      // Forwarding: a line per destination when its state changes.
      if (*forwarder != nullptr) {
        std::vector<ingest::ForwardStatus> fs = (*forwarder)->Status();
        last_forward.resize(fs.size());
        for (size_t i = 0; i < fs.size(); ++i) {
          if (fs[i] == last_forward[i]) continue;
          last_forward[i] = fs[i];
          std::printf("kiln: %s\n", ingest::DescribeForwardStatus(fs[i], storage::UnixNowNs()).c_str());
          std::fflush(stdout);
        }
      }
    }
  });

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  std::printf("kiln: %s received, shutting down\n", signal_number == SIGINT ? "SIGINT" : "SIGTERM");
  std::fflush(stdout);
  stop = true;
  reporter.join();
  metrics.reset();
  (*receiver)->Stop();
  forwarder->reset();  // after the receiver: nothing queues any more
  symbolizer.Set(nullptr);
  symbols.reset();  // cancels a read or download in progress
  echo_log();
  (void)(*store)->AppendLog(storage::LogLevel::kInfo, "shut down");
  receiver->reset();
  store->reset();  // closes RocksDB
  std::printf("kiln: stopped\n");
  return 0;
}

}  // namespace kiln::app
