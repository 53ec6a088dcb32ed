#pragma once
// A small OTLP profiles receiver for the agent's tests: a real gRPC server on
// 127.0.0.1 that keeps every request it accepts. It can answer UNAVAILABLE
// to the first N calls to exercise the agent's retry path.
//
// Thread-safe: gRPC threads add, the test thread reads copies.

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.grpc.pb.h"

namespace grpc {
class Server;
}

namespace kiln::agent::testing {

using ExportRequest = opentelemetry::proto::collector::profiles::v1development::ExportProfilesServiceRequest;

class TestReceiver final
    : public opentelemetry::proto::collector::profiles::v1development::ProfilesService::Service {
 public:
  // Listens on 127.0.0.1 with an ephemeral port; port() says which. With
  // accept_gzip false, gzip-compressed requests fail with UNIMPLEMENTED,
  // which is how a test proves the client compresses.
  explicit TestReceiver(bool accept_gzip = true);
  ~TestReceiver() override;

  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  void FailNextCalls(int n) { fail_next_ = n; }
  std::vector<ExportRequest> requests() const;
  int calls() const { return calls_; }

  grpc::Status Export(
      grpc::ServerContext* ctx,
      const opentelemetry::proto::collector::profiles::v1development::ExportProfilesServiceRequest* req,
      opentelemetry::proto::collector::profiles::v1development::ExportProfilesServiceResponse* resp) override;

 private:
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::atomic<int> fail_next_{0};
  std::atomic<int> calls_{0};
  mutable std::mutex mu_;
  std::vector<ExportRequest> requests_;
};

}  // namespace kiln::agent::testing
