#include "ui/status_line.h"

#include <doctest/doctest.h>

namespace kiln::ui {
namespace {

ingest::PeerStats Peer(std::string peer, std::string hosts, std::vector<ingest::PeerStats::KindRate> kinds,
                       uint64_t requests) {
  ingest::PeerStats p;
  p.peer = std::move(peer);
  p.address = p.peer.substr(5, p.peer.rfind(':') - 5);  // as the receiver's PeerHost gives it
  p.hosts = std::move(hosts);
  p.kinds = std::move(kinds);
  p.requests = requests;
  return p;
}

TEST_CASE("the status line gives each kind its own rate and names senders by host") {
  const std::vector<ingest::PeerStats> peers = {
      Peer("ipv4:10.0.0.5:53412", "build-7", {{"On-CPU (samples)", 19}, {"Off-CPU (ns)", 3}}, 120),
      Peer("ipv4:127.0.0.1:40000", "", {{"On-CPU (samples)", 20.5}, {"Off-CPU (ns)", 250}}, 1),
  };
  // Off-CPU events are not on-CPU samples: never one sum.
  CHECK(AgentRatesSummary(peers) == "2 agents: Off-CPU 253/s, On-CPU 39.5/s");
  CHECK(AgentRatesSummary({peers[0]}) == "1 agent: On-CPU 19.0/s, Off-CPU 3.0/s");
  CHECK(AgentRatesSummary({}) == "no agents in the last minute");
  CHECK(AgentRatesSummary({Peer("ipv4:10.0.0.9:1", "", {}, 3)}) == "1 agent, idle");
  // The host name first, the address (not gRPC's peer string) after it.
  CHECK(SenderSummary(peers[0]) == "build-7 (10.0.0.5): On-CPU 19.0/s, Off-CPU 3.0/s, 120 requests");
  CHECK(SenderSummary(peers[1]) == "127.0.0.1: On-CPU 20.5/s, Off-CPU 250/s, 1 request");
}

ingest::ForwardStatus Destination(std::string target, bool connected, std::string last_error, uint64_t owed,
                                  uint64_t bytes, int64_t oldest_ns) {
  ingest::ForwardStatus f;
  f.target = std::move(target);
  f.connected = connected;
  f.last_error = std::move(last_error);
  f.backlog = {.requests = owed, .bytes = bytes, .oldest_ns = oldest_ns};
  return f;
}

TEST_CASE("forwarding in the status line: red only while requests wait on a destination that is down") {
  constexpr int64_t kSecond = 1'000'000'000;
  const int64_t now = 1'700'000'000 * kSecond;
  bool alarm = true;
  CHECK(ForwardingSummary({}, now, &alarm).empty());
  CHECK_FALSE(alarm);
  // Nothing sent yet since kiln started: not an error.
  CHECK(ForwardingSummary({Destination("pyro:4040", false, "", 0, 0, 0)}, now, &alarm) == "forwarding to pyro:4040");
  CHECK_FALSE(alarm);
  CHECK(ForwardingSummary({Destination("pyro:4040", true, "", 0, 0, 0)}, now, &alarm) == "forwarding to pyro:4040");
  CHECK_FALSE(alarm);
  // Connected and catching up: how much, no alarm.
  CHECK(ForwardingSummary({Destination("pyro:4040", true, "", 3, 900, now - kSecond)}, now, &alarm) ==
        "forwarding to pyro:4040: 3 requests owed");
  CHECK_FALSE(alarm);
  // Down with requests owed: red, with the oldest's age.
  CHECK(ForwardingSummary({Destination("pyro:4040", false, "UNAVAILABLE: connection refused", 1200, 3 << 20,
                                       now - 190 * kSecond)},
                          now, &alarm) == "forwarding to pyro:4040: not connected, 1.20k requests (3.0 MiB) owed, "
                                          "oldest 3m 10s");
  CHECK(alarm);
  // Down, owed nothing: said, not red.
  CHECK(ForwardingSummary({Destination("pyro:4040", false, "UNAVAILABLE", 0, 0, 0)}, now, &alarm) ==
        "forwarding to pyro:4040: not connected");
  CHECK_FALSE(alarm);
  // Two destinations: counted, the owed requests added, the oldest of both.
  const std::vector<ingest::ForwardStatus> two = {
      Destination("a:1", true, "", 1, 100, now - 5 * kSecond),
      Destination("b:2", false, "UNAVAILABLE", 1, 200, now - 60 * kSecond),
  };
  CHECK(ForwardingSummary(two, now, &alarm) ==
        "forwarding: 1 of 2 destinations not connected, 2 requests (300 B) owed, oldest 1m 00s");
  CHECK(alarm);
  CHECK(ForwardingSummary({two[0]}, now, &alarm) == "forwarding to a:1: 1 request owed");
  // The tooltip's line per destination is kiln --headless's progress line.
  CHECK(ingest::DescribeForwardStatus(two[1], now) ==
        "forwarding to b:2: not connected, 1 request (200 B) owed, oldest 1m 00s, 0 delivered (UNAVAILABLE)");
}

}  // namespace
}  // namespace kiln::ui
