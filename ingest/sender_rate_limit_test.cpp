#include "ingest/sender_rate_limit.h"

#include <doctest/doctest.h>

namespace kiln::ingest {

TEST_CASE("a sender's rate limit: a burst of ten seconds, then its rate, per host") {
  constexpr int64_t kS = 1'000'000'000;
  SenderRateLimit limit(1000);  // 1000 bytes/s, so a bucket of 10,000
  int64_t t = 5 * kS;
  CHECK(limit.Admit("10.0.0.5", 6000, t));
  CHECK(limit.Admit("10.0.0.5", 4000, t));
  CHECK_FALSE(limit.Admit("10.0.0.5", 1, t));  // the burst is spent
  CHECK(limit.Admit("10.0.0.6", 10000, t));    // another host has its own
  t += 2 * kS;                                 // two seconds refill 2000
  CHECK_FALSE(limit.Admit("10.0.0.5", 2500, t));
  CHECK(limit.Admit("10.0.0.5", 2000, t));
  // Idle for a minute: full again, and no fuller than the burst.
  t += 60 * kS;
  CHECK(limit.Admit("10.0.0.5", 10000, t));
  CHECK_FALSE(limit.Admit("10.0.0.5", 1, t));
  // A request larger than the whole bucket passes when the bucket is full,
  // and the debt is paid before the next one.
  t += 60 * kS;
  CHECK(limit.Admit("10.0.0.5", 25000, t));
  t += 20 * kS;  // 20,000 of the 15,000 debt... 5,000 left
  CHECK_FALSE(limit.Admit("10.0.0.5", 6000, t));
  CHECK(limit.Admit("10.0.0.5", 5000, t));
}

TEST_CASE("many hosts: past 4096, the idle ones are forgotten, the charged ones kept") {
  constexpr int64_t kS = 1'000'000'000;
  SenderRateLimit limit(100);  // a bucket of 1000
  for (int i = 0; i < 5000; ++i) CHECK(limit.Admit("host" + std::to_string(i), 1000, 0));
  CHECK(limit.hosts() == 5000);  // every bucket is in debt: none may go
  CHECK_FALSE(limit.Admit("host4999", 1, 0));
  // Twenty seconds on every bucket is full: the next new host clears them.
  CHECK(limit.Admit("new", 10, 20 * kS));
  CHECK(limit.hosts() == 1);
  CHECK(limit.Admit("host4999", 1000, 20 * kS));  // as a new, full bucket
}

}  // namespace kiln::ingest
