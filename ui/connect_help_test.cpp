#include "ui/connect_help.h"

#include <doctest/doctest.h>

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

}  // namespace
}  // namespace kiln::ui
