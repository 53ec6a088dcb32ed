// Forwarding (kiln --forward, --forward-http): every request kiln accepts,
// passed on as its bytes (no re-encoding) to each destination, an OTLP
// profiles receiver (another kiln, Pyroscope, Parca, an OpenTelemetry
// Collector), over gRPC or OTLP/HTTP (a POST of the same protobuf bytes).
//
// The receiver queues each accepted request in the store for every
// destination in the same write as its samples (Store::WriteAndForward),
// so what a sender was told is stored is owed to every destination across
// restarts and kill -9. Here one thread per destination sends what its
// queue holds, oldest first, and acknowledges each request the destination
// accepted; while a destination is down it retries with backoff (1 s
// doubling to 30 s). A request the destination refuses as invalid
// (gRPC INVALID_ARGUMENT; HTTP 400 Bad Request or 413 Content Too Large) is
// dropped and counted (DataLoss::kForwardRejected); every other failure is
// retried, so a wrong token or TLS setting loses nothing once it is fixed
// (OTLP/HTTP's rule drops on every other 4xx as well; a 401 kiln retries).
//
// Threads: one per destination; Status and Notify from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "ingest/forward/forward_status.h"
#include "storage/store.h"

namespace kiln::ingest {

// Where to forward, and how (--forward, --forward-tls, --forward-ca-file,
// --forward-header).
struct ForwardTarget {
  // host:port, as gRPC takes it; with `http`, the URL requests are POSTed
  // to. Names the queue.
  std::string target;
  bool http = false;    // OTLP/HTTP (--forward-http); TLS for https:// URLs
  bool tls = false;     // else plaintext
  std::string ca_file;  // TLS: trust these roots (PEM) instead of the system's
  std::vector<std::pair<std::string, std::string>> headers;  // sent with every request
};

// The flags' targets, checked (host:port; http:// or https:// URLs, to which
// a bare host gets OTLP's /v1development/profiles; a readable CA file;
// KEY=VALUE headers with lowercase-able keys); an error names the bad one.
[[nodiscard]] absl::StatusOr<std::vector<ForwardTarget>> ParseForwardTargets(
    const std::vector<std::string>& targets, bool tls, const std::string& ca_file,
    const std::vector<std::string>& headers, const std::vector<std::string>& http_urls = {});

// Whether this build can forward over OTLP/HTTP (it needs libcurl).
bool ForwardHttpAvailable();

// The queue names of `targets`, for ReceiverOptions::forward_destinations.
std::vector<std::string> ForwardQueueNames(const std::vector<ForwardTarget>& targets);

class Forwarder {
 public:
  // `store` must outlive this. Starts the threads.
  Forwarder(storage::Store* store, std::vector<ForwardTarget> targets);
  ~Forwarder();  // stops and joins (a request in flight ends within its deadline)
  Forwarder(const Forwarder&) = delete;
  Forwarder& operator=(const Forwarder&) = delete;

  // New requests are queued: wake the senders.
  void Notify();
  std::vector<ForwardStatus> Status() const;
  std::vector<ForwardTarget> Targets() const;  // as given, in order

 private:
  struct Destination;
  void Run(Destination* d);

  storage::Store* const store_;
  std::vector<std::unique_ptr<Destination>> destinations_;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
  uint64_t generation_ = 0;  // guarded by mutex_: bumps on Notify
};

}  // namespace kiln::ingest
