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

}  // namespace
}  // namespace kiln::ui
