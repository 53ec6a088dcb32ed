#include "ingest/metrics/metrics_exporter.h"

#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"
#include "prometheus/collectable.h"
#include "prometheus/exposer.h"
#include "prometheus/text_serializer.h"
#include "storage/model/data_loss.h"

namespace kiln::ingest {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// Stable label values for the guard's reasons, in ConnectionClose order.
constexpr std::array<std::string_view, kConnectionCloseCount> kCloseNames = {
    "too_many_from_host", "too_many", "silent", "idle", "stalled", "slow_request", "partial_budget"};

class Families {
 public:
  MetricFamily& Add(std::string name, std::string help, MetricType type) {
    out_.push_back(MetricFamily{std::move(name), std::move(help), type, {}});
    return out_.back();
  }
  void Counter(std::string name, std::string help, double value) {
    Add(std::move(name), std::move(help), MetricType::Counter).metric.push_back(CounterValue(value, {}));
  }
  void Gauge(std::string name, std::string help, double value) {
    Add(std::move(name), std::move(help), MetricType::Gauge).metric.push_back(GaugeValue(value, {}));
  }
  static ClientMetric CounterValue(double value, std::vector<ClientMetric::Label> labels) {
    ClientMetric m;
    m.label = std::move(labels);
    m.counter.value = value;
    return m;
  }
  static ClientMetric GaugeValue(double value, std::vector<ClientMetric::Label> labels) {
    ClientMetric m;
    m.label = std::move(labels);
    m.gauge.value = value;
    return m;
  }
  std::vector<MetricFamily> Take() { return std::move(out_); }

 private:
  std::vector<MetricFamily> out_;
};

double D(uint64_t v) { return static_cast<double>(v); }

void AddReceiver(const ReceiverStats& r, Families& f) {
  f.Counter("kiln_requests_total", "OTLP Export requests received since start", D(r.requests));
  f.Counter("kiln_requests_failed_total", "Requests answered with an error (refused whole)", D(r.requests_failed));
  f.Counter("kiln_requests_unauthenticated_total", "Requests refused for a missing or wrong token",
            D(r.requests_unauthenticated));
  f.Counter("kiln_received_bytes_total", "Request bytes received (as sent, compressed or not) from senders that may send",
            D(r.bytes_received));
  f.Counter("kiln_profiles_accepted_total", "Profiles stored", D(r.profiles_accepted));
  f.Counter("kiln_profiles_rejected_total", "Profiles refused (a bad index, sample shape or layout)",
            D(r.profiles_rejected));
  f.Counter("kiln_samples_accepted_total", "Samples stored", D(r.samples_accepted));
  // The named data-loss table: one series per reason, zeros included, so
  // an alert can name a reason before it first happens.
  MetricFamily& loss = f.Add("kiln_data_lost_total",
                             "Data refused or cut since start, by reason; `unit` says what one count is",
                             MetricType::Counter);
  for (const storage::DataLossInfo& info : storage::DataLossTable()) {
    loss.metric.push_back(Families::CounterValue(
        D(r.losses[static_cast<size_t>(info.reason)]),
        {{"reason", std::string(info.name)}, {"unit", std::string(info.unit)}}));
  }
  f.Gauge("kiln_connections_open", "Connections to the receiver at the guard's last look", D(r.connections.open));
  MetricFamily& closed =
      f.Add("kiln_connections_closed_total", "Connections the receiver closed, by reason", MetricType::Counter);
  for (size_t i = 0; i < kConnectionCloseCount; ++i)
    closed.metric.push_back(
        Families::CounterValue(D(r.connections.closed[i]), {{"reason", std::string(kCloseNames[i])}}));
  f.Gauge("kiln_senders", "Senders seen in the last minute", D(r.peers.size()));
  // Per sender: a rate over the last ~10 s (a gauge: senders come and go,
  // and their totals restart when they do).
  MetricFamily& rates = f.Add("kiln_sender_samples_per_second",
                              "Samples per second from each sender seen in the last minute, by sample type",
                              MetricType::Gauge);
  for (const PeerStats& p : r.peers) {
    for (const PeerStats::KindRate& k : p.kinds)
      rates.metric.push_back(Families::GaugeValue(
          k.per_second, {{"sender", p.address}, {"host", p.hosts}, {"sample_type", k.kind}}));
  }
}

void AddStore(const storage::StoreStats& s, Families& f) {
  f.Gauge("kiln_store_samples", "Sample entries held in the store, all types", D(s.samples));
  MetricFamily& types =
      f.Add("kiln_store_samples_by_type", "Sample entries held in the store, by sample type", MetricType::Gauge);
  for (const storage::SampleTypeCount& t : s.sample_types)
    types.metric.push_back(Families::GaugeValue(
        D(t.samples), {{"type", t.info.type.type}, {"unit", t.info.type.unit}}));
  f.Gauge("kiln_store_disk_bytes", "Every file in the data directory", D(s.disk_bytes));
  MetricFamily& parts = f.Add("kiln_store_part_bytes", "Table and blob files of each part of the store",
                              MetricType::Gauge);
  for (const storage::StoreStats::PartBytes& p : s.part_bytes)
    parts.metric.push_back(Families::GaugeValue(D(p.bytes), {{"part", p.part}}));
  f.Gauge("kiln_store_oldest_sample_timestamp_seconds", "Unix time of the oldest sample held (0: empty)",
          static_cast<double>(s.first_sample_ns) / 1e9);
  f.Gauge("kiln_store_newest_sample_timestamp_seconds", "Unix time of the newest sample held (0: empty)",
          static_cast<double>(s.last_sample_ns) / 1e9);
  f.Counter("kiln_retention_deleted_samples_total", "Samples retention deleted since the store was opened",
            D(s.samples_deleted_by_retention));
  f.Counter("kiln_dictionary_forgotten_entries_total",
            "Dictionary entries no sample used any more, forgotten since the store was opened",
            D(s.dictionary_entries_forgotten));
  f.Gauge("kiln_dictionary_memory_bytes", "Memory the dictionary holds", D(s.dictionary_memory_bytes));
  f.Gauge("kiln_dictionary_memory_limit_bytes", "The dictionary's memory budget (0: none)",
          D(s.dictionary_memory_limit_bytes));
  f.Gauge("kiln_disk_free_bytes", "Free space on the store's filesystem at the disk guard's last look",
          D(s.disk_free_bytes));
  f.Gauge("kiln_store_writes_refused", "1 while new data is refused (the disk is nearly full), else 0",
          s.writes_refused.empty() ? 0 : 1);
  // --forward: what is owed to each destination (kept in the store).
  if (!s.forward.empty()) {
    MetricFamily& owed = f.Add("kiln_forward_owed_requests", "Requests owed to a --forward destination",
                               MetricType::Gauge);
    MetricFamily& bytes = f.Add("kiln_forward_owed_bytes", "Request bytes owed to a --forward destination",
                                MetricType::Gauge);
    MetricFamily& oldest = f.Add("kiln_forward_oldest_owed_timestamp_seconds",
                                 "Unix time the oldest request owed to a --forward destination arrived (0: none)",
                                 MetricType::Gauge);
    for (const storage::StoreStats::ForwardQueue& q : s.forward) {
      owed.metric.push_back(Families::GaugeValue(D(q.backlog.requests), {{"destination", q.destination}}));
      bytes.metric.push_back(Families::GaugeValue(D(q.backlog.bytes), {{"destination", q.destination}}));
      oldest.metric.push_back(Families::GaugeValue(static_cast<double>(q.backlog.oldest_ns) / 1e9,
                                                   {{"destination", q.destination}}));
    }
  }
}

// --forward: each destination's state as the forwarder has it (what is
// owed is the store's, above).
void AddForwarding(const std::vector<ForwardStatus>& forwarding, Families& f) {
  MetricFamily& connected = f.Add("kiln_forward_connected",
                                  "1 when the last attempt to a --forward destination delivered, else 0",
                                  MetricType::Gauge);
  MetricFamily& delivered = f.Add("kiln_forward_delivered_requests_total",
                                  "Requests a --forward destination accepted since kiln started", MetricType::Counter);
  MetricFamily& refused = f.Add("kiln_forward_refused_requests_total",
                                "Requests a --forward destination refused as invalid (dropped) since kiln started",
                                MetricType::Counter);
  MetricFamily& dropped = f.Add("kiln_forward_dropped_requests_total",
                                "Requests owed to a --forward destination dropped over --forward-max-queue since "
                                "kiln started",
                                MetricType::Counter);
  for (const ForwardStatus& s : forwarding) {
    dropped.metric.push_back(Families::CounterValue(D(s.backlog.dropped), {{"destination", s.target}}));
    connected.metric.push_back(Families::GaugeValue(s.connected ? 1 : 0, {{"destination", s.target}}));
    delivered.metric.push_back(Families::CounterValue(D(s.delivered), {{"destination", s.target}}));
    refused.metric.push_back(Families::CounterValue(D(s.rejected), {{"destination", s.target}}));
  }
}

void AddSymbolizer(const SymbolizerFacts& s, Families& f) {
  f.Gauge("kiln_symbolizer_busy", "1 while the symbolizer reads or downloads symbols for an executable, else 0",
          s.busy ? 1 : 0);
  f.Gauge("kiln_symbolizer_queued_files", "Executables and files waiting for the symbolizer", D(s.queued));
  f.Counter("kiln_symbolizer_files_done_total", "Executables and files the symbolizer finished since kiln started",
            D(s.done));
}

class Collector : public prometheus::Collectable {
 public:
  explicit Collector(MetricsSources sources) : sources_(std::move(sources)) {}
  std::vector<MetricFamily> Collect() const override {
    std::optional<ReceiverStats> receiver = sources_.receiver ? sources_.receiver() : std::nullopt;
    std::optional<SymbolizerFacts> symbols = sources_.symbols ? sources_.symbols() : std::nullopt;
    return MetricFamilies(receiver ? &*receiver : nullptr, sources_.store(), symbols ? &*symbols : nullptr,
                          sources_.forwarding ? sources_.forwarding() : std::vector<ForwardStatus>{});
  }

 private:
  MetricsSources sources_;
};

class ExporterImpl : public MetricsExporter {
 public:
  ExporterImpl(std::unique_ptr<prometheus::Exposer> exposer, std::shared_ptr<Collector> collector)
      : exposer_(std::move(exposer)), collector_(std::move(collector)) {}
  ~ExporterImpl() override { exposer_.reset(); }  // its threads stop before the collector goes
  int port() const override {
    std::vector<int> ports = exposer_->GetListeningPorts();
    return ports.empty() ? 0 : ports.front();
  }

 private:
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::shared_ptr<Collector> collector_;
};

}  // namespace

std::vector<MetricFamily> MetricFamilies(const ReceiverStats* receiver, const storage::StoreStats& store,
                                         const SymbolizerFacts* symbols,
                                         const std::vector<ForwardStatus>& forwarding) {
  Families f;
  if (receiver) AddReceiver(*receiver, f);
  AddStore(store, f);
  if (!forwarding.empty()) AddForwarding(forwarding, f);
  if (symbols) AddSymbolizer(*symbols, f);
  return f.Take();
}

std::string MetricsText(const std::vector<MetricFamily>& families) {
  return prometheus::TextSerializer().Serialize(families);
}

absl::StatusOr<std::unique_ptr<MetricsExporter>> MetricsExporter::Start(const std::string& address,
                                                                        MetricsSources sources,
                                                                        const std::string& token) {
  auto collector = std::make_shared<Collector>(std::move(sources));
  std::unique_ptr<prometheus::Exposer> exposer;
  try {
    exposer = std::make_unique<prometheus::Exposer>(address, 2);
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("--metrics-listen ", address, ": cannot serve there (", e.what(),
                                               "); is the port in use?"));
  }
  exposer->RegisterCollectable(collector);
  if (!token.empty())
    exposer->RegisterAuth([token](const std::string&, const std::string& password) { return password == token; },
                          "kiln metrics");
  return std::unique_ptr<MetricsExporter>(new ExporterImpl(std::move(exposer), std::move(collector)));
}

}  // namespace kiln::ingest
