#include "ui/connect_help.h"

#include <doctest/doctest.h>

#include <set>
#include <string>

namespace kiln::ui {
namespace {

TEST_CASE("the port comes from the receiver's listen address") {
  CHECK(PortOf("0.0.0.0:11000") == "11000");
  CHECK(PortOf("[::]:4317") == "4317");
  CHECK(PortOf("127.0.0.1:") == "");
  CHECK(PortOf("nonsense") == "");
  CHECK(LoopbackOnly("127.0.0.1:11000"));
  CHECK(LoopbackOnly("[::1]:11000"));
  CHECK(!LoopbackOnly("0.0.0.0:11000"));
}

TEST_CASE("recipes name this machine's first address and the receiver's port") {
  const auto r = ConnectRecipes("0.0.0.0:12345", {"192.168.1.20", "10.0.0.5"});
  REQUIRE(r.size() == 5);
  CHECK(r[0].text == "sudo kiln-agent -collection-agent=127.0.0.1:12345 -disable-tls");
  CHECK(r[1].text == "sudo kiln-agent -collection-agent=192.168.1.20:12345 -disable-tls");
  CHECK(r[2].text == "sudo ebpf-profiler -collection-agent=192.168.1.20:12345 -disable-tls");
  CHECK(r[3].text.find("    endpoint: 192.168.1.20:12345\n") != std::string::npos);
  CHECK(r[3].text.find("      receivers: [profiling]\n      exporters: [otlp]\n") != std::string::npos);
  CHECK(r[4].text ==
        "ssh -R 12345:localhost:12345 USER@HOST\n"
        "sudo kiln-agent -collection-agent=127.0.0.1:12345 -disable-tls");
}

TEST_CASE("IPv6 addresses get brackets; a loopback-only receiver names no address") {
  auto r = ConnectRecipes("[::]:11000", {"fd00::7"});
  CHECK(r[1].text == "sudo kiln-agent -collection-agent=[fd00::7]:11000 -disable-tls");
  r = ConnectRecipes("127.0.0.1:11000", {"192.168.1.20"});
  CHECK(r[1].text == "sudo kiln-agent -collection-agent=THIS-MACHINE:11000 -disable-tls");
  r = ConnectRecipes("bad", {});
  CHECK(r[0].text == "sudo kiln-agent -collection-agent=127.0.0.1:11000 -disable-tls");
}

TEST_CASE(
    "with a token the agents pass it and the Collector sends the header; the standalone profiler cannot") {
  const ReceiverAccess access{.token = true, .token_file = "/home/u/.config/kiln/auth-token"};
  const auto r = ConnectRecipes("0.0.0.0:11000", {"192.168.1.20"}, access);
  REQUIRE(r.size() == 5);
  CHECK(r[0].text ==
        "sudo kiln-agent -collection-agent=127.0.0.1:11000 -disable-tls -auth-token-file "
        "/home/u/.config/kiln/auth-token");
  CHECK(r[1].text ==
        "sudo kiln-agent -collection-agent=192.168.1.20:11000 -disable-tls -auth-token-file TOKEN-FILE");
  CHECK(r[1].explanation.find("Copy the token file (/home/u/.config/kiln/auth-token)") != std::string::npos);
  CHECK(r[2].explanation.find("cannot send a token") != std::string::npos);
  CHECK(r[3].text.find("    headers:\n      authorization: \"Bearer ${env:KILN_TOKEN}\"\n") !=
        std::string::npos);
  CHECK(r[4].text.find("-auth-token-file TOKEN-FILE") != std::string::npos);
}

TEST_CASE("with TLS the agents verify kiln's certificate instead of -disable-tls") {
  const auto r = ConnectRecipes("0.0.0.0:11000", {"192.168.1.20"}, {.tls = true});
  CHECK(r[0].text == "sudo kiln-agent -collection-agent=localhost:11000 -tls-ca-file CA.pem");
  CHECK(r[1].text == "sudo kiln-agent -collection-agent=192.168.1.20:11000 -tls-ca-file CA.pem");
  CHECK(r[3].text.find("    tls:\n      ca_file: CA.pem\n") != std::string::npos);
  CHECK(r[3].text.find("insecure") == std::string::npos);
}

TEST_CASE("the agent's command is the one beside this kiln, else on sudo's path, else how to get it") {
  std::set<std::string> files;
  const auto exists = [&files](const std::string& p) { return files.count(p) > 0; };
  // A source build: build/app/kiln and build/agent/kiln-agent, on nobody's PATH.
  files = {"/home/u/kiln/build/agent/kiln-agent", "/usr/bin/kiln-agent"};
  CHECK(LocalAgentCommand("/home/u/kiln/build/app/kiln", "/usr/bin:/bin", exists) ==
        "/home/u/kiln/build/agent/kiln-agent");
  // Installed side by side (the packages, or cmake --install).
  files = {"/usr/bin/kiln-agent"};
  CHECK(LocalAgentCommand("/usr/bin/kiln", "/usr/bin:/bin", exists) == "kiln-agent");
  files = {"/usr/local/bin/kiln-agent"};
  CHECK(LocalAgentCommand("/usr/local/bin/kiln", "", exists) == "kiln-agent");
  // On the user's PATH but where sudo does not look: the whole path.
  files = {"/home/u/.local/bin/kiln-agent"};
  CHECK(LocalAgentCommand("/opt/kiln/kiln", "/home/u/.local/bin:/usr/bin", exists) ==
        "/home/u/.local/bin/kiln-agent");
  // Relative PATH entries are not offered; nothing found is "".
  files = {"bin/kiln-agent"};
  CHECK(LocalAgentCommand("/opt/kiln/kiln", "bin::/usr/bin", exists) == "");
  CHECK(LocalAgentCommand("", "", exists) == "");

  auto r = ConnectRecipes("0.0.0.0:11000", {"192.168.1.20"}, {}, "/home/u/kiln/build/agent/kiln-agent");
  CHECK(r[0].text == "sudo /home/u/kiln/build/agent/kiln-agent -collection-agent=127.0.0.1:11000 -disable-tls");
  // Another host runs its own copy.
  CHECK(r[1].text == "sudo kiln-agent -collection-agent=192.168.1.20:11000 -disable-tls");
  r = ConnectRecipes("0.0.0.0:11000", {"192.168.1.20"}, {}, "");
  CHECK(r[0].text == "sudo kiln-agent -collection-agent=127.0.0.1:11000 -disable-tls");
  CHECK(r[0].explanation.find("kiln-agent is not on this machine") != std::string::npos);
  CHECK(r[0].explanation.find("build/agent/kiln-agent") != std::string::npos);
}

TEST_CASE("the access summary warns only when any host that reaches the port can send") {
  bool warn = false;
  CHECK(AccessSummary("0.0.0.0:11000", {}, &warn) == "open to the network, no token");
  CHECK(warn);
  CHECK(AccessSummary("127.0.0.1:11000", {}, &warn) == "loopback only, no token");
  CHECK_FALSE(warn);
  CHECK(AccessSummary("0.0.0.0:11000", {.token = true}, &warn) == "open to the network, token required");
  CHECK_FALSE(warn);
  CHECK(AccessSummary("[::]:11000", {.token = false, .tls = true}, &warn) ==
        "open to the network, TLS, no token");
  CHECK(warn);  // TLS hides the data, not who may send it
  CHECK(AccessSummary("0.0.0.0:11000", {.tls = true, .client_certificates = true}, &warn) ==
        "open to the network, mutual TLS, no token");
  CHECK_FALSE(warn);
}

}  // namespace
}  // namespace kiln::ui
