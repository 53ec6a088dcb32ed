// Reliability: strangers' connections against the real `kiln --headless`,
// started with the usual desktop soft limit of 1,024 open files.
// - 1,100 idle TCP connections (no byte sent) from another address: kiln
//   keeps accepting, an agent is served during and after, and the idle
//   ones are closed (gRPC 1.51 alone stopped accepting for good).
// - 10 connections x 20 streams, each declaring a 64 MiB request and
//   sending 8 MiB of it, spoken in raw HTTP/2 (as a hostile peer would):
//   kiln's memory stays within its budget and an agent is served during
//   and after (RSS grew to 1.7 GB before).
// - 40,000 distinct 16,000-byte attribute values (614 MiB) over 8 keys:
//   the sender's byte budget holds them, the rest is stored as "other" and
//   counted (RSS grew to 1.7 GB and stayed before; with one key's budget
//   alone, values spread over keys could fill the dictionary's).
// Prints its figures. Every address is on this machine's loopback.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "ingest/otlp_request_builder.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.grpc.pb.h"
#include "storage/store.h"
#include "tests/integration/kiln_process.h"
#include "tests/temp_dir.h"

namespace {

namespace collector = opentelemetry::proto::collector::profiles::v1development;
using Clock = std::chrono::steady_clock;

// A socket from `source` (another loopback address: a stranger is not the
// agent's host) to kiln; -1 on failure.
int ConnectFrom(const char* source, int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in from{};
  from.sin_family = AF_INET;
  inet_pton(AF_INET, source, &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
      connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// An agent's export: OK within 10 s, retrying on UNAVAILABLE as agents do.
bool AgentExport(const std::string& target, int index) {
  kiln::ingest::OtlpRequestBuilder b;
  int32_t exe = b.Mapping("/usr/bin/agent_app", "00112233445566778899aabbccddeeff");
  int32_t stack = b.Stack({b.Location(exe, 0x1000, {}), b.Location(exe, 0x10, {{"main", "app.c", 3}})});
  auto* p = b.AddProfile(b.Resource({{"process.pid", "4242"}}));
  const uint64_t t0 = 1'700'000'000'000'000'000ull + uint64_t(index) * 1'000'000'000ull;
  for (int i = 0; i < 100; ++i) kiln::ingest::OtlpRequestBuilder::AddSample(p, stack, {}, {t0 + uint64_t(i)});
  auto channel = grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
  auto stub = collector::ProfilesService::NewStub(channel);
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < deadline) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    collector::ExportProfilesServiceResponse response;
    grpc::Status s = stub->Export(&context, b.request, &response);
    if (s.ok()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

// A process's resident memory, its peak looked at every 50 ms until Stop().
class PeakRss {
 public:
  explicit PeakRss(int pid) : pid_(pid), start_(kiln::testing::ResidentMiB(pid)), peak_(start_) {
    thread_ = std::thread([this] {
      while (!done_) {
        peak_ = std::max(peak_.load(), kiln::testing::ResidentMiB(pid_));
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
  }
  ~PeakRss() { Stop(); }
  void Stop() {
    if (!done_.exchange(true)) thread_.join();
  }
  long start() const { return start_; }
  long peak() const { return peak_.load(); }

 private:
  int pid_;
  long start_;
  std::atomic<long> peak_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

size_t OpenFiles(int pid) {
  size_t n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++n;
  }
  return n;
}

// Sets this process's soft open-file limit; returns the old one.
rlim_t SetSoftFileLimit(rlim_t soft) {
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  const rlim_t old = limit.rlim_cur;
  limit.rlim_cur = std::min(soft, limit.rlim_max);
  setrlimit(RLIMIT_NOFILE, &limit);
  return old;
}

// ---------------------------------------------------------------------------
// A hostile HTTP/2 peer: declares big gRPC requests and sends only part of
// each, obeying flow control (so kiln cannot tell it from a slow agent by
// protocol errors). Stops at `until`, when kiln closes it, or when done.

void PutFrameHeader(std::string* out, uint32_t length, uint8_t type, uint8_t flags, uint32_t stream) {
  out->push_back(static_cast<char>(length >> 16));
  out->push_back(static_cast<char>(length >> 8));
  out->push_back(static_cast<char>(length));
  out->push_back(static_cast<char>(type));
  out->push_back(static_cast<char>(flags));
  for (int shift : {24, 16, 8, 0}) out->push_back(static_cast<char>(stream >> shift));
}

void PutHeader(std::string* block, std::string_view name, std::string_view value) {
  block->push_back(0x00);  // literal, not indexed, new name; lengths < 127, no Huffman
  block->push_back(static_cast<char>(name.size()));
  block->append(name);
  block->push_back(static_cast<char>(value.size()));
  block->append(value);
}

struct PartialSender {
  uint64_t sent = 0;
  bool closed_by_kiln = false;
};

PartialSender SendPartialRequests(const char* source, int port, int streams, uint32_t declared, uint64_t each,
                                  Clock::time_point until) {
  PartialSender result;
  int fd = ConnectFrom(source, port);
  if (fd < 0) {
    result.closed_by_kiln = true;
    return result;
  }
  fcntl(fd, F_SETFL, O_NONBLOCK);
  std::string out = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  PutFrameHeader(&out, 0, 4, 0, 0);  // SETTINGS
  int64_t conn_window = 65535, initial_stream_window = 65535;
  std::vector<int64_t> stream_window(streams, 65535), stream_sent(streams, 0);
  std::vector<bool> headers_sent(streams, false);
  std::string in;
  const std::string chunk(16384 - 9, 'x');
  while (Clock::now() < until) {
    // Queue what flow control allows.
    if (out.size() < 65536) {
      for (int s = 0; s < streams && out.size() < 262144; ++s) {
        const uint32_t id = 1 + 2 * static_cast<uint32_t>(s);
        if (!headers_sent[s]) {
          std::string block;
          PutHeader(&block, ":method", "POST");
          PutHeader(&block, ":scheme", "http");
          PutHeader(&block, ":path", "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export");
          PutHeader(&block, ":authority", "kiln");
          PutHeader(&block, "content-type", "application/grpc");
          PutHeader(&block, "te", "trailers");
          PutFrameHeader(&out, static_cast<uint32_t>(block.size()), 1, 0x4, id);
          out += block;
          headers_sent[s] = true;
        }
        while (stream_sent[s] < static_cast<int64_t>(each) && conn_window > 0 && stream_window[s] > 0 &&
               out.size() < 262144) {
          std::string payload;
          if (stream_sent[s] == 0) {  // the gRPC message prefix: not compressed, `declared` bytes
            payload.push_back(0);
            for (int shift : {24, 16, 8, 0}) payload.push_back(static_cast<char>(declared >> shift));
          }
          const int64_t room = std::min({conn_window, stream_window[s], int64_t{16384},
                                         static_cast<int64_t>(each) - stream_sent[s]});
          payload.append(chunk, 0, static_cast<size_t>(std::max<int64_t>(0, room - int64_t(payload.size()))));
          PutFrameHeader(&out, static_cast<uint32_t>(payload.size()), 0, 0, id);
          out += payload;
          conn_window -= static_cast<int64_t>(payload.size());
          stream_window[s] -= static_cast<int64_t>(payload.size());
          stream_sent[s] += static_cast<int64_t>(payload.size());
        }
      }
    }
    pollfd p{fd, static_cast<short>(POLLIN | (out.empty() ? 0 : POLLOUT)), 0};
    if (poll(&p, 1, 100) < 0) break;
    if (p.revents & POLLOUT) {
      ssize_t n = send(fd, out.data(), out.size(), MSG_NOSIGNAL);
      if (n > 0) {
        out.erase(0, static_cast<size_t>(n));
        result.sent += static_cast<uint64_t>(n);
      } else if (n < 0 && errno != EAGAIN) {
        result.closed_by_kiln = true;
        break;
      }
    }
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[65536];
      ssize_t n = read(fd, buf, sizeof buf);
      if (n <= 0 && !(n < 0 && errno == EAGAIN)) {
        result.closed_by_kiln = true;
        break;
      }
      if (n > 0) in.append(buf, static_cast<size_t>(n));
      while (in.size() >= 9) {
        const uint32_t len = (uint8_t(in[0]) << 16) | (uint8_t(in[1]) << 8) | uint8_t(in[2]);
        if (in.size() < 9 + len) break;
        const uint8_t type = uint8_t(in[3]), flags = uint8_t(in[4]);
        const uint32_t stream = ((uint8_t(in[5]) & 0x7f) << 24) | (uint8_t(in[6]) << 16) |
                                (uint8_t(in[7]) << 8) | uint8_t(in[8]);
        const char* body = in.data() + 9;
        if (type == 4 && !(flags & 1)) {  // SETTINGS: apply the initial window, then ack
          for (uint32_t i = 0; i + 6 <= len; i += 6) {
            const uint16_t key = (uint8_t(body[i]) << 8) | uint8_t(body[i + 1]);
            const uint32_t value = (uint8_t(body[i + 2]) << 24) | (uint8_t(body[i + 3]) << 16) |
                                   (uint8_t(body[i + 4]) << 8) | uint8_t(body[i + 5]);
            if (key == 4) {
              for (auto& w : stream_window) w += int64_t(value) - initial_stream_window;
              initial_stream_window = value;
            }
          }
          PutFrameHeader(&out, 0, 4, 1, 0);
        } else if (type == 8 && len == 4) {  // WINDOW_UPDATE
          const uint32_t inc = ((uint8_t(body[0]) & 0x7f) << 24) | (uint8_t(body[1]) << 16) |
                               (uint8_t(body[2]) << 8) | uint8_t(body[3]);
          if (stream == 0) {
            conn_window += inc;
          } else if ((stream - 1) / 2 < uint32_t(streams)) {
            stream_window[(stream - 1) / 2] += inc;
          }
        } else if (type == 6 && !(flags & 1)) {  // PING: answer it
          PutFrameHeader(&out, 8, 6, 1, 0);
          out.append(body, 8);
        } else if (type == 7) {  // GOAWAY
          result.closed_by_kiln = true;
        }
        in.erase(0, 9 + len);
      }
      if (result.closed_by_kiln) break;
    }
  }
  close(fd);
  return result;
}

}  // namespace

TEST_CASE("1,100 idle connections from a stranger neither stop the receiver nor stay open") {
  signal(SIGPIPE, SIG_IGN);
  kiln::testing::TempDir dir("kiln-strangers");
  // The usual desktop soft limit, inherited by kiln; kiln raises its own.
  const rlim_t old = SetSoftFileLimit(1024);
  kiln::testing::HeadlessKiln kiln(dir.path);
  SetSoftFileLimit(old);
  REQUIRE(SetSoftFileLimit(old) >= 4096);  // this test's own 1,100 sockets
  std::vector<int> idle;
  size_t refused = 0;
  for (int i = 0; i < 1100; ++i) {
    int fd = ConnectFrom("127.0.0.2", kiln.port());
    if (fd < 0) {
      ++refused;
      continue;
    }
    idle.push_back(fd);
  }
  MESSAGE("1,100 idle connects: ", idle.size(), " connected, ", refused, " refused at connect; kiln holds ",
          OpenFiles(kiln.pid()), " open files");
  CHECK(AgentExport(kiln.target(), 0));  // served during
  // Within the silent timeout (10 s) and a look, kiln closed every one.
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  size_t open = idle.size();
  while (open > 0 && Clock::now() < deadline) {
    open = 0;
    for (int fd : idle) {
      // gRPC may have sent its SETTINGS first: read all there is, then
      // the end of the stream (or a reset) says kiln closed it.
      char buf[4096];
      ssize_t n;
      while ((n = recv(fd, buf, sizeof buf, MSG_DONTWAIT)) > 0) {
      }
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) continue;
      ++open;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  CHECK_MESSAGE(open == 0, "kiln holds ", OpenFiles(kiln.pid()), " open files");
  for (int fd : idle) close(fd);
  CHECK(AgentExport(kiln.target(), 1));  // served after
  // kiln said so, in its Log and in kiln stats' data-loss table.
  CHECK(kiln.Stop(SIGTERM) == 0);
  kiln::testing::CommandResult stats = kiln::testing::RunKiln({"stats", "--data-dir", dir.path});
  CHECK(stats.exit_code == 0);
  const size_t row = stats.out.find("connection_closed");
  REQUIRE(row != std::string::npos);
  unsigned long long counted = 0;
  char severity[16] = {};
  REQUIRE(std::sscanf(stats.out.c_str() + row, "connection_closed %15s %llu", severity, &counted) == 2);
  CHECK(counted >= 1000);
}

TEST_CASE("partial requests from 10 connections x 20 streams stay within the receiver's memory budget") {
  signal(SIGPIPE, SIG_IGN);
  kiln::testing::TempDir dir("kiln-partial");
  kiln::testing::HeadlessKiln kiln(dir.path);
  PeakRss rss(kiln.pid());
  std::vector<PartialSender> results(10);
  std::vector<std::thread> attackers;
  const auto until = Clock::now() + std::chrono::seconds(25);
  for (int c = 0; c < 10; ++c) {
    attackers.emplace_back([&, c] {
      results[c] = SendPartialRequests("127.0.0.3", kiln.port(), 20, 64u << 20, 8u << 20, until);
    });
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const bool served_during = AgentExport(kiln.target(), 0);
  for (std::thread& t : attackers) t.join();
  const long rss_after_attack = kiln::testing::ResidentMiB(kiln.pid());
  const bool served_after = AgentExport(kiln.target(), 1);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  rss.Stop();
  uint64_t sent = 0;
  int closed = 0;
  for (const PartialSender& r : results) {
    sent += r.sent;
    closed += r.closed_by_kiln ? 1 : 0;
  }
  MESSAGE("partial requests: ", sent >> 20, " MiB sent of the 1,600 MiB attempted; ", closed,
          " of 10 connections closed by kiln; kiln RSS ", rss.start(), " MiB at start, peak ", rss.peak(),
          " MiB, ", rss_after_attack, " MiB after");
  CHECK(served_during);
  CHECK(served_after);
  // AddressSanitizer keeps freed memory in quarantine: its build prints the
  // figure without holding it to the budget.
#if defined(__SANITIZE_ADDRESS__)
  MESSAGE("RSS budget not checked under AddressSanitizer");
#else
  CHECK(rss.peak() <= 400);  // the budget (DESIGN.md: receiver memory under attack)
#endif
  CHECK(kiln.Stop(SIGTERM) == 0);
}

TEST_CASE("40,000 distinct 16,000-byte attribute values over 8 keys cost one sender's byte budget, counted past it") {
  kiln::testing::TempDir dir("kiln-values");
  kiln::testing::HeadlessKiln kiln(dir.path);
#if defined(__SANITIZE_ADDRESS__)
  const int kValues = 8'000;  // past the budget (2,097 values) in a sanitized build's time
#else
  const int kValues = 40'000;
#endif
  constexpr int kPerRequest = 100;
  constexpr size_t kValueBytes = 16'000;
  constexpr int kKeys = 8;  // 5,000 values a key: each key's 64 MiB budget would let in 4,194
  PeakRss rss(kiln.pid());
  auto channel = grpc::CreateChannel(kiln.target(), grpc::InsecureChannelCredentials());
  auto stub = collector::ProfilesService::NewStub(channel);
  int acknowledged = 0;
  const auto start = Clock::now();
  for (int r = 0; r < kValues / kPerRequest; ++r) {
    kiln::ingest::OtlpRequestBuilder b;
    int32_t exe = b.Mapping("/usr/bin/annotated", "00112233445566778899aabbccddeeff");
    int32_t stack = b.Stack({b.Location(exe, 0x10, {{"main", "app.c", 3}})});
    for (int i = 0; i < kPerRequest; ++i) {
      std::string value = std::to_string(r * kPerRequest + i);
      value.resize(kValueBytes, 'x');
      const std::string key = "k8s.pod.annotation." + std::to_string(i % kKeys);
      auto* p = b.AddProfile(b.Resource({{key, value}, {"process.pid", "4242"}}));
      const uint64_t t = 1'700'000'000'000'000'000ull + uint64_t(r * kPerRequest + i) * 1'000'000ull;
      kiln::ingest::OtlpRequestBuilder::AddSample(p, stack, {}, {t});
    }
    // As an agent sends: UNAVAILABLE is retried.
    for (int attempt = 0; attempt < 50; ++attempt) {
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      collector::ExportProfilesServiceResponse response;
      const grpc::Status s = stub->Export(&context, b.request, &response);
      if (s.ok()) {
        ++acknowledged;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const bool served_after = AgentExport(kiln.target(), 0);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  rss.Stop();
  const long rss_end = kiln::testing::ResidentMiB(kiln.pid());
  CHECK(kiln.Stop(SIGTERM) == 0);

  auto opened = kiln::storage::Store::Open(dir.path, kiln::storage::Store::Mode::kReadOnly);
  REQUIRE_MESSAGE(opened.ok(), opened.status().ToString());
  const auto& store = *opened;
  std::vector<std::string> stored;
  size_t others = 0;
  for (int k = 0; k < kKeys; ++k) {
    for (std::string& v : store->AttributeValues("k8s.pod.annotation." + std::to_string(k), 1'000'000)) {
      if (v == "other") {
        ++others;
      } else {
        stored.push_back(std::move(v));
      }
    }
  }
  const uint64_t capped =
      store->DataLossTotals()[static_cast<size_t>(kiln::storage::DataLoss::kAttributeCapped)];
  const uint64_t samples = store->Stats().samples;
  MESSAGE("attribute values: ", kValues, " of ", kValueBytes, " bytes (", (uint64_t(kValues) * kValueBytes) >> 20,
          " MiB) over ", kKeys, " keys in ", acknowledged, " requests, ", seconds, " s; ", stored.size(),
          " values stored, ", capped,
          " counted as attribute_capped; kiln RSS ", rss.start(), " MiB at start, peak ", rss.peak(), " MiB, ",
          rss_end, " MiB at the end");
  CHECK(acknowledged == kValues / kPerRequest);
  CHECK(served_after);
  CHECK(samples == static_cast<uint64_t>(kValues) + 100);  // every sample kept, its value or "other"
  // The sender's 32 MiB budget: 2,097 values of 16,000 bytes in all, then
  // "other" under every key (each key's budget alone would have let in 33,552).
  const size_t budget = (size_t{32} << 20) / kValueBytes;
  CHECK(stored.size() >= budget - 1);
  CHECK(stored.size() <= budget);
  CHECK(others == kKeys);
  CHECK(capped + stored.size() >= static_cast<uint64_t>(kValues));
#if !defined(__SANITIZE_ADDRESS__)
  CHECK(rss.peak() <= 400);
#endif
}
