#pragma once
// Sends Export requests to the collector on its own thread, so a slow or
// absent receiver never stalls sampling.
//
// Queue: requests wait in order, encoded (a parsed message takes several
// times its wire size), bounded by max_unsent_bytes, beyond which the oldest
// are dropped and counted.
// Retry: UNAVAILABLE, DEADLINE_EXCEEDED and RESOURCE_EXHAUSTED retry the head
// of the queue with exponential backoff (1 s .. 30 s); RESOURCE_EXHAUSTED
// gives up after kMaxExhaustedAttempts since a request that is too large
// will never fit. Other errors (UNAUTHENTICATED: a missing or wrong token)
// drop the request with a message.
// Transport: gRPC, gzip, TLS verifying the server unless disable_tls.
//
// Enqueue/Flush/stats from any thread; the destructor stops the thread
// without waiting for the queue (call Flush first to deliver it).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "otlp_builder.h"

namespace grpc {
class Channel;
}

namespace kiln::agent {

struct ExporterOptions {
  std::string target;  // HOST:PORT
  bool disable_tls = false;
  std::string tls_ca_pem;  // "" = the system's roots
  // Sent with every export (ExportHeaders: the token, OTEL_EXPORTER_OTLP_HEADERS).
  std::vector<std::pair<std::string, std::string>> headers;
  std::size_t max_unsent_bytes = 16u << 20;
  std::chrono::milliseconds rpc_timeout{10000};
  bool verbose = false;
};

struct ExporterStats {
  std::uint64_t sent_requests = 0;
  std::uint64_t sent_samples = 0;
  std::uint64_t sent_bytes = 0;  // encoded protobuf size, before gzip
  std::uint64_t retries = 0;
  std::uint64_t dropped_requests = 0;  // queue full, or given up
  std::uint64_t dropped_samples = 0;
  std::uint64_t rejected_profiles = 0;  // partial_success from the receiver
  std::size_t queued_requests = 0;
  std::size_t queued_bytes = 0;
  bool connected = false;  // last attempt reached the receiver
};

class OtlpExporter {
 public:
  static constexpr int kMaxExhaustedAttempts = 5;

  explicit OtlpExporter(ExporterOptions options);
  ~OtlpExporter();
  OtlpExporter(const OtlpExporter&) = delete;
  OtlpExporter& operator=(const OtlpExporter&) = delete;

  // Waits up to `timeout` for a connection. "" when connected, else a message
  // for the user saying what is wrong and what to check.
  std::string CheckReachable(std::chrono::milliseconds timeout);

  void Enqueue(ExportRequest request, std::size_t samples);
  // Waits until the queue is empty or `timeout` passed; true when empty.
  bool Flush(std::chrono::milliseconds timeout);
  ExporterStats stats() const;

 private:
  struct Pending {
    std::string encoded;  // serialized ExportRequest
    std::size_t samples = 0;
    std::size_t bytes = 0;
    int exhausted_attempts = 0;
  };
  void Run();

  ExporterOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_;
  bool stopping_ = false;
  bool sending_ = false;
  ExporterStats stats_;
  std::string last_error_;
  std::thread thread_;
};

}  // namespace kiln::agent
