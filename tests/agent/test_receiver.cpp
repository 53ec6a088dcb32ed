#include "test_receiver.h"

#include <grpcpp/grpcpp.h>

namespace kiln::agent::testing {

TestReceiver::TestReceiver(bool accept_gzip) {
  grpc::ServerBuilder builder;
  builder.SetCompressionAlgorithmSupportStatus(GRPC_COMPRESS_GZIP, accept_gzip);
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
  builder.SetMaxReceiveMessageSize(64 << 20);
  builder.RegisterService(this);
  server_ = builder.BuildAndStart();
}

TestReceiver::~TestReceiver() {
  if (server_) server_->Shutdown();
}

std::vector<ExportRequest> TestReceiver::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

grpc::Status TestReceiver::Export(
    grpc::ServerContext*,
    const opentelemetry::proto::collector::profiles::v1development::ExportProfilesServiceRequest* req,
    opentelemetry::proto::collector::profiles::v1development::ExportProfilesServiceResponse*) {
  ++calls_;
  if (fail_next_ > 0) {
    --fail_next_;
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "test receiver: try again later");
  }
  std::lock_guard lock(mu_);
  requests_.push_back(*req);
  return grpc::Status::OK;
}

}  // namespace kiln::agent::testing
