#include "ingest/forward/forwarder.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#ifdef KILN_FORWARD_HTTP
#include <curl/curl.h>
#endif

#include <algorithm>
#include <chrono>
#include <fstream>
#include <future>
#include <iterator>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
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

// What one attempt to deliver a request came to.
struct Attempt {
  enum class Outcome { kDelivered, kRefused, kRetry };
  Outcome outcome = Outcome::kRetry;
  std::string error;  // the destination's answer, or why it was not reached
};

// Sends one request's bytes to a destination; one per destination thread.
class Transport {
 public:
  virtual ~Transport() = default;
  virtual Attempt Send(const std::string& bytes) = 0;
};

class GrpcTransport final : public Transport {
 public:
  explicit GrpcTransport(const ForwardTarget& t) : headers_(t.headers) {
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
    stub_ = std::make_unique<grpc::GenericStub>(grpc::CreateCustomChannel(t.target, creds, args));
  }
  Attempt Send(const std::string& bytes) override {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kDeadline);
    for (const auto& [key, value] : headers_) context.AddMetadata(key, value);
    grpc::Slice slice(bytes);
    grpc::ByteBuffer request(&slice, 1);
    grpc::ByteBuffer response;
    std::promise<grpc::Status> done;
    stub_->UnaryCall(&context, kExportMethod, grpc::StubOptions(), &request, &response,
                     [&done](grpc::Status s) { done.set_value(std::move(s)); });
    const grpc::Status status = done.get_future().get();
    if (status.ok()) return {Attempt::Outcome::kDelivered, ""};
    // gRPC's codes are absl's: "UNAUTHENTICATED: ...", not "16: ...".
    std::string error = absl::StrCat(absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code())),
                                     ": ", status.error_message());
    return {status.error_code() == grpc::StatusCode::INVALID_ARGUMENT ? Attempt::Outcome::kRefused
                                                                      : Attempt::Outcome::kRetry,
            std::move(error)};
  }

 private:
  std::vector<std::pair<std::string, std::string>> headers_;
  std::unique_ptr<grpc::GenericStub> stub_;
};

#ifdef KILN_FORWARD_HTTP
// OTLP/HTTP: a POST of the request's protobuf bytes, one connection kept
// alive by the easy handle.
class HttpTransport final : public Transport {
 public:
  explicit HttpTransport(const ForwardTarget& t) : curl_(curl_easy_init()) {
    headers_ = curl_slist_append(headers_, "Content-Type: application/x-protobuf");
    for (const auto& [key, value] : t.headers) headers_ = curl_slist_append(headers_, (key + ": " + value).c_str());
    curl_easy_setopt(curl_, CURLOPT_URL, t.target.c_str());
    curl_easy_setopt(curl_, CURLOPT_HTTPHEADER, headers_);
    curl_easy_setopt(curl_, CURLOPT_USERAGENT, "kiln-forward");
    curl_easy_setopt(curl_, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl_, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(curl_, CURLOPT_TIMEOUT, static_cast<long>(kDeadline.count()));
    curl_easy_setopt(curl_, CURLOPT_ERRORBUFFER, error_);
    if (!t.ca_file.empty()) curl_easy_setopt(curl_, CURLOPT_CAINFO, t.ca_file.c_str());
    curl_easy_setopt(curl_, CURLOPT_WRITEFUNCTION, &HttpTransport::Collect);
    curl_easy_setopt(curl_, CURLOPT_WRITEDATA, &answer_);
  }
  ~HttpTransport() override {
    curl_easy_cleanup(curl_);
    curl_slist_free_all(headers_);
  }
  Attempt Send(const std::string& bytes) override {
    answer_.clear();
    error_[0] = '\0';
    curl_easy_setopt(curl_, CURLOPT_POSTFIELDS, bytes.data());
    curl_easy_setopt(curl_, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(bytes.size()));
    const CURLcode code = curl_easy_perform(curl_);
    if (code != CURLE_OK) {
      return {Attempt::Outcome::kRetry, error_[0] ? std::string(error_) : std::string(curl_easy_strerror(code))};
    }
    long http = 0;
    curl_easy_getinfo(curl_, CURLINFO_RESPONSE_CODE, &http);
    if (http >= 200 && http < 300) return {Attempt::Outcome::kDelivered, ""};
    // The body says why (OTLP/HTTP answers a google.rpc.Status, often
    // text): the printable part, short.
    std::string why;
    for (char c : answer_.substr(0, 200)) why += (c >= 0x20 && c < 0x7f) ? c : ' ';
    std::string error = absl::StrCat("HTTP ", http, why.empty() ? "" : ": ", why);
    // 400 and 413 will not pass by retrying the same bytes; 401, 403, 404,
    // 429 and 5xx may (a token, a path or the destination fixed).
    return {http == 400 || http == 413 ? Attempt::Outcome::kRefused : Attempt::Outcome::kRetry, std::move(error)};
  }

 private:
  static size_t Collect(char* data, size_t size, size_t n, void* out) {
    auto* answer = static_cast<std::string*>(out);
    if (answer->size() < 4096) answer->append(data, std::min<size_t>(size * n, 4096 - answer->size()));
    return size * n;
  }
  CURL* curl_;
  curl_slist* headers_ = nullptr;
  std::string answer_;
  char error_[CURL_ERROR_SIZE] = {};
};
#endif

std::unique_ptr<Transport> MakeTransport(const ForwardTarget& t) {
#ifdef KILN_FORWARD_HTTP
  if (t.http) return std::make_unique<HttpTransport>(t);
#endif
  return std::make_unique<GrpcTransport>(t);
}

}  // namespace

bool ForwardHttpAvailable() {
#ifdef KILN_FORWARD_HTTP
  return true;
#else
  return false;
#endif
}

absl::StatusOr<std::vector<ForwardTarget>> ParseForwardTargets(const std::vector<std::string>& targets, bool tls,
                                                               const std::string& ca_file,
                                                               const std::vector<std::string>& headers,
                                                               const std::vector<std::string>& http_urls) {
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
  // Adds `t` unless its queue name is taken: one queue per destination.
  auto add = [&out](ForwardTarget t, const char* flag) -> absl::Status {
    for (const ForwardTarget& seen : out) {
      if (seen.target == t.target) return absl::InvalidArgumentError(absl::StrCat(flag, " ", t.target, " is given twice"));
    }
    out.push_back(std::move(t));
    return absl::OkStatus();
  };
  for (const std::string& t : targets) {
    const size_t colon = t.rfind(':');
    if (t.empty() || colon == std::string::npos || colon == 0 || colon + 1 == t.size() ||
        t.find_first_of(" \t/") != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("--forward \"", t, "\": want HOST:PORT"));
    }
    absl::Status added =
        add({.target = t, .tls = tls || !ca_file.empty(), .ca_file = ca_file, .headers = parsed_headers}, "--forward");
    if (!added.ok()) return added;
  }
  for (const std::string& u : http_urls) {
    const bool https = absl::StartsWith(u, "https://");
    const size_t host = https ? 8 : 7;
    if ((!https && !absl::StartsWith(u, "http://")) || u.size() == host ||
        u.find_first_of(" \t") != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("--forward-http \"", u, "\": want http://HOST:PORT[/PATH] or https://..."));
    }
    if (!ForwardHttpAvailable()) {
      return absl::UnimplementedError("--forward-http: this build has no libcurl (libcurl4-openssl-dev)");
    }
    // OTLP/HTTP's path for profiles, as the Collector's otlphttp exporter
    // adds it to a bare endpoint.
    const size_t slash = u.find('/', host);
    std::string url = u;
    if (slash == std::string::npos || slash + 1 == u.size()) {
      url = u.substr(0, slash) + "/v1development/profiles";
    }
    absl::Status added = add(
        {.target = url, .http = true, .tls = https, .ca_file = ca_file, .headers = parsed_headers}, "--forward-http");
    if (!added.ok()) return added;
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
  std::unique_ptr<Transport> transport;
  std::thread thread;
  mutable std::mutex mutex;  // guards the fields below
  bool connected = false;
  uint64_t delivered = 0;
  uint64_t rejected = 0;
  std::string last_error;
};

Forwarder::Forwarder(storage::Store* store, std::vector<ForwardTarget> targets) : store_(store) {
  for (ForwardTarget& t : targets) {
#ifdef KILN_FORWARD_HTTP
    static std::once_flag curl_once;  // libcurl wants its global set-up once, before any thread uses it
    std::call_once(curl_once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
#endif
    auto d = std::make_unique<Destination>();
    d->transport = MakeTransport(t);
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

std::vector<ForwardTarget> Forwarder::Targets() const {
  std::vector<ForwardTarget> out;
  for (const auto& d : destinations_) out.push_back(d->target);
  return out;
}

std::vector<ForwardStatus> Forwarder::Status() const {
  std::vector<ForwardStatus> out;
  for (const auto& d : destinations_) {
    ForwardStatus s;
    s.target = d->target.target;
    s.backlog = store_->ForwardBacklogOf(d->target.target);
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
      const Attempt attempt = d->transport->Send(e.bytes);
      if (attempt.outcome != Attempt::Outcome::kRetry) {
        const bool rejected = attempt.outcome == Attempt::Outcome::kRefused;
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
                                               "dropped for it (", attempt.error, ")"));
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
      const std::string& error = attempt.error;
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
