// kiln --forward end to end: real kiln processes, real gRPC.
//
//   1. kiln A forwards to kiln B. B is stopped while A keeps accepting, A
//      is killed with -9 with requests still owed, both come back: B ends
//      with exactly A's requests, each whole and once.
//   2. A forwards to a recording receiver (this test's own gRPC server):
//      requests arrive byte for byte as they were sent to A, in order,
//      with the configured header; while the receiver is down the queue's
//      bound drops the oldest and counts them; a request it refuses as
//      invalid is dropped, counted and not retried.
//   3. A forwards over TLS with a token to a kiln B requiring both: a CA
//      that did not sign B's certificate, then a wrong token, deliver
//      nothing and drop nothing; fixed, everything owed arrives.
//   4. --forward-http: A POSTs to an OTLP/HTTP receiver (Python's
//      http.server, tests/integration/otlp_http_recorder.py) that is down
//      at first: the bytes arrive unchanged, in order, at
//      /v1development/profiles with the header; a 400 is not retried.
//   5. Bad forwarding flags: a clear error and a non-zero exit.
#include <doctest/doctest.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "ingest/otlp_request_builder.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.grpc.pb.h"
#include "tests/child_process.h"
#include "tests/free_port.h"
#include "tests/integration/kiln_process.h"
#include "tests/integration/otlp_send.h"
#include "tests/secret_file.h"
#include "tests/temp_dir.h"

namespace kiln::testing {
namespace {

namespace otlp = opentelemetry::proto::collector::profiles::v1development;
using ingest::OtlpRequestBuilder;

constexpr uint64_t kT0 = 1'790'000'000'000'000'000;
constexpr int kSamplesPerRequest = 100;

// Request i: its own leaf function and 100 samples, so a store's export
// shows which requests it holds, and whether whole and once.
otlp::ExportProfilesServiceRequest Request(int i) {
  OtlpRequestBuilder b;
  auto* rp = b.Resource({{"process.executable.name", "app"}});
  auto* p = b.AddProfile(rp);
  const int32_t leaf = b.Location(0, 0, {{"request_" + std::to_string(i)}});
  const int32_t root = b.Location(0, 0, {{"main"}});
  std::vector<uint64_t> ts;
  for (int k = 0; k < kSamplesPerRequest; ++k) ts.push_back(kT0 + static_cast<uint64_t>(i) * 1'000'000'000 + k);
  OtlpRequestBuilder::AddSample(p, b.Stack({leaf, root}), {}, ts);
  return std::move(b.request);
}

// The store's folded export: "main;request_i" -> samples.
std::map<std::string, int> Stored(const std::string& data_dir) {
  const CommandResult r = RunKiln({"export", "--data-dir", data_dir, "--format", "folded", "--group-by", "none"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  std::map<std::string, int> out;
  for (const std::string& line : std::vector<std::string>(absl::StrSplit(r.out, '\n', absl::SkipEmpty()))) {
    const size_t space = line.rfind(' ');
    out[line.substr(0, space)] = std::stoi(line.substr(space + 1));
  }
  return out;
}

std::map<std::string, int> Expected(int first, int last) {
  std::map<std::string, int> out;
  for (int i = first; i <= last; ++i) out["main;request_" + std::to_string(i)] = kSamplesPerRequest;
  return out;
}

// Waits up to 60 s for `data_dir` to hold exactly `want`.
bool Holds(const std::string& data_dir, const std::map<std::string, int>& want) {
  for (int i = 0; i < 600; ++i) {
    if (Stored(data_dir) == want) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

std::string TlsFile(const std::string& name) {
  const char* source = std::getenv("KILN_SOURCE_DIR");
  return std::string(source ? source : ".") + "/tests/data/tls/" + name;
}

std::string Stats(const std::string& data_dir) {
  const CommandResult r = RunKiln({"stats", "--data-dir", data_dir});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  return r.out;
}

}  // namespace

TEST_CASE("kiln --forward: B ends with exactly A's requests through B's restart and A's kill -9") {
  TempDir dir;
  const std::string a_dir = dir.path + "/a", b_dir = dir.path + "/b";
  const std::string b_target = "127.0.0.1:" + std::to_string(FreePort());
  auto b = std::make_unique<HeadlessKiln>(b_dir, std::vector<std::string>{}, b_target);
  auto a = std::make_unique<HeadlessKiln>(a_dir, std::vector<std::string>{"--forward", b_target});
  for (int i = 0; i < 10; ++i) Send(a->target(), Request(i));
  CHECK(Holds(b_dir, Expected(0, 9)));

  // B goes down; A accepts on, owing B what arrives.
  CHECK(b->Stop(SIGTERM) == 0);
  b.reset();
  for (int i = 10; i < 20; ++i) Send(a->target(), Request(i));
  CHECK(Stored(a_dir) == Expected(0, 19));
  // A dies with the requests still owed; they were in its store's write.
  a->Stop(SIGKILL);
  a.reset();
  const std::string owed = Stats(a_dir);
  INFO(owed);
  CHECK(owed.find("forwarding to " + b_target + ": 10 requests") != std::string::npos);

  // Both come back (A first: B is still down for a while).
  a = std::make_unique<HeadlessKiln>(a_dir, std::vector<std::string>{"--forward", b_target});
  for (int i = 20; i < 25; ++i) Send(a->target(), Request(i));
  std::this_thread::sleep_for(std::chrono::seconds(2));
  b = std::make_unique<HeadlessKiln>(b_dir, std::vector<std::string>{}, b_target);
  CHECK(Holds(b_dir, Expected(0, 24)));
  CHECK(Stored(a_dir) == Expected(0, 24));
  CHECK(a->Stop(SIGTERM) == 0);
  CHECK(Stats(a_dir).find("forwarding to") == std::string::npos);  // nothing owed
  INFO(a->output());
  CHECK(a->output().find("forwarding to " + b_target + ": delivering") != std::string::npos);
}

namespace {

// A receiver that keeps each request's bytes as they arrive, with the
// authorization header; while `down`, it answers UNAVAILABLE, and it
// refuses the request whose leaf is `refuse` as invalid.
class Recorder final : public grpc::CallbackGenericService {
 public:
  Recorder() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterCallbackGenericService(this);
    server_ = builder.BuildAndStart();
  }
  ~Recorder() override { server_->Shutdown(std::chrono::system_clock::now()); }
  std::string target() const { return "127.0.0.1:" + std::to_string(port_); }

  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* context) override {
    class Reactor : public grpc::ServerGenericBidiReactor {
     public:
      Reactor(Recorder* r, grpc::GenericCallbackServerContext* c) : recorder_(r), context_(c) { StartRead(&in_); }
      void OnReadDone(bool ok) override {
        if (!ok) {
          Finish(grpc::Status(grpc::StatusCode::INTERNAL, "no request"));
          return;
        }
        std::vector<grpc::Slice> slices;
        (void)in_.Dump(&slices);
        std::string bytes;
        for (const grpc::Slice& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
        std::string auth;
        auto it = context_->client_metadata().find("authorization");
        if (it != context_->client_metadata().end()) auth.assign(it->second.data(), it->second.size());
        const grpc::Status answer = recorder_->Take(context_->method(), std::move(bytes), auth);
        if (!answer.ok()) {
          Finish(answer);
          return;
        }
        otlp::ExportProfilesServiceResponse response;
        grpc::Slice out(response.SerializeAsString());
        out_ = grpc::ByteBuffer(&out, 1);
        StartWrite(&out_);
      }
      void OnWriteDone(bool) override { Finish(grpc::Status::OK); }
      void OnDone() override { delete this; }

     private:
      Recorder* recorder_;
      grpc::GenericCallbackServerContext* context_;
      grpc::ByteBuffer in_, out_;
    };
    return new Reactor(this, context);
  }

  grpc::Status Take(const std::string& method, std::string bytes, const std::string& auth) {
    std::lock_guard lock(mu_);
    if (down) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "down for the test");
    if (!refuse.empty() && bytes.find(refuse) != std::string::npos) {
      ++refused;
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "refused for the test");
    }
    methods.push_back(method);
    received.push_back(std::move(bytes));
    authorizations.push_back(auth);
    return grpc::Status::OK;
  }

  std::mutex mu_;
  bool down = false;                 // guarded by mu_
  std::string refuse;                // guarded by mu_
  std::vector<std::string> received; // guarded by mu_
  std::vector<std::string> methods, authorizations;
  int refused = 0;

 private:
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

bool WaitFor(const std::function<bool()>& done) {
  for (int i = 0; i < 600; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

}  // namespace

TEST_CASE("kiln --forward: bytes unchanged and in order, the bound drops the oldest, a refusal is not retried") {
  TempDir dir;
  Recorder recorder;
  const std::string request_bytes = Request(0).SerializeAsString();
  // Room for a bit over 3 requests.
  const std::string bound = std::to_string(request_bytes.size() * 3 + request_bytes.size() / 2);
  HeadlessKiln a(dir.path, {"--forward", recorder.target(), "--forward-header", "Authorization=Bearer s3cret",
                            "--forward-max-queue", bound});
  std::vector<std::string> sent;
  for (int i = 0; i < 3; ++i) {
    Send(a.target(), Request(i));
    sent.push_back(Request(i).SerializeAsString());
  }
  REQUIRE(WaitFor([&] {
    std::lock_guard lock(recorder.mu_);
    return recorder.received.size() == 3;
  }));
  {
    std::lock_guard lock(recorder.mu_);
    CHECK(recorder.received == sent);  // byte for byte, in order
    CHECK(recorder.methods[0] == "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export");
    CHECK(recorder.authorizations[0] == "Bearer s3cret");
    recorder.down = true;
  }
  // Down: ten more arrive at A; the queue keeps the newest three.
  for (int i = 3; i < 13; ++i) {
    Send(a.target(), Request(i));
    sent.push_back(Request(i).SerializeAsString());
  }
  {
    std::lock_guard lock(recorder.mu_);
    recorder.down = false;
    recorder.refuse = "request_11";
  }
  REQUIRE(WaitFor([&] {
    std::lock_guard lock(recorder.mu_);
    return recorder.received.size() == 5;  // 10 and 12; 11 refused
  }));
  std::this_thread::sleep_for(std::chrono::seconds(2));  // nothing more comes: 11 is not retried
  {
    std::lock_guard lock(recorder.mu_);
    CHECK(recorder.received.size() == 5);
    CHECK(recorder.received[3] == sent[10]);
    CHECK(recorder.received[4] == sent[12]);
    CHECK(recorder.refused == 1);
  }
  CHECK(a.Stop(SIGTERM) == 0);
  const std::string stats = Stats(dir.path);
  INFO(stats);
  // 7 of the 10 dropped over the bound, 1 refused; all 13 stored here.
  CHECK(stats.find("forward_dropped      error               7") != std::string::npos);
  CHECK(stats.find("forward_rejected     error               1") != std::string::npos);
  CHECK(stats.find("samples:        1300") != std::string::npos);
}

TEST_CASE("kiln --forward over TLS with a token: a wrong CA or token delivers nothing and loses nothing") {
  TempDir dir;
  const std::string a_dir = dir.path + "/a", b_dir = dir.path + "/b";
  // B: TLS with the test CA's server certificate (for 127.0.0.1), and a token.
  const std::string key = SecretCopy(TlsFile("server.key"), dir.path);
  const std::string token_file = dir.path + "/token";
  {
    std::ofstream(token_file) << "forward-s3cret\n";
    std::filesystem::permissions(token_file, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  }
  const std::string b_target = "127.0.0.1:" + std::to_string(FreePort());
  HeadlessKiln b(b_dir, {"--tls-cert", TlsFile("server.pem"), "--tls-key", key, "--auth-token-file", token_file},
                 b_target);
  auto start_a = [&](const std::string& ca, const std::string& token) {
    return std::make_unique<HeadlessKiln>(
        a_dir, std::vector<std::string>{"--forward", b_target, "--forward-ca-file", ca, "--forward-header",
                                        "authorization=Bearer " + token});
  };
  // A CA that did not sign B's certificate: the handshake fails, A retries.
  auto a = start_a(TlsFile("other_ca.pem"), "forward-s3cret");
  for (int i = 0; i < 3; ++i) Send(a->target(), Request(i));
  std::this_thread::sleep_for(std::chrono::seconds(3));
  CHECK(Stored(b_dir).empty());
  CHECK(a->Stop(SIGTERM) == 0);
  INFO(a->output());
  CHECK(a->output().find("forwarding to " + b_target + ": not connected, 3 requests") != std::string::npos);
  CHECK(Stats(a_dir).find("forwarding to " + b_target + ": 3 requests") != std::string::npos);

  // The right CA, a wrong token: B refuses (UNAUTHENTICATED), A keeps them.
  a = start_a(TlsFile("ca.pem"), "not-the-token");
  Send(a->target(), Request(3));
  std::this_thread::sleep_for(std::chrono::seconds(3));
  CHECK(Stored(b_dir).empty());
  CHECK(a->Stop(SIGTERM) == 0);
  INFO(a->output());
  CHECK(a->output().find("UNAUTHENTICATED") != std::string::npos);
  CHECK(Stats(a_dir).find("forwarding to " + b_target + ": 4 requests") != std::string::npos);

  // Both right: everything owed arrives, in order, once; nothing dropped.
  a = start_a(TlsFile("ca.pem"), "forward-s3cret");
  Send(a->target(), Request(4));
  CHECK(Holds(b_dir, Expected(0, 4)));
  CHECK(a->Stop(SIGTERM) == 0);
  const std::string stats = Stats(a_dir);
  INFO(stats);
  CHECK(stats.find("forwarding to") == std::string::npos);
  CHECK(stats.find("forward_dropped      error               0") != std::string::npos);
  CHECK(stats.find("forward_rejected     error               0") != std::string::npos);
  CHECK(b.Stop(SIGTERM) == 0);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST_CASE("kiln --forward-http: OTLP/HTTP, bytes unchanged and in order through a destination that was down") {
  TempDir dir;
  const std::string a_dir = dir.path + "/a", got = dir.path + "/got";
  std::filesystem::create_directories(got);
  const int port = FreePort();
  REQUIRE(port != 0);
  // A bare host: kiln adds OTLP's path.
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  HeadlessKiln a(a_dir, {"--forward-http", url, "--forward-header", "Authorization=Bearer s3cret"});
  CHECK(a.output().find("forwarding every accepted request to " + url + "/v1development/profiles (OTLP/HTTP)") !=
        std::string::npos);
  std::vector<std::string> sent;
  for (int i = 0; i < 2; ++i) {
    Send(a.target(), Request(i));
    sent.push_back(Request(i).SerializeAsString());
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));
  CHECK(Stats(a_dir).find("forwarding to " + url + "/v1development/profiles: 2 requests") != std::string::npos);

  // The receiver comes up; request 2 it refuses (400), request 3 it takes.
  ScopedChild recorder(SpawnChild({"/usr/bin/python3", std::string(std::getenv("KILN_SOURCE_DIR")) +
                                                           "/tests/integration/otlp_http_recorder.py",
                                   std::to_string(port), got}));
  for (int i = 2; i < 4; ++i) {
    Send(a.target(), Request(i));
    sent.push_back(Request(i).SerializeAsString());
  }
  REQUIRE(WaitFor([&] { return std::filesystem::exists(got + "/002.bin"); }));
  std::this_thread::sleep_for(std::chrono::seconds(2));  // nothing more comes: request 2 is not retried
  CHECK_FALSE(std::filesystem::exists(got + "/003.bin"));
  const std::vector<int> delivered = {0, 1, 3};
  for (size_t k = 0; k < delivered.size(); ++k) {
    const std::string base = got + "/00" + std::to_string(k);
    CHECK(ReadFile(base + ".bin") == sent[delivered[k]]);  // byte for byte, in order
    CHECK(ReadFile(base + ".meta") == "/v1development/profiles\napplication/x-protobuf\nBearer s3cret\n");
  }
  CHECK(a.Stop(SIGTERM) == 0);
  INFO(a.output());
  CHECK(a.output().find("HTTP 400: refused for the test") == std::string::npos);  // in the Log, not stdout
  const std::string stats = Stats(a_dir);
  INFO(stats);
  CHECK(stats.find("forwarding to") == std::string::npos);  // nothing owed
  CHECK(stats.find("forward_rejected     error               1") != std::string::npos);
  CHECK(stats.find("samples:        400") != std::string::npos);
}

TEST_CASE("bad forwarding flags: a clear error, a non-zero exit") {
  TempDir dir;
  struct Case {
    std::vector<std::string> flags;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--forward", "nohostport"}, "--forward \"nohostport\": want HOST:PORT"},
      {{"--forward-header", "authorization=Bearer x"}, "need --forward or --forward-http"},
      {{"--forward", "b:4317", "--forward-ca-file", dir.path + "/missing.pem"},
       "--forward-ca-file " + dir.path + "/missing.pem: cannot read it"},
      {{"--forward", "b:4317", "--forward-header", "novalue"}, "--forward-header \"novalue\": want KEY=VALUE"},
      {{"--forward", "b:4317", "--forward", "b:4317"}, "--forward b:4317 is given twice"},
      {{"--forward-http", "ftp://b:4318"}, "want http://HOST:PORT[/PATH] or https://"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"--headless", "--listen", "127.0.0.1:0", "--data-dir", dir.path + "/store"};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    const CommandResult r = RunKiln(args);
    INFO(absl::StrJoin(c.flags, " "), " -> ", r.err);
    CHECK(r.exit_code != 0);
    CHECK(r.err.find(c.says) != std::string::npos);
  }
}

}  // namespace kiln::testing
