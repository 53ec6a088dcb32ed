#include "ingest/forward/forwarder.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <future>
#include <iterator>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "storage/model/data_loss.h"
#include "storage/model/sample_type.h"

namespace kiln::ingest {

namespace {

constexpr char kExportMethod[] = "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export";
// The largest request a receiver takes by default (kiln's own limit).
constexpr int kMaxMessageBytes = 64 << 20;
constexpr auto kDeadline = std::chrono::seconds(30);
constexpr auto kMaxBackoff = std::chrono::seconds(30);

std::string ReadWholeFile(const std::string& path, bool* ok) {
  std::ifstream in(path, std::ios::binary);
  *ok = static_cast<bool>(in);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

absl::StatusOr<std::vector<ForwardTarget>> ParseForwardTargets(const std::vector<std::string>& targets, bool tls,
                                                               const std::string& ca_file,
                                                               const std::vector<std::string>& headers) {
  std::vector<std::pair<std::string, std::string>> parsed_headers;
  for (const std::string& h : headers) {
    const size_t eq = h.find('=');
    if (eq == std::string::npos || eq == 0) {
      return absl::InvalidArgumentError(absl::StrCat("--forward-header \"", h, "\": want KEY=VALUE"));
    }
    // gRPC metadata keys are lowercase.
    parsed_headers.push_back({absl::AsciiStrToLower(h.substr(0, eq)), h.substr(eq + 1)});
  }
  if (!ca_file.empty()) {
    bool ok = false;
    (void)ReadWholeFile(ca_file, &ok);
    if (!ok) return absl::InvalidArgumentError(absl::StrCat("--forward-ca-file ", ca_file, ": cannot read it"));
  }
  std::vector<ForwardTarget> out;
  for (const std::string& t : targets) {
    const size_t colon = t.rfind(':');
    if (t.empty() || colon == std::string::npos || colon == 0 || colon + 1 == t.size() ||
        t.find_first_of(" \t/") != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("--forward \"", t, "\": want HOST:PORT"));
    }
    for (const ForwardTarget& seen : out) {
      if (seen.target == t) return absl::InvalidArgumentError(absl::StrCat("--forward ", t, " is given twice"));
    }
    out.push_back({t, tls || !ca_file.empty(), ca_file, parsed_headers});
  }
  return out;
}

std::vector<std::string> ForwardQueueNames(const std::vector<ForwardTarget>& targets) {
  std::vector<std::string> names;
  for (const ForwardTarget& t : targets) names.push_back(t.target);
  return names;
}

struct Forwarder::Destination {
  ForwardTarget target;
  std::shared_ptr<grpc::Channel> channel;
  std::thread thread;
  mutable std::mutex mutex;  // guards the fields below
  bool connected = false;
  uint64_t delivered = 0;
  uint64_t rejected = 0;
  std::string last_error;
};

Forwarder::Forwarder(storage::Store* store, std::vector<ForwardTarget> targets) : store_(store) {
  for (ForwardTarget& t : targets) {
    auto d = std::make_unique<Destination>();
    std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
    if (t.tls) {
      grpc::SslCredentialsOptions ssl;
      bool ok = false;
      if (!t.ca_file.empty()) ssl.pem_root_certs = ReadWholeFile(t.ca_file, &ok);
      creds = grpc::SslCredentials(ssl);
    }
    grpc::ChannelArguments args;
    args.SetMaxSendMessageSize(kMaxMessageBytes);
    // Back soon after a destination returns (gRPC's default waits up to
    // 120 s between attempts).
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 5000);
    d->channel = grpc::CreateCustomChannel(t.target, creds, args);
    d->target = std::move(t);
    destinations_.push_back(std::move(d));
  }
  for (auto& d : destinations_) d->thread = std::thread([this, p = d.get()] { Run(p); });
}

Forwarder::~Forwarder() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& d : destinations_) d->thread.join();
}

void Forwarder::Notify() {
  {
    std::lock_guard lock(mutex_);
    ++generation_;
  }
  wake_.notify_all();
}

std::string DescribeForwardStatus(const ForwardStatus& f, int64_t now_ns) {
  return absl::StrCat(
      "forwarding to ", f.target, ": ", f.connected ? "delivering" : "not connected", ", ", f.backlog.requests,
      f.backlog.requests == 1 ? " request (" : " requests (", storage::FormatBytes(f.backlog.bytes), ") owed",
      f.backlog.requests > 0 ? absl::StrCat(", oldest ", storage::FormatDuration(now_ns - f.backlog.oldest_ns)) : "",
      ", ", f.delivered, " delivered", f.rejected > 0 ? absl::StrCat(", ", f.rejected, " refused") : "",
      f.last_error.empty() ? "" : absl::StrCat(" (", f.last_error, ")"));
}

std::vector<ForwardStatus> Forwarder::Status() const {
  std::vector<ForwardStatus> out;
  const uint64_t dropped = store_->DataLossTotals()[static_cast<size_t>(storage::DataLoss::kForwardDropped)];
  for (const auto& d : destinations_) {
    ForwardStatus s;
    s.target = d->target.target;
    s.backlog = store_->ForwardBacklogOf(d->target.target);
    s.dropped = dropped;
    std::lock_guard lock(d->mutex);
    s.connected = d->connected;
    s.delivered = d->delivered;
    s.rejected = d->rejected;
    s.last_error = d->last_error;
    out.push_back(std::move(s));
  }
  return out;
}

void Forwarder::Run(Destination* d) {
  const std::string& name = d->target.target;
  grpc::GenericStub stub(d->channel);
  auto backoff = std::chrono::seconds(1);
  bool failing = false;  // logged once per streak
  int64_t failing_since_ns = 0;
  uint64_t seen_generation = 0;
  while (!stop_.load()) {
    std::vector<storage::ForwardEntry> entries = store_->PeekForward(name, 32);
    if (entries.empty()) {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, std::chrono::seconds(1), [&] { return stop_.load() || generation_ != seen_generation; });
      seen_generation = generation_;
      continue;
    }
    for (const storage::ForwardEntry& e : entries) {
      if (stop_.load()) return;
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + kDeadline);
      for (const auto& [key, value] : d->target.headers) context.AddMetadata(key, value);
      grpc::Slice slice(e.bytes);
      grpc::ByteBuffer request(&slice, 1);
      grpc::ByteBuffer response;
      std::promise<grpc::Status> done;
      stub.UnaryCall(&context, kExportMethod, grpc::StubOptions(), &request, &response,
                     [&done](grpc::Status s) { done.set_value(std::move(s)); });
      const grpc::Status status = done.get_future().get();
      if (status.ok() || status.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
        const bool rejected = !status.ok();
        (void)store_->AckForward(name, e.seq);
        {
          std::lock_guard lock(d->mutex);
          d->connected = true;
          d->last_error.clear();
          ++(rejected ? d->rejected : d->delivered);
        }
        if (rejected) {
          storage::DataLossCounts lost{};
          lost[static_cast<size_t>(storage::DataLoss::kForwardRejected)] = 1;
          (void)store_->AddDataLoss(lost);
          (void)store_->AppendLog(storage::LogLevel::kError,
                                  absl::StrCat("forwarding to ", name, ": a request was refused as invalid and is "
                                               "dropped for it (", status.error_message(), ")"));
        }
        if (failing) {
          (void)store_->AppendLog(
              storage::LogLevel::kInfo,
              absl::StrCat("forwarding to ", name, ": delivering again after ",
                           storage::FormatDuration(storage::UnixNowNs() - failing_since_ns)));
          failing = false;
        }
        backoff = std::chrono::seconds(1);
        continue;
      }
      // Down, or refusing for a reason that may pass (a token, overload):
      // the request stays owed and is tried again.
      // gRPC's codes are absl's: "UNAUTHENTICATED: ...", not "16: ...".
      const std::string error = absl::StrCat(
          absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code())), ": ", status.error_message());
      {
        std::lock_guard lock(d->mutex);
        d->connected = false;
        d->last_error = error;
      }
      if (!failing) {
        failing = true;
        failing_since_ns = storage::UnixNowNs();
        (void)store_->AppendLog(storage::LogLevel::kWarning,
                                absl::StrCat("forwarding to ", name, " failed (", error,
                                             "); requests are kept and retried"));
      }
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, backoff, [&] { return stop_.load(); });
      backoff = std::min<std::chrono::seconds>(backoff * 2, kMaxBackoff);
      break;
    }
  }
}

}  // namespace kiln::ingest
