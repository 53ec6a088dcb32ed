// OtlpReceiver end to end: the real gRPC server on 127.0.0.1 (port 0), a
// real Store in a temporary directory, and a real gRPC client.
#include "ingest/otlp_receiver.h"

#include <doctest/doctest.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <cstdlib>
#include <filesystem>
#include <future>
#include <random>
#include <string>
#include <thread>

#include "ingest/message_text.h"
#include "ingest/otlp_normalizer.h"
#include "ingest/otlp_request_builder.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.grpc.pb.h"
#include "storage/model/flame_tree.h"
#include "storage/model/folded.h"
#include "storage/model/sample_type.h"
#include "tests/secret_file.h"
#include "tests/temp_dir.h"

namespace kiln::ingest {
namespace {

namespace collector = opentelemetry::proto::collector::profiles::v1development;
constexpr const char* kExportMethod =
    "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export";

using ::kiln::testing::TempDir;

// A store, a receiver on a loopback port, and a channel to it.
struct Server {
  TempDir dir;
  std::unique_ptr<storage::Store> store;
  std::unique_ptr<OtlpReceiver> receiver;
  std::shared_ptr<grpc::Channel> channel;

  // `credentials`: how the test's channel connects (plain text unless set).
  explicit Server(ReceiverOptions options = {},
                  std::shared_ptr<grpc::ChannelCredentials> credentials = nullptr) {
    auto opened = storage::Store::Open(dir.path, storage::Store::Mode::kReadWrite);
    REQUIRE(opened.ok());
    store = std::move(*opened);
    options.listen_address = "127.0.0.1:0";
    auto started = OtlpReceiver::Start(store.get(), options);
    REQUIRE_MESSAGE(started.ok(), started.status().ToString());
    receiver = std::move(*started);
    grpc::ChannelArguments args;
    args.SetMaxSendMessageSize(-1);
    args.SetMaxReceiveMessageSize(-1);
    channel = grpc::CreateCustomChannel(Cat("127.0.0.1:", receiver->port()),
                                        credentials ? credentials : grpc::InsecureChannelCredentials(), args);
  }
  ~Server() {
    receiver->Stop();
    receiver.reset();
    store.reset();
  }

  // `authorization`: the header's value, none when empty.
  grpc::Status Export(const collector::ExportProfilesServiceRequest& request,
                      collector::ExportProfilesServiceResponse* response,
                      grpc_compression_algorithm compression = GRPC_COMPRESS_NONE,
                      const std::string& authorization = "") {
    auto stub = collector::ProfilesService::NewStub(channel);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    context.set_compression_algorithm(compression);
    if (!authorization.empty()) context.AddMetadata("authorization", authorization);
    return stub->Export(&context, request, response);
  }

  // Sends arbitrary bytes as the Export request.
  grpc::Status ExportRaw(const std::string& bytes) {
    grpc::GenericStub stub(channel);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    grpc::Slice slice(bytes);
    grpc::ByteBuffer request(&slice, 1);
    grpc::ByteBuffer response;
    std::promise<grpc::Status> done;
    stub.UnaryCall(&context, kExportMethod, grpc::StubOptions(), &request, &response,
                   [&done](grpc::Status s) { done.set_value(std::move(s)); });
    return done.get_future().get();
  }

  std::shared_ptr<const storage::ProfileSlice> Run(storage::SampleType type = {}) {
    storage::Query query;
    query.sample_type = type;
    auto slice = store->Run(query);
    REQUIRE(slice.ok());
    return *slice;
  }

  // The receiver logs after answering, so wait a little for the line.
  bool LogContains(std::string_view text) {
    for (int attempt = 0; attempt < 200; ++attempt) {
      for (const storage::LogEntry& e : store->ReadLog(1000)) {
        if (e.message.find(text) != std::string::npos) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
};

// One process, on-CPU samples at 1 ms steps from t0, and (optionally) a
// second, broken profile.
collector::ExportProfilesServiceRequest MakeRequest(int samples, bool with_bad_profile,
                                                    uint64_t t0 = 1'700'000'000'000'000'000) {
  OtlpRequestBuilder b;
  int32_t exe = b.Mapping("/usr/bin/app", "00112233445566778899aabbccddeeff");
  int32_t leaf = b.Location(exe, 0x1234, {});
  int32_t root = b.Location(exe, 0x10, {{"main", "app.c", 3}});
  int32_t kernel = b.Location(b.Mapping("vmlinux"), 0xffffffff81000000, {{"schedule"}}, "kernel");
  int32_t s1 = b.Stack({leaf, root});
  int32_t s2 = b.Stack({kernel, leaf, root});
  int32_t thread = b.StringAttribute("thread.name", "worker-1");
  auto* rp = b.Resource({{"process.pid", "42"}, {"process.executable.name", "app"}});
  auto* p = b.AddProfile(rp);
  for (int i = 0; i < samples; ++i) {
    OtlpRequestBuilder::AddSample(p, i % 3 == 0 ? s2 : s1, {thread}, {t0 + i * 1'000'000ull});
  }
  if (with_bad_profile) {
    auto* bad = b.AddProfile(rp);
    OtlpRequestBuilder::AddSample(bad, 4711, {}, {t0});
  }
  return std::move(b.request);
}

TEST_CASE("attributes by string-table reference (OTLP v1.10+) give the same store as inline ones") {
  // Two kilns, one request in each form.
  collector::ExportProfilesServiceRequest inline_form = MakeRequest(30, false);
  collector::ExportProfilesServiceRequest by_reference = inline_form;
  ToStringReferences(&by_reference);
  REQUIRE(by_reference.resource_profiles(0).resource().attributes(0).key().empty());
  Server a, b;
  collector::ExportProfilesServiceResponse ra, rb;
  REQUIRE(a.Export(inline_form, &ra).ok());
  REQUIRE(b.Export(by_reference, &rb).ok());
  CHECK_FALSE(rb.has_partial_success());
  auto folded = [](Server& server) {
    auto tree = storage::BuildFlameTree(server.Run(), {.group_by = storage::GroupBy::kThread});
    return storage::FoldedLines(tree, {true});
  };
  CHECK(folded(b) == folded(a));
  CHECK(folded(b).front().rfind("app;worker-1;", 0) == 0);  // names survive: not "unknown"
  CHECK(b.store->AttributeKeys() == a.store->AttributeKeys());
  for (const std::string& key : a.store->AttributeKeys()) {
    CHECK(b.store->AttributeValues(key, 100) == a.store->AttributeValues(key, 100));
  }
  CHECK(b.store->Executables().size() == a.store->Executables().size());
}

TEST_CASE("OK path: empty response, data in the store, stats and log") {
  Server server;
  collector::ExportProfilesServiceResponse response;
  grpc::Status status = server.Export(MakeRequest(30, false), &response);
  REQUIRE_MESSAGE(status.ok(), status.error_message());
  CHECK_FALSE(response.has_partial_success());

  auto slice = server.Run();
  CHECK(slice->total_events == 30);
  CHECK(slice->weights.size() == 2);  // two stacks, one attribute set

  ReceiverStats stats = server.receiver->stats();
  CHECK(stats.requests == 1);
  CHECK(stats.samples_accepted == 30);
  CHECK(stats.profiles_accepted == 1);
  REQUIRE(stats.peers.size() == 1);
  CHECK(stats.peers[0].peer.find("127.0.0.1") != std::string::npos);
  CHECK(stats.peers[0].address == "127.0.0.1");
  CHECK(stats.peers[0].samples == 30);
  CHECK(stats.peers[0].samples_per_second > 0);
  CHECK(stats.listen_address == Cat("127.0.0.1:", server.receiver->port()));
  CHECK(server.LogContains("first OTLP request from this machine (ipv4:127.0.0.1"));
  // Every sample carries its sender's address, as the receiver saw it.
  CHECK(server.store->AttributeValues("kiln.sender", 10) == std::vector<std::string>{"127.0.0.1"});
}

TEST_CASE("a sender's rates are per kind of sample, and it is named by its host.name") {
  Server server;
  OtlpRequestBuilder b;
  int32_t exe = b.Mapping("/usr/bin/app");
  int32_t stack = b.Stack({b.Location(exe, 0x10, {{"main"}})});
  auto* rp = b.Resource({{"host.name", "build-7"}, {"process.pid", "1"}});
  auto* on = b.AddProfile(rp);
  for (int i = 0; i < 30; ++i) OtlpRequestBuilder::AddSample(on, stack, {}, {1'700'000'000'000'000'000ull + i});
  auto* off = b.AddProfile(rp, "off_cpu", "nanoseconds", "", "");
  for (int i = 0; i < 6; ++i) {
    OtlpRequestBuilder::AddSample(off, stack, {}, {1'700'000'000'000'000'000ull + i}, {1'000'000});
  }
  collector::ExportProfilesServiceResponse response;
  REQUIRE(server.Export(std::move(b.request), &response).ok());
  const ReceiverStats stats = server.receiver->stats();
  REQUIRE(stats.peers.size() == 1);
  const PeerStats& p = stats.peers[0];
  CHECK(p.hosts == "build-7");
  CHECK(p.samples == 36);
  REQUIRE(p.kinds.size() == 2);
  // Busiest first; the rates are counts over the peer's seconds so far (1 s
  // at least), so 30 and 6 stay apart in that ratio.
  CHECK(p.kinds[0].kind == storage::SampleTypeLabel(storage::OnCpuSamples()));
  CHECK(p.kinds[1].kind == storage::SampleTypeLabel(storage::OffCpuTime()));
  CHECK(p.kinds[0].per_second == doctest::Approx(5 * p.kinds[1].per_second));
  CHECK(p.samples_per_second == doctest::Approx(p.kinds[0].per_second + p.kinds[1].per_second));
}

TEST_CASE("a sender cannot set kiln.sender itself") {
  Server server;
  OtlpRequestBuilder b;
  int32_t exe = b.Mapping("/usr/bin/app");
  int32_t stack = b.Stack({b.Location(exe, 0x10, {{"main"}})});
  int32_t spoof = b.StringAttribute("kiln.sender", "10.9.9.9");
  auto* p = b.AddProfile(b.Resource({{"kiln.sender", "10.9.9.8"}, {"process.pid", "1"}}));
  OtlpRequestBuilder::AddSample(p, stack, {spoof}, {1'700'000'000'000'000'000ull});
  collector::ExportProfilesServiceResponse response;
  REQUIRE(server.Export(std::move(b.request), &response).ok());
  CHECK(server.store->AttributeValues("kiln.sender", 10) == std::vector<std::string>{"127.0.0.1"});
}

TEST_CASE("partial success: the good profile is stored, the bad one explained") {
  Server server;
  collector::ExportProfilesServiceResponse response;
  grpc::Status status = server.Export(MakeRequest(10, true), &response);
  REQUIRE(status.ok());
  REQUIRE(response.has_partial_success());
  CHECK(response.partial_success().rejected_profiles() == 1);
  CHECK(response.partial_success().error_message() ==
        "resource_profiles[0].scope_profiles[0].profiles[1].samples[0].stack_index 4711 out of "
        "range (stack_table has 3 entries)");
  CHECK(server.Run()->total_events == 10);
  CHECK(server.receiver->stats().profiles_rejected == 1);
  CHECK(server.receiver->stats().losses[static_cast<size_t>(storage::DataLoss::kProfileRejected)] == 1);
  CHECK(server.LogContains("rejected 1 of 2 profiles"));
}

TEST_CASE("undecodable bytes: INVALID_ARGUMENT naming where decoding failed") {
  Server server;
  grpc::Status status = server.ExportRaw(std::string("\x0a\xff\xff\x01garbage", 11));
  CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(status.error_message() ==
        "cannot decode ExportProfilesServiceRequest (11 bytes, OTLP v1.10 layout): "
        "resource_profiles[0] (unknown field 12) at byte offset 4: invalid wire type 7 (inside "
        "resource_profiles[0] at byte offset 0, whose length 32767 exceeds the 7 bytes left)");
  // A truncated real request.
  std::string bytes = MakeRequest(5, false).SerializeAsString();
  status = server.ExportRaw(bytes.substr(0, bytes.size() - 5));
  CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(status.error_message().find("dictionary.stack_table[") != std::string::npos);
  CHECK(server.receiver->stats().requests_failed == 2);
  CHECK(server.LogContains("cannot decode ExportProfilesServiceRequest"));
  // The server still works.
  collector::ExportProfilesServiceResponse response;
  CHECK(server.Export(MakeRequest(1, false), &response).ok());
}

TEST_CASE("too large: RESOURCE_EXHAUSTED, also when gzip hides the size") {
  ReceiverOptions options;
  options.max_message_bytes = 64 << 10;
  Server server(options);
  collector::ExportProfilesServiceRequest big = MakeRequest(20'000, false);  // ~250 KB
  REQUIRE(big.ByteSizeLong() > (64u << 10));
  collector::ExportProfilesServiceResponse response;
  grpc::Status status = server.Export(big, &response);
  CHECK(status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  // Compressed it is far below the limit; decompressed it is not.
  // A bomb: tiny compressed, far over the limit decompressed.
  collector::ExportProfilesServiceRequest bomb = MakeRequest(10, false);
  bomb.mutable_dictionary()->add_string_table(std::string(8 << 20, 'a'));
  status = server.Export(bomb, &response, GRPC_COMPRESS_GZIP);
  CHECK(status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK(status.error_message() == "request decompresses to more than the limit of 65536 bytes");
  CHECK(server.Run()->total_events == 0);
  // A request under the limit still goes through.
  CHECK(server.Export(MakeRequest(100, false), &response).ok());
}

TEST_CASE("gzip- and deflate-compressed requests are accepted") {
  Server server;
  collector::ExportProfilesServiceResponse response;
  grpc::Status status = server.Export(MakeRequest(5'000, false), &response, GRPC_COMPRESS_GZIP);
  REQUIRE_MESSAGE(status.ok(), status.error_message());
  status =
      server.Export(MakeRequest(1'000, true, 1'800'000'000'000'000'000), &response, GRPC_COMPRESS_DEFLATE);
  REQUIRE_MESSAGE(status.ok(), status.error_message());
  CHECK(response.partial_success().rejected_profiles() == 1);
  CHECK(server.Run()->total_events == 6'000);
}

TEST_CASE("a port in use is a clear error") {
  Server server;
  TempDir dir;
  ReceiverOptions options;
  options.listen_address = Cat("127.0.0.1:", server.receiver->port());
  auto started = OtlpReceiver::Start(server.store.get(), options);
  REQUIRE_FALSE(started.ok());
  CHECK(std::string(started.status().message()).find(options.listen_address) != std::string::npos);
}

TEST_CASE("random and mutated bytes never crash the receiver") {
  Server server;
  std::mt19937_64 rng(12345);
  const std::string valid = MakeRequest(20, true).SerializeAsString();
  int ok = 0, invalid = 0;
  for (int i = 0; i < 150; ++i) {
    std::string bytes;
    if (i % 2 == 0) {
      bytes.resize(rng() % 600);
      for (char& c : bytes) c = static_cast<char>(rng());
    } else {
      bytes = valid;
      for (int flips = 1 + rng() % 4; flips > 0; --flips) {
        bytes[rng() % bytes.size()] = static_cast<char>(rng());
      }
      if (rng() % 3 == 0) bytes.resize(rng() % bytes.size());
    }
    grpc::Status status = server.ExportRaw(bytes);
    CAPTURE(status.error_message());
    CHECK((status.ok() || status.error_code() == grpc::StatusCode::INVALID_ARGUMENT));
    (status.ok() ? ok : invalid)++;
  }
  MESSAGE("random inputs: ", ok, " decoded, ", invalid, " INVALID_ARGUMENT");
  collector::ExportProfilesServiceResponse response;
  CHECK(server.Export(MakeRequest(1, false), &response).ok());
}

TEST_CASE("writer overloaded: UNAVAILABLE, and only acknowledged data is stored") {
  ReceiverOptions options;
  options.max_inflight_bytes = 1;  // anything arriving while one is in flight
  Server server(options);
  std::vector<std::future<grpc::Status>> calls;
  for (int i = 0; i < 12; ++i) {
    calls.push_back(std::async(std::launch::async, [&server, i] {
      collector::ExportProfilesServiceResponse response;
      return server.Export(MakeRequest(20'000, false, 1'700'000'000'000'000'000 + i * 100'000'000'000ull),
                           &response);
    }));
  }
  uint64_t acknowledged = 0;
  int unavailable = 0;
  for (auto& c : calls) {
    grpc::Status s = c.get();
    CHECK((s.ok() || s.error_code() == grpc::StatusCode::UNAVAILABLE));
    if (s.ok()) acknowledged += 20'000;
    if (s.error_code() == grpc::StatusCode::UNAVAILABLE) {
      ++unavailable;
      CHECK(s.error_message().find("retry later") != std::string::npos);
    }
  }
  // Timing decides how many overlap; with 12 concurrent senders some do.
  WARN_MESSAGE(unavailable > 0, "no request overlapped another");
  CHECK(acknowledged > 0);
  CHECK(server.Run()->total_events == acknowledged);
}

TEST_CASE(
    "--max-sender-rate: a sender past its budget is refused UNAVAILABLE, counted, and nothing is stored") {
  ReceiverOptions options;
  const collector::ExportProfilesServiceRequest request = MakeRequest(2'000, false);
  const size_t bytes = request.ByteSizeLong();
  // Ten seconds of this rate hold three such requests, not four.
  options.max_sender_bytes_per_second = (3 * bytes + bytes / 2) / 10;
  Server server(options);
  collector::ExportProfilesServiceResponse response;
  for (int i = 0; i < 3; ++i) REQUIRE(server.Export(request, &response).ok());
  grpc::Status refused = server.Export(request, &response);
  CHECK(refused.error_code() == grpc::StatusCode::UNAVAILABLE);
  CHECK(refused.error_message().find("--max-sender-rate") != std::string::npos);
  CHECK(refused.error_message().find("(127.0.0.1)") != std::string::npos);
  CHECK(server.Run()->total_events == 3 * 2'000u);
  const ReceiverStats stats = server.receiver->stats();
  CHECK(stats.losses[static_cast<size_t>(storage::DataLoss::kRateLimited)] == 1);
  REQUIRE(stats.peers.size() == 1);
  CHECK(stats.peers[0].losses[static_cast<size_t>(storage::DataLoss::kRateLimited)] == 1);
}

TEST_CASE("Stop answers in-flight requests and is idempotent") {
  Server server;
  std::vector<std::future<grpc::Status>> calls;
  for (int i = 0; i < 8; ++i) {
    calls.push_back(std::async(std::launch::async, [&server, i] {
      collector::ExportProfilesServiceResponse response;
      return server.Export(MakeRequest(2'000, false, 1'700'000'000'000'000'000 + i * 10'000'000'000ull),
                           &response);
    }));
  }
  // Let some calls arrive, then stop while others may be queued.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  server.receiver->Stop();
  server.receiver->Stop();
  uint64_t acknowledged = 0;
  for (auto& c : calls) {
    grpc::Status s = c.get();
    if (s.ok()) acknowledged += 2'000;
  }
  // Everything acknowledged is stored.
  CHECK(server.Run()->total_events == acknowledged);
}

}  // namespace
}  // namespace kiln::ingest

namespace kiln::ingest {
namespace {

std::string TlsFile(const std::string& name) {
  const char* source = std::getenv("KILN_SOURCE_DIR");
  return std::string(source ? source : ".") + "/tests/data/tls/" + name;
}

std::string ReadText(const std::string& path) {
  auto text = ReadPemFile(path, "test");
  REQUIRE_MESSAGE(text.ok(), text.status().ToString());
  return *text;
}

std::shared_ptr<grpc::ChannelCredentials> TlsClient(const std::string& ca, bool with_client_cert = false) {
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = ReadText(TlsFile(ca));
  if (with_client_cert) {
    ssl.pem_private_key = ReadText(TlsFile("client.key"));
    ssl.pem_cert_chain = ReadText(TlsFile("client.pem"));
  }
  return grpc::SslCredentials(ssl);
}

constexpr const char* kToken = "s3cret-token-0123456789";

}  // namespace

TEST_CASE("token: requests without it, or with another, are refused UNAUTHENTICATED and store nothing") {
  ReceiverOptions options;
  options.security.auth_token = kToken;
  Server server(options);
  collector::ExportProfilesServiceResponse response;
  SUBCASE("no header") {
    grpc::Status s = server.Export(MakeRequest(5, false), &response);
    CHECK(s.error_code() == grpc::StatusCode::UNAUTHENTICATED);
    CHECK(s.error_message().find("requires a token and the request carried none") != std::string::npos);
    CHECK(s.error_message().find("authorization: Bearer <token>") != std::string::npos);
    CHECK(s.error_message().find("-auth-token-file") != std::string::npos);
  }
  SUBCASE("another token") {
    grpc::Status s = server.Export(MakeRequest(5, false), &response, GRPC_COMPRESS_NONE, "Bearer guess");
    CHECK(s.error_code() == grpc::StatusCode::UNAUTHENTICATED);
    CHECK(s.error_message().find("not this kiln's") != std::string::npos);
  }
  SUBCASE("the token as a prefix of a longer one") {
    grpc::Status s =
        server.Export(MakeRequest(5, false), &response, GRPC_COMPRESS_NONE, Cat("Bearer ", kToken, "x"));
    CHECK(s.error_code() == grpc::StatusCode::UNAUTHENTICATED);
  }
  SUBCASE("not a bearer header") {
    grpc::Status s = server.Export(MakeRequest(5, false), &response, GRPC_COMPRESS_NONE, kToken);
    CHECK(s.error_code() == grpc::StatusCode::UNAUTHENTICATED);
    CHECK(s.error_message().find("not 'Bearer <token>'") != std::string::npos);
  }
  CHECK(server.Run()->total_events == 0);
  ReceiverStats stats = server.receiver->stats();
  CHECK(stats.token_required);
  CHECK(stats.requests_unauthenticated == 1);
  CHECK(stats.requests_failed == 1);
  // A named data-loss count, per sender too, and in the store's totals.
  CHECK(stats.losses[static_cast<size_t>(storage::DataLoss::kUnauthenticated)] == 1);
  REQUIRE(stats.peers.size() == 1);
  CHECK(stats.peers[0].losses[static_cast<size_t>(storage::DataLoss::kUnauthenticated)] == 1);
  server.receiver->Stop();
  CHECK(server.store->DataLossTotals()[static_cast<size_t>(storage::DataLoss::kUnauthenticated)] == 1);
  CHECK(server.LogContains("refused OTLP requests from ipv4:127.0.0.1"));
}

TEST_CASE("token: the right one is accepted (scheme in any case), and refusals are logged once per host") {
  ReceiverOptions options;
  options.security.auth_token = kToken;
  Server server(options);
  collector::ExportProfilesServiceResponse response;
  for (int i = 0; i < 3; ++i) {
    CHECK(server.Export(MakeRequest(5, false), &response).error_code() == grpc::StatusCode::UNAUTHENTICATED);
  }
  grpc::Status ok =
      server.Export(MakeRequest(5, false), &response, GRPC_COMPRESS_GZIP, Cat("Bearer ", kToken));
  REQUIRE_MESSAGE(ok.ok(), ok.error_message());
  ok = server.Export(MakeRequest(7, false), &response, GRPC_COMPRESS_NONE, Cat("bearer  ", kToken));
  REQUIRE_MESSAGE(ok.ok(), ok.error_message());
  CHECK(server.Run()->total_events == 12);
  CHECK(server.receiver->stats().requests_unauthenticated == 3);
  REQUIRE(server.LogContains("refused OTLP requests"));
  int refusals = 0;
  for (const storage::LogEntry& e : server.store->ReadLog(1000)) {
    refusals += e.message.find("refused OTLP requests") != std::string::npos;
  }
  CHECK(refusals == 1);
  CHECK(server.LogContains("token required"));
}

TEST_CASE("TLS: a client trusting kiln's CA is served; plain text and other CAs are not") {
  TempDir keys;
  ReceiverOptions options;
  options.security.tls_cert_file = TlsFile("server.pem");
  options.security.tls_key_file = kiln::testing::SecretCopy(TlsFile("server.key"), keys.path);
  collector::ExportProfilesServiceResponse response;
  {
    Server server(options, TlsClient("ca.pem"));
    grpc::Status s = server.Export(MakeRequest(4, false), &response);
    REQUIRE_MESSAGE(s.ok(), s.error_message());
    CHECK(server.Run()->total_events == 4);
    CHECK(server.receiver->stats().tls);
    CHECK(server.LogContains("with TLS"));
  }
  {
    Server plain(options);  // a plain-text client cannot talk to a TLS port
    CHECK(plain.Export(MakeRequest(4, false), &response).error_code() == grpc::StatusCode::UNAVAILABLE);
    CHECK(plain.Run()->total_events == 0);
  }
  {
    Server untrusted(options, TlsClient("other_ca.pem"));
    CHECK(untrusted.Export(MakeRequest(4, false), &response).error_code() == grpc::StatusCode::UNAVAILABLE);
    CHECK(untrusted.Run()->total_events == 0);
  }
}

TEST_CASE("mutual TLS: only clients with a certificate from the client CA are served") {
  TempDir keys;
  ReceiverOptions options;
  options.security.tls_cert_file = TlsFile("server.pem");
  options.security.tls_key_file = kiln::testing::SecretCopy(TlsFile("server.key"), keys.path);
  options.security.tls_client_ca_file = TlsFile("ca.pem");
  collector::ExportProfilesServiceResponse response;
  {
    Server anonymous(options, TlsClient("ca.pem"));
    CHECK_FALSE(anonymous.Export(MakeRequest(3, false), &response).ok());
    CHECK(anonymous.Run()->total_events == 0);
  }
  Server server(options, TlsClient("ca.pem", /*with_client_cert=*/true));
  grpc::Status s = server.Export(MakeRequest(3, false), &response);
  REQUIRE_MESSAGE(s.ok(), s.error_message());
  CHECK(server.Run()->total_events == 3);
}

TEST_CASE("TLS files that are missing, not PEM or half given are clear start errors") {
  TempDir dir;
  auto store = storage::Store::Open(dir.path, storage::Store::Mode::kReadWrite);
  REQUIRE(store.ok());
  ReceiverOptions options;
  options.listen_address = "127.0.0.1:0";
  options.security.tls_cert_file = TlsFile("server.pem");
  auto half = OtlpReceiver::Start(store->get(), options);
  REQUIRE_FALSE(half.ok());
  CHECK(half.status().message() == "TLS needs both a certificate (--tls-cert) and its key (--tls-key)");
  options.security.tls_key_file = dir.path + "/missing.key";
  auto missing = OtlpReceiver::Start(store->get(), options);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message() == Cat("TLS key file ", dir.path, "/missing.key does not exist"));
  options.security.tls_key_file = kiln::testing::SecretCopy(TlsFile("README.md"), dir.path);
  auto not_pem = OtlpReceiver::Start(store->get(), options);
  REQUIRE_FALSE(not_pem.ok());
  CHECK(not_pem.status().message() ==
        Cat("TLS key file ", dir.path, "/README.md is not PEM (no '-----BEGIN' line)"));
  options.security.tls_key_file = TlsFile("server.key");  // as git leaves it: 0644
  auto readable = OtlpReceiver::Start(store->get(), options);
  REQUIRE_FALSE(readable.ok());
  CHECK(readable.status().code() == absl::StatusCode::kPermissionDenied);
}

}  // namespace kiln::ingest
