#include "app/receiver_control.h"

#include <doctest/doctest.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <map>

#include "ingest/receiver_security.h"
#include "tests/secret_file.h"
#include "tests/temp_dir.h"

namespace kiln::app {
namespace {

using ::kiln::testing::TempDir;

std::function<const char*(const char*)> Env(std::map<std::string, std::string> env) {
  return [env = std::move(env)](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
}

}  // namespace

TEST_CASE("the token: --auth-token-file, else KILN_AUTH_TOKEN, else the window's saved file") {
  TempDir dir;
  const std::string flag_file = dir.path + "/flag-token", saved = dir.path + "/kiln/auth-token";
  kiln::testing::WriteSecretFile(flag_file, "from-flag\n");
  REQUIRE(ingest::WriteTokenFile(saved, "from-window").ok());

  auto both =
      ResolveReceiverOptions({.auth_token_file = flag_file}, Env({{"KILN_AUTH_TOKEN", "from-env"}}), saved);
  REQUIRE(both.ok());
  CHECK(both->options.security.auth_token == "from-flag");
  CHECK(both->token_file == flag_file);
  CHECK(both->options.listen_address == "0.0.0.0:11000");

  auto env = ResolveReceiverOptions({}, Env({{"KILN_AUTH_TOKEN", "from-env"}}), saved);
  CHECK(env->options.security.auth_token == "from-env");
  CHECK(env->token_file.empty());
  CHECK(env->token_source == "KILN_AUTH_TOKEN");

  auto window = ResolveReceiverOptions({}, Env({}), saved, "127.0.0.1:11000");
  CHECK(window->options.security.auth_token == "from-window");
  CHECK(window->token_file == saved);
  CHECK(window->options.listen_address == "127.0.0.1:11000");  // the saved choice
  auto flag_listen =
      ResolveReceiverOptions({.listen_address = "0.0.0.0:4000"}, Env({}), saved, "127.0.0.1:11000");
  CHECK(flag_listen->options.listen_address == "0.0.0.0:4000");  // --listen wins

  auto none = ResolveReceiverOptions({}, Env({}), dir.path + "/no-such-file");
  CHECK(none->options.security.auth_token.empty());

  CHECK(ResolveReceiverOptions({}, Env({{"KILN_AUTH_TOKEN", "two words"}}), "").status().message() ==
        "KILN_AUTH_TOKEN holds a character a header cannot carry (use printable ASCII)");
  CHECK(ResolveReceiverOptions({.auth_token_file = dir.path + "/missing"}, Env({}), "").status().message() ==
        "token file " + dir.path + "/missing does not exist");
  CHECK(ResolveReceiverOptions({.tls_cert_file = flag_file}, Env({}), "").status().message() ==
        "TLS certificate file " + flag_file + " is not PEM (no '-----BEGIN' line)");
  CHECK(SavedTokenFile("/home/u/.config/kiln/settings.ini") == "/home/u/.config/kiln/auth-token");
}

TEST_CASE("ReceiverControl restarts with a token: the old port is freed, the new rules apply at once") {
  TempDir dir;
  auto store = storage::Store::Open(dir.path + "/store", storage::Store::Mode::kReadWrite);
  REQUIRE(store.ok());
  ReceiverControl control(**store);
  CHECK_FALSE(control.stats().has_value());

  ResolvedReceiver open;
  open.options.listen_address = "127.0.0.1:0";
  REQUIRE(control.Start(open).ok());
  REQUIRE(control.stats().has_value());
  CHECK_FALSE(control.stats()->token_required);

  // Take the port it got, then restart on that same port with a token, as
  // the window's "Require a token" does.
  const std::string address = control.stats()->listen_address;
  ResolvedReceiver guarded = open;
  guarded.options.listen_address = address;
  guarded.options.security.auth_token = "t0ken";
  REQUIRE(control.Start(guarded).ok());
  CHECK(control.stats()->token_required);
  CHECK(control.stats()->listen_address == address);
  CHECK(control.resolved().options.security.auth_token == "t0ken");

  // A request without the token is refused by the restarted receiver.
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Slice empty(std::string(""));
  grpc::ByteBuffer request(&empty, 1), response;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export",
                 grpc::StubOptions(), &request, &response,
                 [&done](grpc::Status s) { done.set_value(std::move(s)); });
  CHECK(done.get_future().get().error_code() == grpc::StatusCode::UNAUTHENTICATED);

  // A restart that cannot bind keeps the receiver it had.
  ResolvedReceiver bad = guarded;
  bad.options.listen_address = "203.0.113.1:1";  // not an address of this machine
  CHECK_FALSE(control.Start(bad).ok());
  REQUIRE(control.stats().has_value());
  CHECK(control.stats()->listen_address == address);
  CHECK(control.stats()->token_required);
  control.Stop();
  CHECK_FALSE(control.stats().has_value());
}

}  // namespace kiln::app
