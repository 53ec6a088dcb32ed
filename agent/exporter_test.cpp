#include "exporter.h"

#include <doctest/doctest.h>

#include "test_receiver.h"

using namespace kiln::agent;

namespace {

ExportRequest RequestOfSize(std::size_t bytes) {
  ExportRequest r;
  r.mutable_dictionary()->add_string_table("");
  r.mutable_dictionary()->add_string_table(std::string(bytes, 'x'));
  return r;
}

}  // namespace

TEST_CASE("exporter: retries UNAVAILABLE with backoff and delivers in order") {
  kiln::agent::testing::TestReceiver receiver;
  receiver.FailNextCalls(2);
  OtlpExporter exporter({.target = receiver.address(), .disable_tls = true});
  exporter.Enqueue(RequestOfSize(10), 1);
  exporter.Enqueue(RequestOfSize(20), 2);
  REQUIRE(exporter.Flush(std::chrono::seconds(20)));
  ExporterStats s = exporter.stats();
  CHECK(s.retries == 2);
  CHECK(s.sent_requests == 2);
  CHECK(s.sent_samples == 3);
  CHECK(s.dropped_requests == 0);
  auto got = receiver.requests();
  REQUIRE(got.size() == 2);
  CHECK(got[0].dictionary().string_table(1).size() == 10);
  CHECK(got[1].dictionary().string_table(1).size() == 20);
}

TEST_CASE("exporter: unsent data is bounded, the oldest is dropped and counted") {
  // Nothing listens on port 1: every attempt is UNAVAILABLE.
  OtlpExporter exporter({.target = "127.0.0.1:1", .disable_tls = true, .max_unsent_bytes = 10000});
  for (int i = 0; i < 10; ++i) exporter.Enqueue(RequestOfSize(3000), 100);
  ExporterStats s = exporter.stats();
  CHECK(s.dropped_requests >= 6);
  CHECK(s.dropped_samples == s.dropped_requests * 100);
  CHECK(s.queued_bytes <= 10000 + 3100);
  CHECK(s.sent_requests == 0);
  CHECK(exporter.CheckReachable(std::chrono::milliseconds(200)).find("not reachable") != std::string::npos);
}

TEST_CASE("exporter: requests are gzip-compressed") {
  // A receiver that refuses gzip rejects every request the exporter sends.
  kiln::agent::testing::TestReceiver no_gzip(/*accept_gzip=*/false);
  OtlpExporter exporter({.target = no_gzip.address(), .disable_tls = true});
  exporter.Enqueue(RequestOfSize(100), 1);
  REQUIRE(exporter.Flush(std::chrono::seconds(10)));
  CHECK(exporter.stats().sent_requests == 0);
  CHECK(exporter.stats().dropped_requests == 1);
  CHECK(no_gzip.requests().empty());
}
