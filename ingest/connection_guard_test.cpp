#include "ingest/connection_guard.h"

#include <doctest/doctest.h>
#include <sys/resource.h>

#include <map>

namespace kiln::ingest {
namespace {

// "why:index" for each decision, in index order, to compare as text.
std::map<size_t, ConnectionClose> Decide(const std::vector<ConnectionView>& c, const ConnectionLimits& limits) {
  std::map<size_t, ConnectionClose> out;
  for (const CloseDecision& d : ChooseConnectionsToClose(c, limits)) {
    CHECK_MESSAGE(out.emplace(d.index, d.reason).second, "closed twice: ", d.index);
  }
  return out;
}

ConnectionView Agent(std::string host, int64_t age_ms) {
  return {.host = std::move(host), .age_ms = age_ms, .silent = false, .quiet_ms = 1000};
}

}  // namespace

TEST_CASE("the connection guard's policy") {
  ConnectionLimits limits;
  limits.max_connections = 6;
  limits.max_per_host = 3;

  SUBCASE("agents within the limits are left alone, a long request that still moves too") {
    std::vector<ConnectionView> c = {Agent("10.0.0.1", 3'600'000), Agent("10.0.0.2", 60'000)};
    c[1].partial_bytes = 30 << 20;
    c[1].request_ms = 20'000;
    CHECK(Decide(c, limits).empty());
  }
  SUBCASE("a host past its cap loses its newest connections, not an old agent's") {
    std::vector<ConnectionView> c = {Agent("10.0.0.9", 5'000), Agent("10.0.0.9", 100), Agent("10.0.0.1", 99'000),
                                     Agent("10.0.0.9", 9'000), Agent("10.0.0.9", 200), Agent("10.0.0.9", 7'000)};
    auto d = Decide(c, limits);
    CHECK(d == std::map<size_t, ConnectionClose>{{1, ConnectionClose::kTooManyFromHost},
                                                 {4, ConnectionClose::kTooManyFromHost}});
  }
  SUBCASE("past the total cap the newest go, whichever host") {
    std::vector<ConnectionView> c;
    for (int i = 0; i < 8; ++i) c.push_back(Agent("10.0.1." + std::to_string(i), 1000 * (i + 1)));
    auto d = Decide(c, limits);
    CHECK(d == std::map<size_t, ConnectionClose>{{0, ConnectionClose::kTooMany}, {1, ConnectionClose::kTooMany}});
  }
  SUBCASE("silent, idle, stalled and slow connections go whatever the totals") {
    std::vector<ConnectionView> c = {Agent("a", 60'000), Agent("b", 60'000), Agent("c", 60'000),
                                     Agent("d", 600'000), Agent("e", 5'000)};
    c[0].silent = true;  // connected a minute ago, never said a word
    c[0].quiet_ms = 60'000;
    c[1].quiet_ms = 301'000;  // nothing at all for five minutes
    c[2].partial_bytes = 8 << 20;  // half a request, then nothing for 31 s
    c[2].request_ms = 40'000;
    c[2].quiet_ms = 31'000;
    c[3].partial_bytes = 1 << 20;  // trickling for over two minutes
    c[3].request_ms = 121'000;
    c[4].silent = true;  // just connected: its preface may be on the way
    c[4].quiet_ms = 5'000;
    auto d = Decide(c, limits);
    CHECK(d == std::map<size_t, ConnectionClose>{{0, ConnectionClose::kSilent},
                                                 {1, ConnectionClose::kIdle},
                                                 {2, ConnectionClose::kStalled},
                                                 {3, ConnectionClose::kSlowRequest}});
  }
  SUBCASE("requests being received past the memory budget: the largest go until the rest fit") {
    limits.max_partial_bytes = 100 << 20;
    std::vector<ConnectionView> c;
    for (uint64_t mib : {40, 10, 60, 30}) {
      ConnectionView v = Agent("10.0.2." + std::to_string(mib), 10'000);
      v.partial_bytes = mib << 20;
      v.request_ms = 1'000;
      c.push_back(v);
    }
    auto d = Decide(c, limits);  // 140 MiB: the 60 MiB one goes, 80 MiB stay
    CHECK(d == std::map<size_t, ConnectionClose>{{2, ConnectionClose::kPartialBudget}});
  }
}

TEST_CASE("the soft open-file limit is raised to the hard one") {
  rlimit before{};
  REQUIRE(getrlimit(RLIMIT_NOFILE, &before) == 0);
  rlimit lowered = before;
  lowered.rlim_cur = std::min<rlim_t>(before.rlim_max, 1024);
  REQUIRE(setrlimit(RLIMIT_NOFILE, &lowered) == 0);
  const uint64_t now = RaiseOpenFileLimit();
  rlimit after{};
  REQUIRE(getrlimit(RLIMIT_NOFILE, &after) == 0);
  CHECK(after.rlim_cur == before.rlim_max);
  CHECK(now == (after.rlim_cur == RLIM_INFINITY ? UINT64_MAX : after.rlim_cur));
  REQUIRE(setrlimit(RLIMIT_NOFILE, &before) == 0);
}

}  // namespace kiln::ingest
