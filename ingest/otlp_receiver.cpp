// OtlpReceiver implementation: a gRPC callback server whose Export method is
// registered raw (ByteBuffer in, ByteBuffer out) so that this file decodes
// the request itself and can say where undecodable bytes went wrong.
//
// [SECTION] Path of a request
// [SECTION] Peer statistics and the log summary
// [SECTION] Receiver
//
// [SECTION] Path of a request
//
//   gRPC poller thread                     worker thread (N of them)
//   ------------------                     -------------------------
//   Export(ctx, bytes)                     pop job
//     token wrong?    -> UNAUTHENTICATED     parse (arena)  -> INVALID_ARGUMENT
//     size > limit?   -> RESOURCE_EXHAUSTED
//     sender's rate?  -> UNAVAILABLE         (--max-sender-rate, optional)
//     in-flight over? -> UNAVAILABLE         NormalizeExportRequest
//     queue job ----------------------->     Store::Write   -> OK only after it
//   return reactor                           response (partial_success)
//                                            reactor->Finish
//
// The poller never blocks: Store::Write can take milliseconds (it waits for
// the WAL) and gRPC's callback threads must not be held that long. The
// in-flight byte budget bounds memory: requests queued or being written
// count their wire size until answered.
#include "ingest/otlp_receiver.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "google/protobuf/arena.h"
#include "google/protobuf/stubs/logging.h"
#include "ingest/inflight_budget.h"
#include "ingest/message_decompression.h"
#include "ingest/message_text.h"
#include "ingest/otlp_normalizer.h"
#include "ingest/sender_rate_limit.h"
#include "ingest/wire_diagnostics.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.grpc.pb.h"
#include "storage/disk_guard.h"
#include "storage/model/sample_type.h"

namespace kiln::ingest {

namespace {

namespace collector = opentelemetry::proto::collector::profiles::v1development;
using storage::DataLoss;
using storage::LogLevel;

// How often the info-level traffic summary is written to the store's log.
constexpr auto kSummaryInterval = std::chrono::seconds(10);
// Peers not heard from for this long leave ReceiverStats.
constexpr int64_t kPeerWindowNs = 60'000'000'000;
// Per-peer rate window.
constexpr int kRateSeconds = 10;
// Time Stop() gives in-flight requests before gRPC cancels them.
constexpr auto kShutdownGrace = std::chrono::seconds(5);
// Long rejection reasons are cut in the log (the full text went to the
// client).
constexpr size_t kMaxLogMessage = 2000;

std::string Truncate(std::string s) {
  if (s.size() > kMaxLogMessage) {
    s.resize(kMaxLogMessage);
    s += "...";
  }
  return s;
}

// ============================================================================
// [SECTION] Peer statistics and the log summary
// ============================================================================

// Counts per whole second over the last kRateSeconds, a ring indexed by
// (second % kRateSeconds).
class RateRing {
 public:
  void Add(int64_t second, uint64_t n) {
    const int slot = static_cast<int>(second % kRateSeconds);
    if (second_[slot] != second) {
      second_[slot] = second;
      count_[slot] = 0;
    }
    count_[slot] += n;
  }
  uint64_t Recent(int64_t second) const {
    uint64_t recent = 0;
    for (int i = 0; i < kRateSeconds; ++i) {
      if (second - second_[i] < kRateSeconds) recent += count_[i];
    }
    return recent;
  }

 private:
  int64_t second_[kRateSeconds] = {};
  uint64_t count_[kRateSeconds] = {};
};

// A peer's sample types and host names are bounded: what a stranger sends
// cannot grow them.
constexpr size_t kMaxKindsPerPeer = 8;
constexpr size_t kMaxHostsPerPeer = 4;

struct PeerState {
  int64_t first_seen_ns = 0;
  int64_t last_seen_ns = 0;
  uint64_t requests = 0;
  uint64_t samples = 0;
  RateRing rate;
  std::map<std::string, RateRing> kind_rates;  // by SampleTypeLabel
  std::vector<std::string> hosts;              // host.name values, first seen first
  storage::DataLossCounts losses{};
};

// What one accepted request held, per sample type and host name: counted
// before taking the stats lock.
struct RequestFacts {
  std::map<std::string, uint64_t> samples_by_kind;
  std::vector<std::string> hosts;
};

RequestFacts FactsOf(const storage::ProfileBatch& batch) {
  RequestFacts facts;
  const storage::ProfileDictionary& d = batch.dict;
  std::vector<uint64_t> by_type(d.sample_types.size(), 0);
  std::vector<uint8_t> set_seen(d.AttributeSetCount(), 0);
  for (const storage::Sample& s : batch.samples) {
    if (s.sample_type < by_type.size()) ++by_type[s.sample_type];
    if (s.attribute_set >= set_seen.size() || std::exchange(set_seen[s.attribute_set], 1)) continue;
    const std::string_view host = d.AttributeValue(s.attribute_set, storage::attr::kHostName);
    if (!host.empty() && facts.hosts.size() < kMaxHostsPerPeer &&
        std::find(facts.hosts.begin(), facts.hosts.end(), host) == facts.hosts.end()) {
      facts.hosts.emplace_back(host);
    }
  }
  for (size_t t = 0; t < by_type.size(); ++t) {
    if (by_type[t] > 0) facts.samples_by_kind[storage::SampleTypeLabel(d.sample_types[t].type)] += by_type[t];
  }
  return facts;
}

// Counters since the last summary line.
// How many distinct sending hosts are remembered for "first request from
// HOST" log lines; past this a new host is not logged (the map stays small
// whatever a network sends).
constexpr size_t kMaxRememberedHosts = 4096;

struct SummaryWindow {
  uint64_t requests = 0;
  uint64_t failed = 0;
  uint64_t samples = 0;
  uint64_t profiles = 0;
  uint64_t rejected_profiles = 0;
  std::map<std::string, uint64_t> peers;  // peer -> requests
};

// ============================================================================
// [SECTION] Receiver
// ============================================================================

class Receiver;

class ExportService final
    : public collector::ProfilesService::WithRawCallbackMethod_Export<collector::ProfilesService::Service> {
 public:
  explicit ExportService(Receiver* owner) : owner_(owner) {}
  grpc::ServerUnaryReactor* Export(grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
                                   grpc::ByteBuffer* response) override;

 private:
  Receiver* owner_;
};

// Charges `bytes` to the in-flight budget for the guard's lifetime.
class InflightGuard {
 public:
  InflightGuard(InflightBudget* budget, int64_t bytes) : budget_(budget), bytes_(bytes) { budget_->Charge(bytes_); }
  ~InflightGuard() { budget_->Discharge(bytes_); }
  InflightGuard(const InflightGuard&) = delete;
  InflightGuard& operator=(const InflightGuard&) = delete;

 private:
  InflightBudget* budget_;
  int64_t bytes_;
};

struct Job {
  grpc::CallbackServerContext* context;
  grpc::ServerUnaryReactor* reactor;
  const grpc::ByteBuffer* request;
  grpc::ByteBuffer* response;
  std::string peer;
  std::string host;  // PeerHost(peer): whose share of the in-flight budget it holds
  size_t bytes;
  bool new_host;  // logged by the worker: a log append waits for the disk
};

class Receiver final : public OtlpReceiver {
 public:
  Receiver(storage::Store* store, const ReceiverOptions& options)
      : store_(store), options_(options), service_(this) {
    if (options.max_sender_bytes_per_second > 0) {
      rate_limit_ = std::make_unique<SenderRateLimit>(options.max_sender_bytes_per_second);
    }
  }
  ~Receiver() override { Stop(); }

  absl::Status Start();
  void Stop() override;
  int port() const override { return port_; }
  ReceiverStats stats() const override;

  grpc::ServerUnaryReactor* Accept(grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
                                   grpc::ByteBuffer* response);

 private:
  void WorkerLoop();
  void SummaryLoop();
  // Decodes, normalizes and stores one request; fills `response` on OK.
  // Log lines are returned in `log` and written after the answer is sent:
  // a log append waits for the disk and the client need not.
  struct PendingLog {
    LogLevel level = LogLevel::kInfo;
    std::string message;  // "" = nothing to log
  };
  grpc::Status Process(const Job& job, grpc::ByteBuffer* response, PendingLog* log);
  // Counts the request for its peer; true for the first request ever from
  // the peer's host (kMaxRememberedHosts hosts at most).
  bool NotePeer(const std::string& peer);
  // Refuses the call when a token is required and not sent; logs the
  // first refusal per host.
  bool Authenticated(grpc::CallbackServerContext* context, const std::string& peer,
                     grpc::ServerUnaryReactor* reactor);
  // `loss`: why a failed request was refused (storage/model/data_loss.h);
  // `facts`: an accepted request's samples by kind and its host names.
  void Count(const std::string& peer, bool failed, uint64_t samples, int64_t accepted, int64_t rejected,
             std::optional<DataLoss> loss = std::nullopt, const RequestFacts* facts = nullptr);
  void CountLoss(const std::string& peer, DataLoss reason, uint64_t n);
  void CountLossLocked(const std::string& peer, DataLoss reason, uint64_t n);
  // Adds the counts since the last call to the store's totals.
  void FlushLosses();
  void Log(LogLevel level, std::string message) {
    message = Truncate(std::move(message));
    if (options_.on_log) options_.on_log(level, message);
    // The log is diagnostics: a failing log write must not fail ingest.
    (void)store_->AppendLog(level, message);
  }
  void FlushSummary();
  // The guard closed a connection: counted, and logged the first time per
  // reason, then summed up at most once a minute.
  void NoteConnectionClosed(ConnectionClose reason, const std::string& host);
  // The guard's closes since the last such line, at most once a minute.
  void FlushCloseSummary();

  storage::Store* const store_;
  const ReceiverOptions options_;
  std::unique_ptr<SenderRateLimit> rate_limit_;  // null without --max-sender-rate
  ExportService service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::string bound_address_;

  std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::deque<Job> queue_;
  bool stopping_ = false;  // guarded by queue_mu_
  std::vector<std::thread> workers_;
  InflightBudget inflight_{options_.max_inflight_bytes};
  std::atomic<bool> store_failing_{false};  // the last store write failed
  std::atomic<uint64_t> bytes_received_{0};  // request bytes from senders that may send

  std::mutex summary_mu_;
  std::condition_variable summary_cv_;
  bool summary_stop_ = false;  // guarded by summary_mu_
  std::thread summary_thread_;

  mutable std::mutex stats_mu_;
  ReceiverStats totals_;  // peers unused; built in stats()
  std::map<std::string, PeerState> peers_;
  SummaryWindow window_;
  storage::DataLossCounts unflushed_losses_{};  // not yet in the store's totals
  std::set<std::string> hosts_seen_;     // PeerHost of every sender so far
  std::set<std::string> hosts_refused_;  // hosts whose refusal was logged
  std::set<std::string> hosts_token_in_clear_;  // hosts that sent the token without TLS
  // Connections the guard closed since the last summary, by reason, with
  // the hosts (a few); reasons already logged once.
  ConnectionCloseCounts closes_window_{};
  std::set<std::string> closes_window_hosts_;
  std::array<bool, kConnectionCloseCount> close_reason_logged_{};
  int64_t last_close_summary_ns_ = 0;
  std::unique_ptr<ConnectionGuard> guard_;  // made before the server, watching once it listens

  std::once_flag stop_once_;
};

grpc::ServerUnaryReactor* ExportService::Export(grpc::CallbackServerContext* context,
                                                const grpc::ByteBuffer* request, grpc::ByteBuffer* response) {
  return owner_->Accept(context, request, response);
}

absl::Status Receiver::Start() {
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  const ReceiverSecurity& security = options_.security;
  if (security.tls() || !security.tls_key_file.empty() || !security.tls_client_ca_file.empty()) {
    if (security.tls_cert_file.empty() || security.tls_key_file.empty()) {
      return absl::InvalidArgumentError("TLS needs both a certificate (--tls-cert) and its key (--tls-key)");
    }
    absl::StatusOr<std::string> cert = ReadPemFile(security.tls_cert_file, "TLS certificate");
    if (!cert.ok()) return cert.status();
    if (absl::Status secret = CheckSecretFile(security.tls_key_file, "TLS key"); !secret.ok()) return secret;
    absl::StatusOr<std::string> key = ReadPemFile(security.tls_key_file, "TLS key");
    if (!key.ok()) return key.status();
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({*key, *cert});
    if (!security.tls_client_ca_file.empty()) {
      absl::StatusOr<std::string> ca = ReadPemFile(security.tls_client_ca_file, "TLS client CA");
      if (!ca.ok()) return ca.status();
      ssl.pem_root_certs = *ca;
      ssl.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
    }
    credentials = grpc::SslServerCredentials(ssl);
  }
  // Before the server: Accept() tells the guard of every whole request.
  guard_ = ConnectionGuard::Create(options_.connections, [this](ConnectionClose reason, const std::string& host) {
    NoteConnectionClosed(reason, host);
  });
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options_.listen_address, credentials, &port_);
  // gRPC checks this on the bytes as received. It would also check the
  // decompressed size, but only after inflating all of it (a gzip bomb
  // could take all memory), so decompression is ours: InflateMessage stops
  // at the limit.
  builder.SetMaxReceiveMessageSize(options_.max_message_bytes);
  builder.AddChannelArgument(GRPC_ARG_ENABLE_PER_MESSAGE_DECOMPRESSION, 0);
  // gRPC sets SO_REUSEPORT by default, which would let a second kiln bind
  // the same port silently and steal half the connections.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // Agents keep one connection open for hours and may send keepalive
  // pings between exports; gRPC's default (at most one ping per 5 minutes,
  // else GOAWAY "too_many_pings") would drop them for being idle-chatty.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10'000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  // What strangers' connections may hold, gRPC's part (the guard below
  // does the rest): the HTTP/2 preface within 10 s, 16 requests at once per
  // connection (the Collector's exporter sends up to 10), a connection
  // recycled after an hour (agents reconnect by themselves; this bounds
  // what a trickle can buffer), and a memory quota for what is being read.
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, 10'000);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, 16);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS, 3'600'000);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS, 300'000);
  grpc::ResourceQuota quota("kiln OTLP receiver");
  quota.Resize(options_.grpc_memory_bytes);
  builder.SetResourceQuota(quota);
  builder.RegisterService(&service_);
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port_ == 0) {
    server_.reset();
    return absl::UnavailableError(
        Cat("cannot listen on ", options_.listen_address, " for OTLP (address in use, ",
            "not an address of this machine",
            security.tls() ? ", or a TLS certificate and key that do not match)" : ")"));
  }
  bound_address_ = options_.listen_address;
  size_t colon = bound_address_.rfind(':');
  if (colon != std::string::npos) bound_address_ = Cat(bound_address_.substr(0, colon + 1), port_);
  totals_.listen_address = bound_address_;
  totals_.token_required = !security.auth_token.empty();
  totals_.tls = security.tls();
  totals_.client_certificates = !security.tls_client_ca_file.empty();

  guard_->Watch(port_);
  int workers = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 2u, 8u));
  for (int i = 0; i < workers; ++i) workers_.emplace_back([this] { WorkerLoop(); });
  summary_thread_ = std::thread([this] { SummaryLoop(); });
  Log(LogLevel::kInfo, Cat("OTLP receiver listening on ", bound_address_, security.tls() ? " with TLS" : "",
                           security.tls_client_ca_file.empty() ? "" : " (client certificates required)",
                           security.auth_token.empty() ? ", no token required" : ", token required"));
  return absl::OkStatus();
}

void Receiver::Stop() {
  std::call_once(stop_once_, [this] {
    if (server_ != nullptr) {
      // Blocks until every accepted call is answered; the workers keep
      // running meanwhile. After the grace period gRPC cancels what is
      // left (workers still Finish those calls).
      server_->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
    }
    {
      std::lock_guard lock(queue_mu_);
      stopping_ = true;
    }
    queue_cv_.notify_all();
    for (std::thread& t : workers_) t.join();
    workers_.clear();
    if (server_ != nullptr) server_->Wait();
    {
      std::lock_guard lock(summary_mu_);
      summary_stop_ = true;
    }
    summary_cv_.notify_all();
    if (summary_thread_.joinable()) summary_thread_.join();
    if (server_ != nullptr) {
      FlushSummary();
      Log(LogLevel::kInfo, Cat("OTLP receiver on ", bound_address_, " stopped"));
    }
    server_.reset();
  });
}

grpc::ServerUnaryReactor* Receiver::Accept(grpc::CallbackServerContext* context,
                                           const grpc::ByteBuffer* request, grpc::ByteBuffer* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  std::string peer = context->peer();
  guard_->NoteAnswered(peer);
  // Listed (with its refusals) whether or not it may send: a misconfigured
  // agent shows up as a sender whose requests are refused.
  const bool new_host = NotePeer(peer);
  if (!Authenticated(context, peer, reactor)) return reactor;
  std::string host = PeerHost(peer);
  const size_t bytes = request->Length();
  bytes_received_.fetch_add(bytes, std::memory_order_relaxed);
  if (bytes > static_cast<size_t>(options_.max_message_bytes)) {
    std::string message =
        Cat("request of ", bytes, " bytes exceeds the limit of ", options_.max_message_bytes, " bytes");
    Count(peer, true, 0, 0, 0, DataLoss::kRequestTooLarge);
    Log(LogLevel::kWarning, Cat("rejected request from ", peer, ": ", message));
    reactor->Finish(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, message));
    return reactor;
  }
  if (rate_limit_ && !rate_limit_->Admit(host, bytes, storage::UnixNowNs())) {
    // Counted per sender and shown in Data quality, not logged per request.
    Count(peer, true, 0, 0, 0, DataLoss::kRateLimited);
    reactor->Finish(grpc::Status(
        grpc::StatusCode::UNAVAILABLE,
        Cat("this sender (", host, ") is over kiln's limit of ", rate_limit_->bytes_per_second(),
            " request bytes per second (--max-sender-rate); retry later")));
    return reactor;
  }
  // The in-flight budget, shared out per host (InflightBudget).
  if (const InflightBudget::Answer admitted = inflight_.Admit(host, static_cast<int64_t>(bytes));
      admitted.verdict != InflightBudget::Verdict::kAdmitted) {
    Count(peer, true, 0, 0, 0, DataLoss::kOverloaded);
    reactor->Finish(grpc::Status(
        grpc::StatusCode::UNAVAILABLE,
        admitted.verdict == InflightBudget::Verdict::kWriterBehind
            ? Cat("kiln's writer is behind (", admitted.held, " bytes of requests in flight, limit ",
                  admitted.limit, "); retry later")
            : Cat("this sender (", host, ") has ", admitted.held,
                  " bytes of requests in flight, its share of kiln's in-flight budget is ", admitted.limit,
                  " while other senders have theirs; retry later")));
    return reactor;
  }
  {
    std::lock_guard lock(queue_mu_);
    queue_.push_back(Job{context, reactor, request, response, std::move(peer), std::move(host), bytes, new_host});
  }
  queue_cv_.notify_one();
  return reactor;
}

void Receiver::WorkerLoop() {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(queue_mu_);
      queue_cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    grpc::Status status;
    PendingLog log;
    if (job.context->IsCancelled()) {
      status = grpc::Status(grpc::StatusCode::CANCELLED, "cancelled before it was processed");
    } else {
      status = Process(job, job.response, &log);
    }
    inflight_.Release(job.host, static_cast<int64_t>(job.bytes));
    job.reactor->Finish(status);  // `job`'s pointers are invalid from here on
    if (job.new_host) {
      Log(LogLevel::kInfo,
          IsLoopbackPeer(job.peer)
              ? Cat("first OTLP request from this machine (", job.peer, ")")
              : Cat("first OTLP request from another host, ", job.host, " (", job.peer, ")",
                    options_.security.auth_token.empty() ? "; no token is required" : ""));
    }
    if (!log.message.empty()) Log(log.level, std::move(log.message));
  }
}

grpc::Status Receiver::Process(const Job& job, grpc::ByteBuffer* response, PendingLog* log) {
  grpc::Slice slice;
  if (!job.request->TrySingleSlice(&slice).ok() && !job.request->DumpToSingleSlice(&slice).ok()) {
    Count(job.peer, true, 0, 0, 0, DataLoss::kUndecodable);
    return grpc::Status(grpc::StatusCode::INTERNAL, "could not read the request bytes");
  }
  std::string_view bytes(reinterpret_cast<const char*>(slice.begin()), slice.size());
  const std::string_view received = bytes;  // what is forwarded: the request as it came
  std::string inflated;
  const std::string_view compression = SniffCompression(bytes);
  if (!compression.empty()) {
    absl::StatusOr<std::string> out =
        InflateMessage(bytes, compression, static_cast<size_t>(options_.max_message_bytes));
    const bool raw_after_all =
        !out.ok() && compression == "deflate" && out.status().code() == absl::StatusCode::kInvalidArgument;
    if (raw_after_all) {
      // Not deflate data: decode the bytes as they are (see SniffCompression).
    } else if (out.ok()) {
      inflated = std::move(*out);
      bytes = inflated;
    } else {
      Count(job.peer, true, 0, 0, 0,
            out.status().code() == absl::StatusCode::kResourceExhausted ? DataLoss::kRequestTooLarge
                                                                        : DataLoss::kUndecodable);
      std::string message(out.status().message());
      *log = {LogLevel::kWarning, Cat("rejected request from ", job.peer, ": ", message)};
      return grpc::Status(out.status().code() == absl::StatusCode::kResourceExhausted
                              ? grpc::StatusCode::RESOURCE_EXHAUSTED
                              : grpc::StatusCode::INVALID_ARGUMENT,
                          message);
    }
  }
  // The decompressed copy counts toward the in-flight budget too.
  InflightGuard inflight(&inflight_, static_cast<int64_t>(inflated.size()));

  google::protobuf::ArenaOptions arena_options;
  arena_options.start_block_size = std::clamp<size_t>(bytes.size() * 2, 4096, 64 << 20);
  arena_options.max_block_size = 64 << 20;
  google::protobuf::Arena arena(arena_options);
  auto* request = google::protobuf::Arena::CreateMessage<collector::ExportProfilesServiceRequest>(&arena);
  bool parsed;
  {
    // Bad input is answered to the client and logged in the store; keep
    // protobuf from also printing each bad string to stderr.
    google::protobuf::LogSilencer quiet;
    parsed = request->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
  }
  if (!parsed) {
    std::string where = LocateDecodeError(bytes, request->GetDescriptor());
    std::string message = Cat("cannot decode ExportProfilesServiceRequest (", bytes.size(),
                              " bytes, OTLP v1.10 layout)", where.empty() ? std::string() : Cat(": ", where));
    Count(job.peer, true, 0, 0, 0, DataLoss::kUndecodable);
    *log = {LogLevel::kWarning, Cat("rejected request from ", job.peer, ": ", message)};
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, message);
  }

  // Who sent it, so the symbolizer reads this host's /proc only for data
  // that came from this host (app/symbol_service.cpp).
  NormalizeResult result =
      NormalizeExportRequest(*request, {{std::string(storage::attr::kKilnSender), job.host}});
  if (options_.on_batch && !result.batch.samples.empty()) options_.on_batch(job.peer, result.batch);
  // An accepted request is forwarded even when it holds no samples: the
  // destination gets what the sender sent.
  const bool forward = !options_.forward_destinations.empty() && options_.store_samples &&
                       (result.accepted_profiles > 0 || !result.batch.samples.empty());
  if ((!result.batch.samples.empty() && options_.store_samples) || forward) {
    absl::Status written = forward ? store_->WriteAndForward(result.batch, received, options_.forward_destinations)
                                   : store_->Write(result.batch);
    if (!written.ok()) {
      Count(job.peer, true, 0, 0, 0,
            storage::IsDiskReserveRefusal(written) ? DataLoss::kDiskReserve : DataLoss::kStoreWriteFailed);
      // Once per streak of failures: a full disk refuses every agent's
      // every request until space returns (the store logs its own state).
      if (!store_failing_.exchange(true)) {
        *log = {LogLevel::kError,
                Cat("could not store a request from ", job.peer, ": ", std::string(written.message()),
                    " (further failures are counted, not logged, until storing works again)")};
      }
      // The data is not durable, so the agent must not drop it: a
      // retryable code unless the batch itself is wrong (a bug here).
      auto code = written.code() == absl::StatusCode::kInvalidArgument ? grpc::StatusCode::INTERNAL
                                                                       : grpc::StatusCode::UNAVAILABLE;
      return grpc::Status(code, Cat("storing failed: ", std::string(written.message())));
    }
  }
  if (!result.batch.samples.empty() || forward) store_failing_.store(false);
  if (forward && options_.on_forwarded) options_.on_forwarded();
  const RequestFacts facts = FactsOf(result.batch);
  Count(job.peer, false, result.batch.samples.size(), result.accepted_profiles, result.rejected_profiles,
        std::nullopt, &facts);
  CountLoss(job.peer, DataLoss::kProfileRejected, static_cast<uint64_t>(result.rejected_profiles));
  CountLoss(job.peer, DataLoss::kStringTruncated, result.strings_truncated);
  collector::ExportProfilesServiceResponse answer;
  if (result.rejected_profiles > 0) {
    answer.mutable_partial_success()->set_rejected_profiles(result.rejected_profiles);
    answer.mutable_partial_success()->set_error_message(result.error_message);
    *log = {LogLevel::kWarning, Cat("rejected ", result.rejected_profiles, " of ",
                                    result.rejected_profiles + result.accepted_profiles, " profiles from ",
                                    job.peer, ": ", result.error_message)};
  }
  std::string serialized = answer.SerializeAsString();
  grpc::Slice out(serialized);
  *response = grpc::ByteBuffer(&out, 1);
  return grpc::Status::OK;
}

bool Receiver::NotePeer(const std::string& peer) {
  std::lock_guard lock(stats_mu_);
  const int64_t now = storage::UnixNowNs();
  auto [it, inserted] = peers_.try_emplace(peer);
  if (inserted) it->second.first_seen_ns = now;
  it->second.last_seen_ns = now;
  ++it->second.requests;
  if (hosts_seen_.size() >= kMaxRememberedHosts) return false;
  return hosts_seen_.insert(PeerHost(peer)).second;
}

bool Receiver::Authenticated(grpc::CallbackServerContext* context, const std::string& peer,
                             grpc::ServerUnaryReactor* reactor) {
  const std::string& token = options_.security.auth_token;
  if (token.empty()) return true;
  const auto& metadata = context->client_metadata();
  auto it = metadata.find("authorization");
  std::string_view header;
  if (it != metadata.end()) header = std::string_view(it->second.data(), it->second.size());
  const TokenCheck check = CheckBearerToken(it != metadata.end() ? &header : nullptr, token);
  if (check == TokenCheck::kOk) {
    // Accepted, but a token sent in clear text over a network can be read
    // by anyone on the path: said once per host, on stderr too (the Log's
    // warnings are echoed), and counted for the status line.
    if (!options_.security.tls() && !IsLoopbackPeer(peer)) {
      bool first = false;
      {
        std::lock_guard lock(stats_mu_);
        if (hosts_token_in_clear_.size() < kMaxRememberedHosts) {
          first = hosts_token_in_clear_.insert(PeerHost(peer)).second;
          totals_.token_in_clear_hosts = hosts_token_in_clear_.size();
        }
      }
      if (first) {
        Log(LogLevel::kWarning,
            Cat("the token from ", PeerHost(peer), " crossed the network in clear text (no TLS): anyone on ",
                "the path can read it and send as that agent; start kiln with --tls-cert and --tls-key, or ",
                "reach it through ssh -R"));
      }
    }
    return true;
  }
  const std::string message = UnauthenticatedMessage(check);
  bool log = false;
  {
    std::lock_guard lock(stats_mu_);
    ++totals_.requests;
    ++totals_.requests_failed;
    ++totals_.requests_unauthenticated;
    CountLossLocked(peer, DataLoss::kUnauthenticated, 1);
    ++window_.requests;
    ++window_.failed;
    if (hosts_refused_.size() < kMaxRememberedHosts) log = hosts_refused_.insert(PeerHost(peer)).second;
  }
  // Once per host: a misconfigured agent retries every few seconds.
  if (log) Log(LogLevel::kWarning, Cat("refused OTLP requests from ", peer, ": ", message));
  reactor->Finish(grpc::Status(grpc::StatusCode::UNAUTHENTICATED, message));
  return false;
}

void Receiver::CountLoss(const std::string& peer, DataLoss reason, uint64_t n) {
  if (n == 0) return;
  std::lock_guard lock(stats_mu_);
  CountLossLocked(peer, reason, n);
}

void Receiver::CountLossLocked(const std::string& peer, DataLoss reason, uint64_t n) {
  const size_t i = static_cast<size_t>(reason);
  totals_.losses[i] += n;
  unflushed_losses_[i] += n;
  if (auto it = peers_.find(peer); it != peers_.end()) it->second.losses[i] += n;
}

void Receiver::FlushLosses() {
  storage::DataLossCounts delta{};
  {
    std::lock_guard lock(stats_mu_);
    std::swap(delta, unflushed_losses_);
  }
  (void)store_->AddDataLoss(delta);
}

void Receiver::Count(const std::string& peer, bool failed, uint64_t samples, int64_t accepted,
                     int64_t rejected, std::optional<DataLoss> loss, const RequestFacts* facts) {
  std::lock_guard lock(stats_mu_);
  if (loss) CountLossLocked(peer, *loss, 1);
  ++totals_.requests;
  if (failed) ++totals_.requests_failed;
  totals_.profiles_accepted += static_cast<uint64_t>(accepted);
  totals_.profiles_rejected += static_cast<uint64_t>(rejected);
  totals_.samples_accepted += samples;
  ++window_.requests;
  if (failed) ++window_.failed;
  window_.samples += samples;
  window_.profiles += static_cast<uint64_t>(accepted + rejected);
  window_.rejected_profiles += static_cast<uint64_t>(rejected);
  ++window_.peers[peer];
  auto it = peers_.find(peer);
  if (it == peers_.end()) return;
  PeerState& p = it->second;
  p.samples += samples;
  const int64_t second = storage::UnixNowNs() / 1'000'000'000;
  p.rate.Add(second, samples);
  if (facts == nullptr) return;
  for (const auto& [kind, n] : facts->samples_by_kind) {
    auto k = p.kind_rates.find(kind);
    if (k == p.kind_rates.end()) {
      if (p.kind_rates.size() >= kMaxKindsPerPeer) continue;  // still in the total
      k = p.kind_rates.try_emplace(kind).first;
    }
    k->second.Add(second, n);
  }
  for (const std::string& host : facts->hosts) {
    if (p.hosts.size() < kMaxHostsPerPeer && std::find(p.hosts.begin(), p.hosts.end(), host) == p.hosts.end()) {
      p.hosts.push_back(host);
    }
  }
}

ReceiverStats Receiver::stats() const {
  std::lock_guard lock(stats_mu_);
  ReceiverStats out = totals_;
  out.bytes_received = bytes_received_.load(std::memory_order_relaxed);
  if (guard_) out.connections = guard_->stats();
  const int64_t now = storage::UnixNowNs();
  const int64_t second = now / 1'000'000'000;
  for (const auto& [peer, p] : peers_) {
    if (now - p.last_seen_ns > kPeerWindowNs) continue;
    PeerStats s;
    s.peer = peer;
    s.address = PeerHost(peer);
    s.last_seen_ns = p.last_seen_ns;
    s.requests = p.requests;
    s.samples = p.samples;
    s.losses = p.losses;
    for (const std::string& h : p.hosts) s.hosts += (s.hosts.empty() ? "" : ", ") + h;
    // A peer seen for 2 s has 2 s of history, not 10.
    const double span = std::clamp<double>((now - p.first_seen_ns) / 1e9, 1.0, kRateSeconds);
    s.samples_per_second = static_cast<double>(p.rate.Recent(second)) / span;
    for (const auto& [kind, ring] : p.kind_rates) {
      s.kinds.push_back({kind, static_cast<double>(ring.Recent(second)) / span});
    }
    std::stable_sort(s.kinds.begin(), s.kinds.end(), [](const PeerStats::KindRate& a, const PeerStats::KindRate& b) {
      return a.per_second > b.per_second;
    });
    out.peers.push_back(std::move(s));
  }
  std::sort(out.peers.begin(), out.peers.end(),
            [](const PeerStats& a, const PeerStats& b) { return a.last_seen_ns > b.last_seen_ns; });
  return out;
}

void Receiver::SummaryLoop() {
  std::unique_lock lock(summary_mu_);
  while (!summary_stop_) {
    summary_cv_.wait_for(lock, kSummaryInterval, [this] { return summary_stop_; });
    if (summary_stop_) break;
    lock.unlock();
    FlushSummary();
    lock.lock();
  }
}

void Receiver::NoteConnectionClosed(ConnectionClose reason, const std::string& host) {
  // An idle connection closed is housekeeping (its agent reconnects when
  // it next sends): counted by the guard, neither logged nor a loss.
  if (reason == ConnectionClose::kIdle) return;
  bool first = false;
  {
    std::lock_guard lock(stats_mu_);
    const size_t loss = static_cast<size_t>(DataLoss::kConnectionClosed);
    ++totals_.losses[loss];
    ++unflushed_losses_[loss];
    ++closes_window_[static_cast<size_t>(reason)];
    if (closes_window_hosts_.size() < 8) closes_window_hosts_.insert(host);
    first = !std::exchange(close_reason_logged_[static_cast<size_t>(reason)], true);
  }
  if (first) {
    Log(LogLevel::kWarning,
        Cat("closed a connection from ", host, ": ", ConnectionCloseDescription(reason),
            " (further closes are summed up once a minute)"));
  }
}

void Receiver::FlushCloseSummary() {
  ConnectionCloseCounts closes{};
  std::set<std::string> hosts;
  const int64_t now = storage::UnixNowNs();
  {
    std::lock_guard lock(stats_mu_);
    if (now - last_close_summary_ns_ < 60'000'000'000) return;  // the window keeps adding up
    std::swap(closes, closes_window_);
    std::swap(hosts, closes_window_hosts_);
  }
  std::string parts;
  uint64_t total = 0;
  for (size_t i = 0; i < kConnectionCloseCount; ++i) {
    if (closes[i] == 0) continue;
    total += closes[i];
    parts += Cat(parts.empty() ? "" : ", ", closes[i], " ", ConnectionCloseDescription(static_cast<ConnectionClose>(i)));
  }
  if (total == 0) return;
  {
    std::lock_guard lock(stats_mu_);
    last_close_summary_ns_ = now;
  }
  std::string from;
  for (const std::string& h : hosts) from += Cat(from.empty() ? "" : ", ", h);
  Log(LogLevel::kWarning, Cat("closed ", total, " connection", total == 1 ? "" : "s", " (", parts, ") from ", from,
                              hosts.size() >= 8 ? " and others" : ""));
}

void Receiver::FlushSummary() {
  FlushLosses();
  FlushCloseSummary();
  SummaryWindow w;
  {
    std::lock_guard lock(stats_mu_);
    std::swap(w, window_);
    // Forget peers that went quiet so the map does not grow forever.
    const int64_t now = storage::UnixNowNs();
    for (auto it = peers_.begin(); it != peers_.end();) {
      it = now - it->second.last_seen_ns > kPeerWindowNs ? peers_.erase(it) : std::next(it);
    }
  }
  if (w.requests == 0) return;
  Log(LogLevel::kInfo, Cat("OTLP: ", w.requests, " requests (", w.failed, " failed), ", w.profiles,
                           " profiles (", w.rejected_profiles, " rejected), ", w.samples, " samples from ",
                           w.peers.size(), w.peers.size() == 1 ? " peer" : " peers"));
}

}  // namespace

std::string PeerHost(const std::string& peer) {
  std::string host = peer;
  const size_t scheme = host.find(':');
  if (scheme != std::string::npos && (host.starts_with("ipv4:") || host.starts_with("ipv6:"))) {
    host = UnescapeGrpcPeer(host.substr(scheme + 1));
    const size_t colon = host.rfind(':');
    if (colon != std::string::npos && (host.front() != '[' || (colon > 0 && host[colon - 1] == ']'))) {
      host.resize(colon);
    }
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  }
  return host;
}

bool IsLoopbackPeer(const std::string& peer) {
  if (peer.starts_with("unix:")) return true;
  return storage::IsLoopbackAddress(PeerHost(peer));
}

absl::StatusOr<std::unique_ptr<OtlpReceiver>> OtlpReceiver::Start(storage::Store* store,
                                                                  const ReceiverOptions& options) {
  if (store == nullptr) return absl::InvalidArgumentError("OtlpReceiver::Start needs a store");
  auto receiver = std::make_unique<Receiver>(store, options);
  absl::Status started = receiver->Start();
  if (!started.ok()) return started;
  return std::unique_ptr<OtlpReceiver>(std::move(receiver));
}

}  // namespace kiln::ingest
