// Sends one OTLP profiles request to a receiver the way an agent does and
// requires it accepted whole: the one Send of the integration tests.
#pragma once

#include <doctest/doctest.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <string>

#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.grpc.pb.h"

namespace kiln::testing {

inline void Send(const std::string& target,
                 const opentelemetry::proto::collector::profiles::v1development::ExportProfilesServiceRequest& request) {
  namespace otlp = opentelemetry::proto::collector::profiles::v1development;
  auto stub = otlp::ProfilesService::NewStub(grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  otlp::ExportProfilesServiceResponse response;
  const grpc::Status status = stub->Export(&ctx, request, &response);
  REQUIRE_MESSAGE(status.ok(), status.error_message());
  REQUIRE_FALSE(response.has_partial_success());
}

}  // namespace kiln::testing
