#include "app/metrics_listen.h"

#include <cstdio>

#ifdef KILN_HAVE_METRICS
#include "ingest/metrics/metrics_exporter.h"
#endif

namespace kiln::app {

absl::StatusOr<std::shared_ptr<void>> StartMetricsListen(
    const std::string& address, std::function<std::optional<ingest::ReceiverStats>()> receiver,
    const storage::Store& store, const std::string& token,
    const SymbolizerSlot* symbols, std::function<std::vector<ingest::ForwardStatus>()> forwarding) {
#ifdef KILN_HAVE_METRICS
  ingest::MetricsSources sources;
  sources.receiver = std::move(receiver);
  sources.store = [&store] { return store.Stats(); };
  sources.forwarding = std::move(forwarding);
  if (symbols) {
    sources.symbols = [symbols]() -> std::optional<ingest::SymbolizerFacts> {
      std::optional<SymbolProgress> p = symbols->Progress();
      if (!p) return std::nullopt;
      return ingest::SymbolizerFacts{p->busy, p->queued, p->done};
    };
  }
  absl::StatusOr<std::unique_ptr<ingest::MetricsExporter>> exporter =
      ingest::MetricsExporter::Start(address, std::move(sources), token);
  if (!exporter.ok()) return exporter.status();
  const std::string host = address.substr(0, address.rfind(':'));
  std::printf("kiln: Prometheus metrics on http://%s:%d/metrics%s\n", host.c_str(), (*exporter)->port(),
              token.empty() ? "" : " (basic auth: any user, the token as password)");
  std::fflush(stdout);
  return std::shared_ptr<void>(std::move(*exporter));
#else
  (void)address;
  (void)receiver;
  (void)store;
  (void)token;
  (void)symbols;
  (void)forwarding;
  return absl::UnimplementedError(
      "--metrics-listen: this kiln was built without prometheus-cpp (prometheus-cpp-dev, or brew install "
      "prometheus-cpp)");
#endif
}

}  // namespace kiln::app
