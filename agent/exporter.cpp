#include "exporter.h"

#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <string>

#include "absl/status/status.h"

#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.grpc.pb.h"

namespace kiln::agent {
namespace {

namespace collector = opentelemetry::proto::collector::profiles::v1development;

constexpr auto kMinBackoff = std::chrono::seconds(1);
constexpr auto kMaxBackoff = std::chrono::seconds(30);
// gRPC's default receive limit is 4 MiB; raise ours to what receivers accept
// (the OpenTelemetry profiler sends up to 32 MiB).
constexpr int kMaxMessageBytes = 64 << 20;

bool Retryable(grpc::StatusCode code) {
  return code == grpc::StatusCode::UNAVAILABLE || code == grpc::StatusCode::DEADLINE_EXCEEDED ||
         code == grpc::StatusCode::RESOURCE_EXHAUSTED;
}

// gRPC's codes are absl's (both the canonical codes): abseil names them.
std::string StatusCodeName(grpc::StatusCode code) {
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

}  // namespace

OtlpExporter::OtlpExporter(ExporterOptions options) : options_(std::move(options)) {
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = options_.tls_ca_pem;
  std::shared_ptr<grpc::ChannelCredentials> creds =
      options_.disable_tls ? grpc::InsecureChannelCredentials() : grpc::SslCredentials(ssl);
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(kMaxMessageBytes);
  args.SetCompressionAlgorithm(GRPC_COMPRESS_GZIP);
  // Reconnect quickly once the receiver comes back (default max is 120 s).
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 5000);
  channel_ = grpc::CreateCustomChannel(options_.target, creds, args);
  thread_ = std::thread([this] { Run(); });
}

OtlpExporter::~OtlpExporter() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::string OtlpExporter::CheckReachable(std::chrono::milliseconds timeout) {
  if (channel_->WaitForConnected(std::chrono::system_clock::now() + timeout)) return {};
  std::string msg = "collector " + options_.target + " is not reachable yet";
  msg += options_.disable_tls
             ? " (plain text). Is the receiver running (kiln listens on 11000)? "
             : " (TLS). Is the receiver running, and does it speak TLS? For a local kiln add -disable-tls. ";
  msg += "Sampling continues; data is kept (up to " + std::to_string(options_.max_unsent_bytes >> 20) +
         " MiB) and sent when it answers.";
  return msg;
}

void OtlpExporter::Enqueue(ExportRequest request, std::size_t samples) {
  Pending p;
  request.SerializeToString(&p.encoded);
  p.bytes = p.encoded.size();
  p.samples = samples;
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(p));
    stats_.queued_bytes += queue_.back().bytes;
    // Drop the oldest waiting request while over budget (queued_bytes also
    // counts the one in flight), never the newest.
    while (stats_.queued_bytes > options_.max_unsent_bytes && queue_.size() > 1) {
      stats_.queued_bytes -= queue_.front().bytes;
      stats_.dropped_requests++;
      stats_.dropped_samples += queue_.front().samples;
      queue_.pop_front();
    }
    stats_.queued_requests = queue_.size() + (sending_ ? 1 : 0);
  }
  cv_.notify_all();
}

bool OtlpExporter::Flush(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [this] { return queue_.empty() && !sending_; });
}

ExporterStats OtlpExporter::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void OtlpExporter::Run() {
  auto stub = collector::ProfilesService::NewStub(channel_);
  auto backoff = std::chrono::duration_cast<std::chrono::milliseconds>(kMinBackoff);
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    // Take the head out while sending so Enqueue may drop around it.
    sending_ = true;
    Pending head = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();

    ExportRequest request;
    request.ParseFromString(head.encoded);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + options_.rpc_timeout);
    ctx.set_compression_algorithm(GRPC_COMPRESS_GZIP);
    for (const auto& [key, value] : options_.headers) ctx.AddMetadata(key, value);
    collector::ExportProfilesServiceResponse response;
    grpc::Status status = stub->Export(&ctx, request, &response);

    lock.lock();
    sending_ = false;
    bool was_connected = stats_.connected;
    if (status.ok()) {
      stats_.connected = true;
      if (!was_connected && !last_error_.empty())
        std::fprintf(stderr, "kiln-agent: collector %s reachable again, sending\n", options_.target.c_str());
      last_error_.clear();
      stats_.sent_requests++;
      stats_.sent_samples += head.samples;
      stats_.sent_bytes += head.bytes;
      if (response.has_partial_success() && response.partial_success().rejected_profiles() > 0) {
        stats_.rejected_profiles +=
            static_cast<std::uint64_t>(response.partial_success().rejected_profiles());
        std::fprintf(stderr, "kiln-agent: collector rejected %lld profile(s): %s\n",
                     static_cast<long long>(response.partial_success().rejected_profiles()),
                     response.partial_success().error_message().c_str());
      }
      stats_.queued_bytes -= head.bytes;
      stats_.queued_requests = queue_.size();
      backoff = std::chrono::duration_cast<std::chrono::milliseconds>(kMinBackoff);
      cv_.notify_all();
      continue;
    }

    stats_.connected = status.error_code() != grpc::StatusCode::UNAVAILABLE;
    std::string error = "Export to " + options_.target + " failed: " + StatusCodeName(status.error_code()) +
                        ": " + status.error_message();
    bool give_up = !Retryable(status.error_code());
    if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
        ++head.exhausted_attempts >= kMaxExhaustedAttempts)
      give_up = true;
    if (error != last_error_ || options_.verbose) {
      std::fprintf(stderr, "kiln-agent: %s%s\n", error.c_str(),
                   give_up ? " (dropping this batch)" : "; will retry with backoff, keeping the data");
      last_error_ = error;
    }
    if (give_up) {
      stats_.dropped_requests++;
      stats_.dropped_samples += head.samples;
      stats_.queued_bytes -= head.bytes;
      stats_.queued_requests = queue_.size();
      cv_.notify_all();
      continue;
    }
    stats_.retries++;
    queue_.push_front(std::move(head));
    cv_.wait_for(lock, backoff, [this] { return stopping_; });
    backoff = std::min(backoff * 2, std::chrono::duration_cast<std::chrono::milliseconds>(kMaxBackoff));
  }
}

}  // namespace kiln::agent
