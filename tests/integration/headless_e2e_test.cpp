// End to end through the real binary: OTLP requests from a real gRPC
// client into `kiln --headless`, stop/restart, crash (kill -9), and the
// data read back with `kiln export` and `kiln stats`.
#include <doctest/doctest.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <zlib.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include "absl/strings/str_split.h"
#include "ingest/otlp_request_builder.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.grpc.pb.h"
#include "pprof/profile.pb.h"
#include "storage/model/profile_model.h"
#include "storage/model/spans.h"
#include "storage/store.h"
#include "tests/integration/kiln_process.h"

namespace kiln::testing {
namespace {

namespace otlp = opentelemetry::proto::collector::profiles::v1development;
using ingest::OtlpRequestBuilder;

constexpr uint64_t kT0 = 1'760'000'000'000'000'000;

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

// What the OpenTelemetry eBPF profiler sends for one process: resource
// attributes, thread attributes per sample, native, kernel and
// unsymbolized frames, per-event timestamps.
otlp::ExportProfilesServiceRequest AgentRequest(uint64_t t0, int scale = 1) {
  OtlpRequestBuilder b;
  auto* rp = b.Resource({{"process.executable.name", "app"},
                         {"process.pid", "42"},
                         {"host.name", "laptop"}});
  auto* profile = b.AddProfile(rp, "samples", "count", "cpu", "nanoseconds", t0);
  int32_t exe = b.Mapping("/usr/bin/app", "0123456789abcdef0123456789abcdef");
  int32_t lib = b.Mapping("/usr/lib/libfoo.so");
  int32_t vmlinux = b.Mapping("vmlinux");
  int32_t main_loc = b.Location(exe, 0x1000, {{"main", "app.c", 10}});
  int32_t work = b.Location(exe, 0x1100, {{"work", "app.c", 20}});
  int32_t leaf = b.Location(exe, 0x1200, {{"leaf_a", "app.c", 30}});
  int32_t read = b.Location(exe, 0x1300, {{"read", "io.c", 5}});
  int32_t sys_read = b.Location(vmlinux, 0, {{"sys_read"}}, "kernel");
  int32_t unsym = b.Location(lib, 0x1a2b, {});
  int32_t main_thread = b.StringAttribute("thread.name", "main");
  int32_t worker = b.StringAttribute("thread.name", "worker");
  int32_t s1 = b.Stack({leaf, work, main_loc});
  int32_t s2 = b.Stack({sys_read, read, main_loc});
  int32_t s3 = b.Stack({unsym, main_loc});
  std::vector<uint64_t> three, two, one;
  for (int i = 0; i < 3 * scale; ++i) three.push_back(t0 + i * 1000);
  for (int i = 0; i < 2 * scale; ++i) two.push_back(t0 + 500 + i * 1000);
  one.push_back(t0 + 700);
  OtlpRequestBuilder::AddSample(profile, s1, {main_thread}, three);
  OtlpRequestBuilder::AddSample(profile, s2, {worker}, two);
  OtlpRequestBuilder::AddSample(profile, s3, {main_thread}, one);
  // Off-CPU: a value (nanoseconds) per timestamp.
  auto* off = b.AddProfile(rp, "off_cpu", "nanoseconds", "", "", t0);
  OtlpRequestBuilder::AddSample(off, s2, {worker}, {t0 + 10, t0 + 20}, {1500, 2500});
  return std::move(b.request);
}

grpc::Status Send(const std::string& target, const otlp::ExportProfilesServiceRequest& request,
                  otlp::ExportProfilesServiceResponse* response) {
  auto stub = otlp::ProfilesService::NewStub(grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  ctx.set_compression_algorithm(GRPC_COMPRESS_GZIP);
  return stub->Export(&ctx, request, response);
}

}  // namespace

TEST_CASE("agent data survives stop and restart and comes back through kiln export") {
  TempDir dir;
  {
    HeadlessKiln kiln(dir.path);
    CHECK(kiln.output().find("storing in " + dir.path) != std::string::npos);
    otlp::ExportProfilesServiceResponse response;
    grpc::Status status = Send(kiln.target(), AgentRequest(kT0), &response);
    REQUIRE_MESSAGE(status.ok(), status.error_message());
    CHECK_FALSE(response.has_partial_success());

    // Reading while kiln runs: export opens the store read-only.
    CommandResult live = RunKiln({"export", "--data-dir", dir.path, "--format", "folded"});
    CHECK(live.exit_code == 0);
    CHECK(Lines(live.out).size() == 3);

    CHECK(kiln.Stop(SIGTERM) == 0);
    CHECK(kiln.output().find("stopped") != std::string::npos);
  }
  {
    HeadlessKiln kiln(dir.path);
    otlp::ExportProfilesServiceResponse response;
    REQUIRE(Send(kiln.target(), AgentRequest(kT0 + 60'000'000'000), &response).ok());
    CHECK(kiln.Stop(SIGINT) == 0);
  }
  CommandResult by_process = RunKiln({"export", "--data-dir", dir.path, "--format", "folded"});
  REQUIRE(by_process.exit_code == 0);
  CHECK(Lines(by_process.out) == std::vector<std::string>{
                                     "app;main;libfoo.so+0x1a2b 2",
                                     "app;main;read;sys_read 4",
                                     "app;main;work;leaf_a 6",
                                 });
  CommandResult by_thread =
      RunKiln({"export", "--data-dir", dir.path, "--format", "folded", "--group-by", "thread", "--annotate"});
  CHECK(Lines(by_thread.out) == std::vector<std::string>{
                                    "app;main;main;libfoo.so+0x1a2b 2",
                                    "app;main;main;work;leaf_a 6",
                                    "app;worker;main;read;sys_read_[k] 4",
                                });
  CommandResult off_cpu =
      RunKiln({"export", "--data-dir", dir.path, "--kind", "off-cpu", "--group-by", "none"});
  CHECK(Lines(off_cpu.out) == std::vector<std::string>{"main;read;sys_read 8000"});
  // The first request only: --to is exclusive, RFC 3339 and ns both work.
  CommandResult first = RunKiln({"export", "--data-dir", dir.path, "--from", std::to_string(kT0), "--to",
                                 "2025-10-09T08:54:00Z", "--group-by", "none"});
  CHECK(Lines(first.out) == std::vector<std::string>{
                                "main;libfoo.so+0x1a2b 1", "main;read;sys_read 2", "main;work;leaf_a 3"});
  CommandResult filtered = RunKiln({"export", "--data-dir", dir.path, "--filter", "thread.name=worker"});
  CHECK(Lines(filtered.out) == std::vector<std::string>{"app;main;read;sys_read 4"});

  CommandResult stats = RunKiln({"stats", "--data-dir", dir.path});
  CHECK(stats.exit_code == 0);
  CHECK(stats.out.find("samples:        16") != std::string::npos);  // 12 on-CPU + 4 off-CPU events
  CHECK(stats.out.find("stacks:         3") != std::string::npos);
  CHECK(stats.out.find("time range:     2025-10-09T") != std::string::npos);
}

namespace {

// Two traces and three spans, as the OpenTelemetry profiler links samples
// to the span their thread was in: trace A's span 1 (4 samples on main,
// handle), A's span 2 (2 on worker, query), B's span 3 (1 on main); 3
// samples in no span; and 2 more whose span a pprof-style label says.
struct SpanFixture {
  std::string trace_a = std::string("\x0a\xf7\x65\x19\x16\xcd\x43\xdd\x84\x48\xeb\x21\x1c\x80\x31\x9c", 16);
  std::string trace_b = std::string(16, '\x5b');
  std::string span1 = std::string("\xb7\xad\x6b\x71\x69\x20\x33\x1a", 8);
  std::string span2 = std::string(8, '\x22');
  std::string span3 = std::string(8, '\x33');

  otlp::ExportProfilesServiceRequest Request(uint64_t t0) const {
    OtlpRequestBuilder b;
    auto* rp = b.Resource({{"process.executable.name", "svc"}, {"process.pid", "77"}});
    auto* profile = b.AddProfile(rp, "samples", "count", "cpu", "nanoseconds", t0);
    int32_t exe = b.Mapping("/usr/bin/svc");
    int32_t main_loc = b.Location(exe, 0x1000, {{"main"}});
    int32_t handle = b.Location(exe, 0x1100, {{"handle"}});
    int32_t query = b.Location(exe, 0x1200, {{"query"}});
    int32_t idle = b.Location(exe, 0x1300, {{"idle"}});
    int32_t main_thread = b.StringAttribute("thread.name", "main");
    int32_t worker = b.StringAttribute("thread.name", "worker");
    int32_t labelled_trace = b.StringAttribute("trace_id", "c0ffee00c0ffee00c0ffee00c0ffee00");
    int32_t labelled_span = b.StringAttribute("span_id", "00000000000000c0");
    int32_t s_handle = b.Stack({handle, main_loc});
    int32_t s_query = b.Stack({query, main_loc});
    int32_t s_idle = b.Stack({idle, main_loc});
    auto times = [t0](int first, int n) {
      std::vector<uint64_t> out;
      for (int i = 0; i < n; ++i) out.push_back(t0 + static_cast<uint64_t>(first + i) * 1'000'000);
      return out;
    };
    OtlpRequestBuilder::AddSample(profile, s_handle, {main_thread}, times(0, 4))->set_link_index(b.Link(trace_a, span1));
    OtlpRequestBuilder::AddSample(profile, s_query, {worker}, times(10, 2))->set_link_index(b.Link(trace_a, span2));
    OtlpRequestBuilder::AddSample(profile, s_handle, {main_thread}, times(20, 1))->set_link_index(b.Link(trace_b, span3));
    OtlpRequestBuilder::AddSample(profile, s_idle, {main_thread}, times(30, 3));
    OtlpRequestBuilder::AddSample(profile, s_query, {worker, labelled_trace, labelled_span}, times(40, 2));
    return std::move(b.request);
  }
};

}  // namespace

TEST_CASE("spans: samples linked to two traces and three spans, found by trace and span id, exactly") {
  TempDir dir;
  const SpanFixture f;
  {
    HeadlessKiln kiln(dir.path);
    otlp::ExportProfilesServiceResponse response;
    REQUIRE(Send(kiln.target(), f.Request(kT0), &response).ok());
    CHECK(kiln.Stop(SIGTERM) == 0);
  }
  const std::string a = storage::HexId(f.trace_a), s1 = storage::HexId(f.span1), s2 = storage::HexId(f.span2);
  CHECK(a == "0af7651916cd43dd8448eb211c80319c");  // as OTLP/JSON writes it
  auto folded = [&](const std::string& filter) {
    CommandResult r = RunKiln({"export", "--data-dir", dir.path, "--group-by", "thread", "--filter", filter});
    CHECK_MESSAGE(r.exit_code == 0, r.err);
    return r.out;
  };
  CHECK(folded("trace_id=" + a) == "svc;main;main;handle 4\nsvc;worker;main;query 2\n");
  CHECK(folded("span_id=" + s2) == "svc;worker;main;query 2\n");
  CHECK(folded("span_id=" + storage::HexId(f.span3)) == "svc;main;main;handle 1\n");
  CHECK(folded("trace_id=c0ffee00c0ffee00c0ffee00c0ffee00") == "svc;worker;main;query 2\n");
  CHECK(folded("trace_id=" + std::string(32, '0')).empty());
  // Grouped by span: each sample under the span it was taken in, from its
  // link or its labels.
  CommandResult by_span = RunKiln({"export", "--data-dir", dir.path, "--group-by", "span"});
  CHECK_MESSAGE(by_span.exit_code == 0, by_span.err);
  CHECK(by_span.out ==
        "no span;main;idle 3\n"
        "span 00000000000000c0;main;query 2\n"
        "span 2222222222222222;main;query 2\n"
        "span 3333333333333333;main;handle 1\n"
        "span " + s1 + ";main;handle 4\n");

  // The OTLP export of a span: every sample's link is that span, decoded
  // by the official protobuf classes.
  const std::string out = dir.path + "/span.otlp";
  CommandResult r = RunKiln({"export", "--data-dir", dir.path, "--format", "otlp", "-o", out, "--filter", "span_id=" + s1});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  otlp::ExportProfilesServiceRequest exported;
  {
    // kiln writes OTLP files gzip-compressed.
    gzFile in = gzopen(out.c_str(), "rb");
    REQUIRE(in != nullptr);
    std::string bytes;
    char buf[1 << 14];
    for (int n; (n = gzread(in, buf, sizeof buf)) > 0;) bytes.append(buf, static_cast<size_t>(n));
    gzclose(in);
    REQUIRE(exported.ParseFromString(bytes));
  }
  size_t events = 0;
  for (const auto& rp : exported.resource_profiles()) {
    for (const auto& sp : rp.scope_profiles()) {
      for (const auto& p : sp.profiles()) {
        for (const auto& sample : p.samples()) {
          REQUIRE(sample.link_index() > 0);
          const auto& link = exported.dictionary().link_table(sample.link_index());
          CHECK(link.trace_id() == f.trace_a);
          CHECK(link.span_id() == f.span1);
          events += static_cast<size_t>(sample.timestamps_unix_nano_size());
        }
      }
    }
  }
  CHECK(events == 4);

  // What the Spans view shows: the store's samples per span.
  auto store = storage::Store::Open(dir.path, storage::Store::Mode::kReadOnly);
  REQUIRE(store.ok());
  storage::Query q;
  q.keep_samples = true;
  auto slice = (*store)->Run(q);
  REQUIRE(slice.ok());
  uint64_t unspanned = 0;
  const std::vector<storage::SpanRow> rows = storage::SpansOf(**slice, &unspanned);
  CHECK(unspanned == 3);
  REQUIRE(rows.size() == 4);
  CHECK(rows[0].id == storage::SpanIdentity{a, s1});
  CHECK(rows[0].samples == 4);
  CHECK(rows[0].first_ns == static_cast<int64_t>(kT0));
  CHECK(rows[0].last_ns == static_cast<int64_t>(kT0 + 3'000'000));
  CHECK(rows[0].threads == std::vector<std::string>{"svc [77] \xc2\xb7 main"});
  CHECK(rows[1].id == storage::SpanIdentity{a, s2});
  CHECK(rows[1].samples == 2);
  CHECK(rows[2].id.trace == "c0ffee00c0ffee00c0ffee00c0ffee00");
  CHECK(rows[3].id.span == storage::HexId(f.span3));
  CHECK(rows[3].samples == 1);
}

TEST_CASE("spans: a pprof whose samples carry span_id and trace_id labels (Go's, Java's, Python's SDKs)") {
  TempDir dir;
  perftools::profiles::Profile p;
  for (const char* s : {"", "cpu", "nanoseconds", "main", "handler", "span_id", "trace_id", "0000000000000abc",
                        "4bf92f3577b34da6a3ce929d0e0e4736", "0000000000000def"}) {
    p.add_string_table(s);
  }
  auto* st = p.add_sample_type();
  st->set_type(1);
  st->set_unit(2);
  for (int i = 1; i <= 2; ++i) {
    auto* f = p.add_function();
    f->set_id(i);
    f->set_name(2 + i);
    auto* l = p.add_location();
    l->set_id(i);
    l->add_line()->set_function_id(i);
  }
  auto add = [&](int64_t value, int64_t span) {
    auto* s = p.add_sample();
    s->add_location_id(2);
    s->add_location_id(1);
    s->add_value(value);
    auto* label = s->add_label();
    label->set_key(5);
    label->set_str(span);
    label = s->add_label();
    label->set_key(6);
    label->set_str(8);
  };
  add(30, 7);  // span abc: 30 ns
  add(50, 9);  // span def: 50 ns
  const std::string file = dir.path + "/spans.pb";
  {
    std::ofstream out(file, std::ios::binary);
    REQUIRE(p.SerializeToOstream(&out));
  }
  auto export_span = [&](const std::string& filter) {
    CommandResult r = RunKiln({"export", "--input", file, "--group-by", "none", "--filter", filter});
    CHECK_MESSAGE(r.exit_code == 0, r.err);
    return r.out;
  };
  CHECK(export_span("span_id=0000000000000abc") == "main;handler 30\n");
  CHECK(export_span("span_id=0000000000000def") == "main;handler 50\n");
  CHECK(export_span("trace_id=4bf92f3577b34da6a3ce929d0e0e4736") == "main;handler 80\n");
  CHECK(export_span("span_id=0000000000000123").empty());
}

TEST_CASE("a bad profile is rejected while the good one in the same request is stored") {
  TempDir dir;
  HeadlessKiln kiln(dir.path);
  otlp::ExportProfilesServiceRequest request = AgentRequest(kT0);
  // The off-CPU profile gets a stack index past the stack table.
  request.mutable_resource_profiles(0)->mutable_scope_profiles(0)->mutable_profiles(1)->mutable_samples(0)->set_stack_index(4711);
  otlp::ExportProfilesServiceResponse response;
  REQUIRE(Send(kiln.target(), request, &response).ok());
  CHECK(response.partial_success().rejected_profiles() == 1);
  CHECK(response.partial_success().error_message().find("4711") != std::string::npos);
  CHECK(kiln.Stop(SIGTERM) == 0);
  CHECK(Lines(RunKiln({"export", "--data-dir", dir.path}).out).size() == 3);
  // No off-CPU sample was stored: named by alias or type/unit, an empty
  // export and a note; by a bare name kiln cannot know the unit of, an error.
  CommandResult none = RunKiln({"export", "--data-dir", dir.path, "--sample-type", "off-cpu"});
  CHECK(none.exit_code == 0);
  CHECK(none.out.empty());
  CHECK(none.err.find("no off_cpu/nanoseconds samples (it has: samples/count)") != std::string::npos);
  CommandResult unknown = RunKiln({"export", "--data-dir", dir.path, "--sample-type", "off_cpu"});
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.err.find("no sample type \"off_cpu\" (it has: samples/count)") != std::string::npos);
}

TEST_CASE("kill -9 while a client sends loses no acknowledged sample, round after round") {
  // KILN_KILL_ROUNDS=N for a longer run; the README gives the latest figures.
  constexpr int kSamplesPerRequest = 1000;
  const int rounds =
      std::getenv("KILN_KILL_ROUNDS") ? std::max(1, std::atoi(std::getenv("KILN_KILL_ROUNDS"))) : 20;
  TempDir dir;
  std::set<int> acknowledged;
  int next_request = 0;  // request ids go on across rounds: each is stored once or not at all
  std::mt19937 rng(7);
  const auto started = std::chrono::steady_clock::now();
  for (int round = 0; round < rounds; ++round) {
    HeadlessKiln kiln(dir.path);
    std::atomic<bool> stop{false};
    std::mutex mu;
    size_t acknowledged_this_round = 0;
    // Each request has its own leaf function name and 1,000 samples (an
    // agent's few seconds of a busy host), so the export shows exactly
    // which requests were stored, and whole.
    std::thread sender([&] {
      auto stub = otlp::ProfilesService::NewStub(
          grpc::CreateChannel(kiln.target(), grpc::InsecureChannelCredentials()));
      while (!stop.load()) {
        const int i = next_request++;
        OtlpRequestBuilder b;
        auto* rp = b.Resource({{"process.executable.name", "crashy"}});
        auto* p = b.AddProfile(rp);
        int32_t leaf = b.Location(0, 0, {{"request_" + std::to_string(i)}});
        int32_t root = b.Location(0, 0, {{"main"}});
        std::vector<uint64_t> ts;
        for (int k = 0; k < kSamplesPerRequest; ++k)
          ts.push_back(kT0 + static_cast<uint64_t>(i) * 10'000'000 + k);
        OtlpRequestBuilder::AddSample(p, b.Stack({leaf, root}), {}, ts);
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
        otlp::ExportProfilesServiceResponse response;
        if (stub->Export(&ctx, b.request, &response).ok() && !response.has_partial_success()) {
          std::lock_guard lock(mu);
          acknowledged.insert(i);
          ++acknowledged_this_round;
        }
      }
    });
    // A different moment each round: after 50-400 acknowledged requests,
    // crash kiln mid-stream.
    const size_t kill_after = 50 + rng() % 350;
    for (int waited = 0; waited < 400; ++waited) {
      {
        std::lock_guard lock(mu);
        if (acknowledged_this_round >= kill_after) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    CHECK(kiln.Stop(SIGKILL) == 128 + SIGKILL);
    stop = true;
    sender.join();
    CHECK(acknowledged_this_round >= 50);
    // Every request acknowledged so far, this round's and the earlier
    // rounds', is in the store the crash left.
    CommandResult exported = RunKiln({"export", "--data-dir", dir.path, "--group-by", "none"});
    REQUIRE(exported.exit_code == 0);
    std::set<int> stored;
    for (const std::string& line : Lines(exported.out)) {
      // "main;request_N 1000"
      size_t at = line.find("request_");
      REQUIRE(at != std::string::npos);
      CHECK(line.substr(line.rfind(' ') + 1) == std::to_string(kSamplesPerRequest));
      stored.insert(std::atoi(line.c_str() + at + 8));
    }
    size_t missing = 0;
    for (int i : acknowledged) missing += stored.count(i) == 0 ? 1 : 0;
    CHECK_MESSAGE(missing == 0,
                  missing << " acknowledged requests are missing after kill -9 round " << round);
    MESSAGE("kill -9 round " << round + 1 << "/" << rounds << ": " << acknowledged_this_round
                             << " requests acknowledged this round, " << acknowledged.size() << " ("
                             << acknowledged.size() * kSamplesPerRequest << " samples) in all, "
                             << stored.size() << " stored, " << missing << " missing");
  }
  MESSAGE(
      "kill -9: "
      << rounds << " rounds, " << acknowledged.size() * kSamplesPerRequest
      << " acknowledged samples, none lost, in "
      << std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started).count()
      << " s");
  // The crashed store opens again for writing.
  HeadlessKiln again(dir.path);
  CHECK(again.Stop(SIGTERM) == 0);
}

}  // namespace kiln::testing

namespace kiln::testing {

TEST_CASE("--retention-age deletes what fell out of the window when kiln starts") {
  TempDir dir;
  const uint64_t now = static_cast<uint64_t>(storage::UnixNowNs());
  {
    HeadlessKiln kiln(dir.path, {"--retention-age", "0"});
    otlp::ExportProfilesServiceResponse response;
    REQUIRE(Send(kiln.target(), AgentRequest(now - 3'600'000'000'000), &response).ok());  // an hour ago
    REQUIRE(Send(kiln.target(), AgentRequest(now - 60'000'000'000), &response).ok());     // a minute ago
    CHECK(kiln.Stop(SIGTERM) == 0);
  }
  CHECK(Lines(RunKiln({"export", "--data-dir", dir.path, "--group-by", "none"}).out) ==
        std::vector<std::string>{"main;libfoo.so+0x1a2b 2", "main;read;sys_read 4", "main;work;leaf_a 6"});
  {
    HeadlessKiln kiln(dir.path, {"--retention-age", "30m"});
    CHECK(kiln.output().find("keeping the last 30m") != std::string::npos);
    // The pass at start runs in the background: wait for it.
    std::string stats;
    for (int i = 0; i < 100; ++i) {
      stats = RunKiln({"stats", "--data-dir", dir.path}).out;
      if (stats.find("samples:        8") != std::string::npos) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    CHECK_MESSAGE(stats.find("samples:        8") != std::string::npos, stats);
    CHECK(kiln.Stop(SIGTERM) == 0);
  }
  // Counted under its name, kept by the store.
  CHECK(RunKiln({"stats", "--data-dir", dir.path})
            .out.find("retention_deleted    info                8 samples") != std::string::npos);
  // The hour-old samples are gone, the recent ones kept.
  CHECK(Lines(RunKiln({"export", "--data-dir", dir.path, "--group-by", "none"}).out) ==
        std::vector<std::string>{"main;libfoo.so+0x1a2b 1", "main;read;sys_read 2", "main;work;leaf_a 3"});
}

}  // namespace kiln::testing
