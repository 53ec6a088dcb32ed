// OtlpReceiver: the gRPC server that accepts OTLP profiles
// (opentelemetry.proto.collector.profiles.v1development.ProfilesService/
// Export) and writes them into a Store.
//
// Threads: Start() and Stop() from one owning thread; stats() from any
// thread at any time. The Store must outlive the receiver.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ingest/connection_guard.h"
#include "ingest/receiver_security.h"
#include "storage/store.h"

namespace kiln::ingest {

struct ReceiverOptions {
  std::string listen_address = "0.0.0.0:11000";
  // Largest accepted request after decompression; larger ones are answered
  // RESOURCE_EXHAUSTED.
  int max_message_bytes = 64 << 20;
  // Decoded requests waiting for or inside a store write, in bytes. Past
  // this, new requests get UNAVAILABLE (agents retry later) instead of
  // growing memory without bound. Each sending host may hold a share of it
  // (ingest/inflight_budget.h), so one cannot keep the others out.
  int64_t max_inflight_bytes = 256 << 20;
  // Token and TLS (ingest/receiver_security.h); none by default.
  ReceiverSecurity security;
  // Request bytes per second each sending host may average over 10 s
  // (ingest/sender_rate_limit.h); past it, UNAVAILABLE (agents retry).
  // 0 = no limit (the default: one busy agent is not a hostile one).
  uint64_t max_sender_bytes_per_second = 0;
  // What TCP connections may hold (ingest/connection_guard.h): caps in all
  // and per host, idle and stalled connections, requests being received.
  ConnectionLimits connections;
  // gRPC's own memory for the receiver (its resource quota: buffers of
  // connections and requests being read); under pressure it slows
  // senders' flow-control windows.
  size_t grpc_memory_bytes = size_t{256} << 20;
  // Called with each accepted request's normalized samples and who sent
  // them, on a receiver worker (several may call at once), before they are
  // stored: `kiln dump --listen` prints them. With `store_samples` false
  // they are then dropped, not written (the store keeps only the Log).
  std::function<void(const std::string& peer, const storage::ProfileBatch& batch)> on_batch;
  bool store_samples = true;
  // Called with each line the receiver writes to the store's Log (a
  // refused request and why, with its field path; a new sender), on the
  // thread that writes it: `kiln dump --listen` prints them too.
  std::function<void(storage::LogLevel level, const std::string& message)> on_log;
  // Forwarding (ingest/forward/forwarder.h): each accepted request's bytes
  // are queued for these destinations in the store write of its samples
  // (Store::WriteAndForward), then `on_forwarded` runs (it wakes the
  // forwarder).
  std::vector<std::string> forward_destinations;
  std::function<void()> on_forwarded;
};

// The host part of a gRPC peer string ("ipv4:10.0.0.5:53412" ->
// "10.0.0.5", "ipv6:[::1]:1" -> "::1"), and whether it is this machine's
// loopback.
std::string PeerHost(const std::string& peer);
bool IsLoopbackPeer(const std::string& peer);

// One sending peer (an agent), as seen recently.
struct PeerStats {
  std::string peer;           // gRPC peer string, e.g. "ipv4:127.0.0.1:53412"
  std::string address;        // its host part (PeerHost): "127.0.0.1"
  // The host.name values its samples carried, as sent ("build-7"; several
  // joined by ", " for a collector forwarding hosts); "" when none.
  std::string hosts;
  int64_t last_seen_ns = 0;   // Unix ns of its last request
  uint64_t requests = 0;
  uint64_t samples = 0;
  double samples_per_second = 0;  // over the last ~10 s, every kind
  // The same per sample type (storage::SampleTypeLabel: "On-CPU
  // (samples)", "Off-CPU (ns)"), busiest first: an off-CPU event is not
  // an on-CPU sample, and one total hid which was which.
  struct KindRate {
    std::string kind;
    double per_second = 0;
    bool operator==(const KindRate&) const = default;
  };
  std::vector<KindRate> kinds;
  storage::DataLossCounts losses{};  // what was refused or cut, by reason
  bool operator==(const PeerStats&) const = default;
};

struct ReceiverStats {
  std::string listen_address;   // the address actually bound (port resolved)
  uint64_t requests = 0;
  uint64_t requests_failed = 0;     // INVALID_ARGUMENT, RESOURCE_EXHAUSTED, ...
  uint64_t profiles_accepted = 0;
  uint64_t profiles_rejected = 0;
  uint64_t samples_accepted = 0;
  uint64_t requests_unauthenticated = 0;  // refused for a missing or wrong token
  // Request bytes as they arrived (compressed when sent so) from senders
  // that may send; a stranger's refused requests are not counted.
  uint64_t bytes_received = 0;
  // Since start, by reason (storage/model/data_loss.h); the store keeps the
  // totals across restarts.
  storage::DataLossCounts losses{};
  bool token_required = false;
  bool tls = false;
  bool client_certificates = false;  // mutual TLS
  // Hosts (not this machine) that sent the token without TLS, so anyone on
  // the network path could read it.
  uint64_t token_in_clear_hosts = 0;
  std::vector<PeerStats> peers;     // seen in the last 60 s, most recent first
  // Connections as the guard last saw them, and what it closed, by reason.
  ConnectionGuardStats connections;
  bool operator==(const ReceiverStats&) const = default;
};

class OtlpReceiver {
 public:
  // Binds and starts serving. Fails with a clear message when the address
  // cannot be bound (e.g. port in use).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<OtlpReceiver>> Start(
      storage::Store* store, const ReceiverOptions& options);
  virtual ~OtlpReceiver() = default;

  // Stops accepting, answers in-flight requests, then returns. Idempotent.
  virtual void Stop() = 0;
  // The bound port (useful with port 0 in tests).
  virtual int port() const = 0;
  virtual ReceiverStats stats() const = 0;
};

}  // namespace kiln::ingest
