#pragma once
// --metrics-listen ADDR: Prometheus metrics (ingest/metrics) over the
// receiver and store this kiln runs, for `kiln --headless` and the window
// alike.

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "app/symbol_service.h"
#include "ingest/forward/forward_status.h"
#include "ingest/otlp_receiver.h"
#include "storage/store.h"

namespace kiln::app {

// Serves /metrics on `address` until the handle is dropped. `receiver`
// gives the receiver's stats at each scrape (nullopt: not receiving), and
// `symbols` the background symbolizer's progress (null, or empty: none),
// `forwarding` each --forward destination's state (empty: none); they and
// the store must outlive the handle. With a token, scrapes must
// send it as basic auth's password. Prints where it serves. An error when
// it cannot bind, or when this build has no prometheus-cpp.
[[nodiscard]] absl::StatusOr<std::shared_ptr<void>> StartMetricsListen(
    const std::string& address, std::function<std::optional<ingest::ReceiverStats>()> receiver,
    const storage::Store& store, const std::string& token,
    const SymbolizerSlot* symbols = nullptr,
    std::function<std::vector<ingest::ForwardStatus>()> forwarding = {});

}  // namespace kiln::app
