#pragma once
// Prometheus metrics (`kiln --metrics-listen ADDR`): /metrics in the text
// format, served by prometheus-cpp's exposer, read at each scrape from the
// stats the receiver and the store already keep (nothing counted twice, so
// the metrics cannot disagree with `kiln stats`, the status line or the
// Log). Names: `kiln_` prefix, `_total` on counters, units in the name.
//
// Counters since this kiln started: requests, profiles and samples
// accepted, and refused or cut per reason (the named data-loss table,
// storage/model/data_loss.h). Gauges: the store's size by part, samples
// held, dictionary memory, free disk, open connections, senders seen in
// the last minute with their rates; the background symbolizer's queue.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ingest/forward/forward_status.h"
#include "ingest/otlp_receiver.h"
#include "prometheus/metric_family.h"
#include "storage/store.h"

namespace kiln::ingest {

// The background symbolizer's progress (app/symbol_service.h).
struct SymbolizerFacts {
  bool busy = false;    // reading or downloading now
  uint64_t queued = 0;  // executables and files waiting
  uint64_t done = 0;    // finished since it started
};

// The families for one scrape. `receiver` is null when kiln is not
// receiving (a window opened on captures), `symbols` when no symbolizer
// reports: their families are then absent, not zero; `forwarding` has a
// status per --forward destination (empty without). Pure.
std::vector<prometheus::MetricFamily> MetricFamilies(const ReceiverStats* receiver, const storage::StoreStats& store,
                                                     const SymbolizerFacts* symbols = nullptr,
                                                     const std::vector<ForwardStatus>& forwarding = {});

// The families as Prometheus text (what /metrics answers). Pure.
std::string MetricsText(const std::vector<prometheus::MetricFamily>& families);

struct MetricsSources {
  // Called at each scrape, from the exposer's threads.
  std::function<std::optional<ReceiverStats>()> receiver;
  std::function<storage::StoreStats()> store;
  std::function<std::optional<SymbolizerFacts>()> symbols;  // may be empty
  std::function<std::vector<ForwardStatus>()> forwarding;   // may be empty (no --forward)
};

class MetricsExporter {
 public:
  // Serves /metrics on `address` (HOST:PORT; port 0 picks one). With a
  // token, a scrape must send it as HTTP basic auth's password (any user
  // name; Prometheus: basic_auth.password_file), as senders must: the
  // metrics name senders' addresses and hosts. A clear error when the
  // address cannot be bound.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<MetricsExporter>> Start(const std::string& address,
                                                                           MetricsSources sources,
                                                                           const std::string& token = "");
  virtual ~MetricsExporter() = default;
  virtual int port() const = 0;
};

}  // namespace kiln::ingest
