// Prometheus metrics: the text kiln serves is read back by an independent
// parser (Python's prometheus_client, Debian's python3-prometheus-client),
// first from stats built here, then scraped over HTTP from a real receiver
// and store that were sent good and bad requests.
#include "ingest/metrics/metrics_exporter.h"

#include <doctest/doctest.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <future>
#include <map>
#include <string>

#include "ingest/otlp_request_builder.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.grpc.pb.h"
#include "tests/prometheus_scrape.h"
#include "tests/temp_dir.h"

namespace kiln::ingest {
namespace {

namespace collector = opentelemetry::proto::collector::profiles::v1development;
using ::kiln::testing::TempDir;
using ::kiln::testing::HavePrometheusParser;
using ::kiln::testing::ParsePrometheus;
using ::kiln::testing::ScrapeMetrics;


TEST_CASE("metrics: counters, the data-loss table and the store's parts, as a Prometheus parser reads them") {
  REQUIRE_MESSAGE(HavePrometheusParser(), "python3-prometheus-client is the oracle (packaging/debian-packages.txt)");
  ReceiverStats r;
  r.requests = 12;
  r.requests_failed = 2;
  r.profiles_accepted = 20;
  r.samples_accepted = 3456;
  r.losses[static_cast<size_t>(storage::DataLoss::kUndecodable)] = 1;
  r.losses[static_cast<size_t>(storage::DataLoss::kStringTruncated)] = 7;
  r.connections.open = 3;
  r.connections.closed[static_cast<size_t>(ConnectionClose::kIdle)] = 5;
  PeerStats peer;
  peer.address = "10.0.0.5";
  peer.hosts = "build-7";
  peer.kinds = {{"On-CPU (samples)", 19.5}};
  r.peers.push_back(peer);
  storage::StoreStats s;
  s.samples = 900;
  s.disk_bytes = 1 << 20;
  s.part_bytes = {{"samples", 1000}, {"dictionary", 2000}};
  s.samples_deleted_by_retention = 44;
  s.writes_refused = "disk nearly full";
  s.forward = {{"b:4317", {.requests = 5, .bytes = 5000, .oldest_ns = 1'790'000'000'500'000'000}}};

  const std::map<std::string, double> m = ParsePrometheus(MetricsText(MetricFamilies(&r, s)));
  CHECK(m.at("kiln_requests_total{}") == 12);
  CHECK(m.at("kiln_requests_failed_total{}") == 2);
  CHECK(m.at("kiln_samples_accepted_total{}") == 3456);
  CHECK(m.at("kiln_data_lost_total{reason=\"undecodable\",unit=\"requests\"}") == 1);
  CHECK(m.at("kiln_data_lost_total{reason=\"string_truncated\",unit=\"strings\"}") == 7);
  // Every reason has its series, zero until it happens.
  CHECK(m.at("kiln_data_lost_total{reason=\"disk_reserve\",unit=\"requests\"}") == 0);
  CHECK(m.at("kiln_connections_closed_total{reason=\"idle\"}") == 5);
  CHECK(m.at("kiln_connections_open{}") == 3);
  CHECK(m.at("kiln_sender_samples_per_second{host=\"build-7\",sample_type=\"On-CPU (samples)\",sender=\"10.0.0.5\"}") ==
        19.5);
  CHECK(m.at("kiln_store_part_bytes{part=\"dictionary\"}") == 2000);
  CHECK(m.at("kiln_store_disk_bytes{}") == 1 << 20);
  CHECK(m.at("kiln_retention_deleted_samples_total{}") == 44);
  CHECK(m.at("kiln_store_writes_refused{}") == 1);
  CHECK(m.at("kiln_forward_owed_requests{destination=\"b:4317\"}") == 5);
  CHECK(m.at("kiln_forward_owed_bytes{destination=\"b:4317\"}") == 5000);
  CHECK(m.at("kiln_forward_oldest_owed_timestamp_seconds{destination=\"b:4317\"}") == 1'790'000'000.5);
  CHECK(m.at("kiln_data_lost_total{reason=\"forward_dropped\",unit=\"requests\"}") == 0);

  // Not receiving (a window on captures): no receiver series, not zeros;
  // no symbolizer reporting: no symbolizer series.
  const std::map<std::string, double> store_only = ParsePrometheus(MetricsText(MetricFamilies(nullptr, s)));
  CHECK(store_only.count("kiln_requests_total{}") == 0);
  CHECK(store_only.at("kiln_store_samples{}") == 900);
  CHECK(store_only.count("kiln_symbolizer_busy{}") == 0);

  // The background symbolizer: working, 4 waiting, 17 done.
  const SymbolizerFacts symbols{true, 4, 17};
  const std::map<std::string, double> with_symbols = ParsePrometheus(MetricsText(MetricFamilies(&r, s, &symbols)));
  CHECK(with_symbols.at("kiln_symbolizer_busy{}") == 1);
  CHECK(with_symbols.at("kiln_symbolizer_queued_files{}") == 4);
  CHECK(with_symbols.at("kiln_symbolizer_files_done_total{}") == 17);
  CHECK(with_symbols.count("kiln_forward_connected{destination=\"b:4317\"}") == 0);  // no forwarder: absent

  // The forwarder: one destination delivering, one down after a refusal.
  ForwardStatus up, down;
  up.target = "b:4317";
  up.connected = true;
  up.delivered = 250;
  down.target = "c:4040";
  down.rejected = 2;
  down.backlog.dropped = 7;
  down.last_error = "UNAVAILABLE: connection refused";
  const std::map<std::string, double> forwarding =
      ParsePrometheus(MetricsText(MetricFamilies(&r, s, nullptr, {up, down})));
  CHECK(forwarding.at("kiln_forward_connected{destination=\"b:4317\"}") == 1);
  CHECK(forwarding.at("kiln_forward_connected{destination=\"c:4040\"}") == 0);
  CHECK(forwarding.at("kiln_forward_delivered_requests_total{destination=\"b:4317\"}") == 250);
  CHECK(forwarding.at("kiln_forward_refused_requests_total{destination=\"c:4040\"}") == 2);
  CHECK(forwarding.at("kiln_forward_dropped_requests_total{destination=\"c:4040\"}") == 7);
  CHECK(forwarding.at("kiln_forward_dropped_requests_total{destination=\"b:4317\"}") == 0);
}

// One process, `samples` on-CPU samples.
collector::ExportProfilesServiceRequest Request(int samples) {
  OtlpRequestBuilder b;
  const int32_t exe = b.Mapping("/usr/bin/app", "00112233445566778899aabbccddeeff");
  const int32_t stack = b.Stack({b.Location(exe, 0x1234, {{"leaf"}}), b.Location(exe, 0x10, {{"main"}})});
  auto* p = b.AddProfile(b.Resource({{"process.pid", "42"}, {"process.executable.name", "app"}}));
  for (int i = 0; i < samples; ++i)
    OtlpRequestBuilder::AddSample(p, stack, {}, {1'700'000'000'000'000'000ull + i * 1'000'000ull});
  return std::move(b.request);
}

TEST_CASE("metrics: scraped over HTTP from a real receiver, they count what was sent and refused") {
  REQUIRE_MESSAGE(HavePrometheusParser(), "python3-prometheus-client is the oracle (packaging/debian-packages.txt)");
  TempDir dir;
  auto store = storage::Store::Open(dir.path, storage::Store::Mode::kReadWrite);
  REQUIRE(store.ok());
  ReceiverOptions options;
  options.listen_address = "127.0.0.1:0";
  auto receiver = OtlpReceiver::Start(store->get(), options);
  REQUIRE_MESSAGE(receiver.ok(), receiver.status().ToString());
  MetricsSources sources;
  sources.receiver = [r = receiver->get()]() -> std::optional<ReceiverStats> { return r->stats(); };
  sources.store = [s = store->get()] { return s->Stats(); };
  auto exporter = MetricsExporter::Start("127.0.0.1:0", sources, "s3cret");
  REQUIRE_MESSAGE(exporter.ok(), exporter.status().ToString());
  const int port = (*exporter)->port();
  REQUIRE(port > 0);

  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string((*receiver)->port()),
                                     grpc::InsecureChannelCredentials());
  auto stub = collector::ProfilesService::NewStub(channel);
  size_t bytes_sent = 0;
  for (int samples : {30, 12}) {
    grpc::ClientContext context;
    collector::ExportProfilesServiceResponse response;
    const collector::ExportProfilesServiceRequest request = Request(samples);
    bytes_sent += request.ByteSizeLong();
    REQUIRE(stub->Export(&context, request, &response).ok());
  }
  {  // Not a request at all: refused whole, counted as undecodable.
    grpc::GenericStub raw(channel);
    grpc::ClientContext context;
    grpc::Slice slice(std::string("\xff\xff\xff garbage", 12));
    grpc::ByteBuffer request(&slice, 1), response;
    std::promise<grpc::Status> done;
    raw.UnaryCall(&context, "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export",
                  grpc::StubOptions(), &request, &response, [&done](grpc::Status st) { done.set_value(st); });
    CHECK_FALSE(done.get_future().get().ok());
  }

  // Without the token (basic auth's password), nothing is served.
  CHECK(ScrapeMetrics(port).first.find(" 401 ") != std::string::npos);
  // "scraper:s3cret" in base64.
  const auto [status, body] = ScrapeMetrics(port, "c2NyYXBlcjpzM2NyZXQ=");
  REQUIRE_MESSAGE(status.find(" 200 ") != std::string::npos, status);
  const std::map<std::string, double> m = ParsePrometheus(body);
  CHECK(m.at("kiln_requests_total{}") == 3);
  CHECK(m.at("kiln_requests_failed_total{}") == 1);
  CHECK(m.at("kiln_samples_accepted_total{}") == 42);
  // The two requests' bytes and the 12 bytes of garbage.
  CHECK(m.at("kiln_received_bytes_total{}") == static_cast<double>(bytes_sent + 12));
  CHECK(m.at("kiln_data_lost_total{reason=\"undecodable\",unit=\"requests\"}") == 1);
  CHECK(m.at("kiln_store_samples{}") == (*store)->Stats().samples);
  CHECK(m.at("kiln_store_samples{}") == 42);
  CHECK(m.at("kiln_senders{}") == 1);
  CHECK(m.at("kiln_store_disk_bytes{}") > 0);

  // A second exporter on the same port: a clear error, not a crash.
  auto again = MetricsExporter::Start("127.0.0.1:" + std::to_string(port), sources);
  REQUIRE_FALSE(again.ok());
  CHECK(std::string(again.status().message()).find("--metrics-listen 127.0.0.1:") != std::string::npos);

  exporter->reset();
  (*receiver)->Stop();
}

}  // namespace
}  // namespace kiln::ingest
