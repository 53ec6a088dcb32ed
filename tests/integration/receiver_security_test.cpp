// Who may send, end to end: kiln-agent's real exporter (agent/exporter.h,
// with the headers and CA its flags make) against kiln's real receiver
// with a token and TLS (tests/data/tls). The agent is what users point at
// a kiln with a token, so this is the pair that must agree.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "agent_flags.h"
#include "exporter.h"
#include "ingest/otlp_receiver.h"
#include "tests/secret_file.h"
#include "tests/temp_dir.h"
#include "ingest/otlp_request_builder.h"
#include "storage/store.h"

namespace {

using kiln::ingest::OtlpReceiver;
using kiln::ingest::ReceiverOptions;

std::string DataFile(const std::string& name) {
  const char* source = std::getenv("KILN_SOURCE_DIR");
  return std::string(source ? source : ".") + "/tests/data/tls/" + name;
}

struct Kiln {
  std::string dir;
  std::unique_ptr<kiln::storage::Store> store;
  std::unique_ptr<OtlpReceiver> receiver;

  explicit Kiln(ReceiverOptions options) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "kiln-security-XXXXXX").string();
    dir = mkdtemp(tmpl.data());
    auto opened = kiln::storage::Store::Open(dir, kiln::storage::Store::Mode::kReadWrite);
    REQUIRE(opened.ok());
    store = std::move(*opened);
    options.listen_address = "127.0.0.1:0";
    auto started = OtlpReceiver::Start(store.get(), options);
    REQUIRE_MESSAGE(started.ok(), started.status().ToString());
    receiver = std::move(*started);
  }
  ~Kiln() {
    receiver->Stop();
    receiver.reset();
    store.reset();
    std::filesystem::remove_all(dir);
  }
  std::string Target(bool tls) const {
    return (tls ? "localhost:" : "127.0.0.1:") + std::to_string(receiver->port());
  }
  uint64_t StoredSamples() {
    auto slice = store->Run({});
    REQUIRE(slice.ok());
    return (*slice)->total_events;
  }
};

kiln::agent::ExportRequest Request(int samples) {
  kiln::ingest::OtlpRequestBuilder b;
  int32_t exe = b.Mapping("/usr/bin/app", "00112233445566778899aabbccddeeff");
  int32_t stack = b.Stack({b.Location(exe, 0x1234, {{"main", "app.c", 3}})});
  auto* profile = b.AddProfile(b.Resource({{"process.pid", "42"}}));
  for (int i = 0; i < samples; ++i) {
    kiln::ingest::OtlpRequestBuilder::AddSample(profile, stack, {}, {1'700'000'000'000'000'000ull + i});
  }
  return std::move(b.request);
}

// The agent's options from its own command line, as a user types it.
kiln::agent::OtlpExporter Agent(const std::vector<std::string>& flags, const std::string& target) {
  std::vector<std::string> args = {"-collection-agent=" + target};
  args.insert(args.end(), flags.begin(), flags.end());
  std::vector<std::string_view> views(args.begin(), args.end());
  auto options = kiln::agent::ParseAgentFlags(views, [](const char*) -> const char* { return nullptr; });
  REQUIRE_MESSAGE(options.ok(), options.error());
  auto headers = kiln::agent::ExportHeaders(*options);
  REQUIRE_MESSAGE(headers.ok(), headers.error());
  auto ca = kiln::agent::ReadTlsCaFile(*options);
  REQUIRE_MESSAGE(ca.ok(), ca.error());
  return kiln::agent::OtlpExporter({.target = target,
                                    .disable_tls = options->disable_tls,
                                    .tls_ca_pem = *ca,
                                    .headers = *headers,
                                    .rpc_timeout = std::chrono::seconds(3)});
}

}  // namespace

TEST_CASE(
    "kiln-agent with -auth-token-file is accepted by a kiln requiring that token; without it, refused") {
  char token_dir[] = "/tmp/kiln-token-XXXXXX";
  const std::string token_file = std::string(mkdtemp(token_dir)) + "/token";
  std::ofstream(token_file) << "correct-horse-battery\n";
  ReceiverOptions options;
  options.security.auth_token = "correct-horse-battery";
  Kiln kiln(options);
  {
    auto agent = Agent({"-disable-tls", "-auth-token-file", token_file}, kiln.Target(false));
    agent.Enqueue(Request(25), 25);
    REQUIRE(agent.Flush(std::chrono::seconds(20)));
    CHECK(agent.stats().sent_samples == 25);
    CHECK(kiln.StoredSamples() == 25);
  }
  {
    // No token: UNAUTHENTICATED is not retried (it will not get better),
    // the batch is dropped and counted on the agent's side.
    auto agent = Agent({"-disable-tls"}, kiln.Target(false));
    agent.Enqueue(Request(10), 10);
    REQUIRE(agent.Flush(std::chrono::seconds(20)));
    CHECK(agent.stats().sent_samples == 0);
    CHECK(agent.stats().dropped_samples == 10);
    CHECK(kiln.StoredSamples() == 25);
    CHECK(kiln.receiver->stats().requests_unauthenticated == 1);
  }
  std::filesystem::remove_all(std::filesystem::path(token_file).parent_path());
}

TEST_CASE("kiln-agent with -tls-ca-file sends over TLS to a kiln with --tls-cert/--tls-key") {
  ReceiverOptions options;
  options.security.tls_cert_file = DataFile("server.pem");
  kiln::testing::TempDir keys;
  options.security.tls_key_file = kiln::testing::SecretCopy(DataFile("server.key"), keys.path);
  Kiln kiln(options);
  {
    auto agent = Agent({"-tls-ca-file", DataFile("ca.pem")}, kiln.Target(true));
    agent.Enqueue(Request(7), 7);
    REQUIRE(agent.Flush(std::chrono::seconds(20)));
    CHECK(agent.stats().sent_samples == 7);
    CHECK(kiln.StoredSamples() == 7);
  }
  {
    // A CA that did not sign kiln's certificate: never delivered, kept for
    // retry (the agent cannot tell a bad certificate from a down server).
    auto agent = Agent({"-tls-ca-file", DataFile("other_ca.pem")}, kiln.Target(true));
    agent.Enqueue(Request(3), 3);
    CHECK_FALSE(agent.Flush(std::chrono::seconds(3)));
    CHECK(agent.stats().sent_samples == 0);
    CHECK(kiln.StoredSamples() == 7);
  }
}
