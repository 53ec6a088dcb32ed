// Reliability: a full disk. A real store and receiver on a small tmpfs (so
// root: it mounts one), agent-shaped requests over loopback gRPC until kiln
// refuses them, then space freed. Checks what a user relies on: no abort,
// a retryable status whose message says the disk is nearly full, one Log
// line (not one per request), data accepted again by itself once space
// returns, and every acknowledged sample in the store after a restart.
// Prints its figures. Without root it says why and exits 77 (skipped).
#include <doctest/doctest.h>
#include <grpcpp/grpcpp.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "ingest/otlp_receiver.h"
#include "ingest/otlp_request_builder.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.grpc.pb.h"
#include "storage/disk_guard.h"
#include "storage/store.h"

namespace {

namespace collector = opentelemetry::proto::collector::profiles::v1development;
namespace fs = std::filesystem;

constexpr int kSamplesPerRequest = 5000;

// A small tmpfs, unmounted (with everything in it) at scope exit.
struct SmallDisk {
  std::string path;
  explicit SmallDisk(const char* size) {
    std::string tmpl = (fs::temp_directory_path() / "kiln-diskfull-XXXXXX").string();
    path = mkdtemp(tmpl.data());
    const std::string options = std::string("size=") + size;
    REQUIRE_MESSAGE(::mount("kiln-test", path.c_str(), "tmpfs", 0, options.c_str()) == 0,
                    "mount tmpfs: " << std::strerror(errno));
  }
  ~SmallDisk() {
    ::umount2(path.c_str(), MNT_DETACH);
    fs::remove_all(path);
  }
};

// Fills `path` with up to `bytes` (stops quietly at ENOSPC).
void Fill(const std::string& path, size_t bytes) {
  std::ofstream out(path, std::ios::binary);
  const std::string chunk(1 << 20, 'x');
  for (size_t written = 0; written < bytes && out; written += chunk.size())
    out.write(chunk.data(), chunk.size());
}

// Agent-like: 20 Hz ticks, stacks that differ, so the WAL grows as it does.
collector::ExportProfilesServiceRequest Request(int index) {
  kiln::ingest::OtlpRequestBuilder b;
  int32_t exe = b.Mapping("/usr/bin/app", "00112233445566778899aabbccddeeff");
  std::vector<int32_t> stacks;
  for (int s = 0; s < 64; ++s) {
    stacks.push_back(b.Stack({b.Location(exe, 0x1000 + 16 * (index * 64 + s), {}),
                              b.Location(exe, 0x10, {{"main", "app.c", 3}})}));
  }
  auto* p = b.AddProfile(b.Resource({{"process.pid", "42"}}));
  const uint64_t t0 = 1'700'000'000'000'000'000ull + uint64_t(index) * kSamplesPerRequest * 50'000'000ull;
  for (int i = 0; i < kSamplesPerRequest; ++i) {
    kiln::ingest::OtlpRequestBuilder::AddSample(p, stacks[i % stacks.size()], {},
                                                {t0 + uint64_t(i) * 50'000'000ull + (i * 7919) % 4096});
  }
  return std::move(b.request);
}

struct Kiln {
  std::unique_ptr<kiln::storage::Store> store;
  std::unique_ptr<kiln::ingest::OtlpReceiver> receiver;
  std::unique_ptr<collector::ProfilesService::Stub> stub;
  Kiln(const std::string& dir, uint64_t reserve) {
    auto opened = kiln::storage::Store::Open(dir, kiln::storage::Store::Mode::kReadWrite,
                                             {.disk_reserve_bytes = reserve});
    REQUIRE_MESSAGE(opened.ok(), opened.status().ToString());
    store = std::move(*opened);
    kiln::ingest::ReceiverOptions options;
    options.listen_address = "127.0.0.1:0";
    auto started = kiln::ingest::OtlpReceiver::Start(store.get(), options);
    REQUIRE(started.ok());
    receiver = std::move(*started);
    stub = collector::ProfilesService::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(receiver->port()), grpc::InsecureChannelCredentials()));
  }
  ~Kiln() {
    receiver->Stop();
    receiver.reset();
    store.reset();
  }
  grpc::Status Send(int index) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    collector::ExportProfilesServiceResponse response;
    return stub->Export(&context, Request(index), &response);
  }
  int LogLines(std::string_view text) {
    int n = 0;
    for (const auto& e : store->ReadLog(100000)) n += e.message.find(text) != std::string::npos;
    return n;
  }
};

uint64_t StoredSamples(const std::string& dir) {
  auto store = kiln::storage::Store::Open(dir, kiln::storage::Store::Mode::kReadOnly);
  REQUIRE(store.ok());
  return (*store)->Stats().samples;
}

// Root, in a mount namespace of this process's own: the tmpfs mounts
// vanish with the process, however it ends.
struct RootOnly {
  RootOnly() {
    if (geteuid() != 0 || ::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      std::printf("disk_full_test: skipped: mounting a small tmpfs needs root (%s)\n",
                  geteuid() != 0 ? "not root" : std::strerror(errno));
      std::fflush(stdout);
      std::_Exit(77);
    }
  }
} root_only;

}  // namespace

TEST_CASE(
    "disk nearly full: refused UNAVAILABLE with the reason, logged once, accepted again when space returns") {
  SmallDisk disk("48m");
  const std::string filler = disk.path + "/someone-elses-file";
  Fill(filler, 20 << 20);
  const std::string dir = disk.path + "/store";
  uint64_t acknowledged = 0;
  int sent = 0;
  {
    Kiln kiln(dir, 12 << 20);
    grpc::Status refused;
    for (; sent < 2000; ++sent) {
      grpc::Status s = kiln.Send(sent);
      if (!s.ok()) {
        refused = s;
        break;
      }
      acknowledged += kSamplesPerRequest;
    }
    std::printf("disk_full_test: %llu samples acknowledged in %d requests before the reserve was reached\n",
                (unsigned long long)acknowledged, sent);
    REQUIRE_MESSAGE(!refused.ok(), "the disk never filled");
    CHECK(refused.error_code() == grpc::StatusCode::UNAVAILABLE);  // agents keep the data and retry
    CHECK(refused.error_message().find("is nearly full") != std::string::npos);
    CHECK(refused.error_message().find("--disk-reserve") != std::string::npos);
    for (int i = 0; i < 5; ++i) CHECK(kiln.Send(sent).error_code() == grpc::StatusCode::UNAVAILABLE);
    CHECK(kiln.store->Stats().writes_refused == "disk nearly full");
    CHECK(kiln.LogLines("new data is refused") == 1);
    CHECK(kiln.LogLines("could not store a request") == 1);
    // Counted under its name, per sender and in total.
    const auto losses = kiln.receiver->stats().losses;
    CHECK(losses[static_cast<size_t>(kiln::storage::DataLoss::kDiskReserve)] == 6);
    CHECK(losses[static_cast<size_t>(kiln::storage::DataLoss::kStoreWriteFailed)] == 0);

    fs::remove(filler);  // space returns
    grpc::Status again = kiln.Send(sent);
    CHECK_MESSAGE(again.ok(), again.error_message());
    if (again.ok()) acknowledged += kSamplesPerRequest;
    CHECK(kiln.store->Stats().writes_refused.empty());
    CHECK(kiln.LogLines("storing works again: new data is accepted") == 1);
  }
  CHECK(StoredSamples(dir) == acknowledged);  // nothing acknowledged was lost
}

TEST_CASE(
    "disk filled by another program past kiln's reserve: RocksDB's own ENOSPC, no abort, and recovery") {
  // Larger: RocksDB lifts its own ENOSPC error only once a memtable's worth
  // (64 MiB) is free again.
  SmallDisk disk("160m");
  const std::string dir = disk.path + "/store";
  uint64_t acknowledged = 0;
  int sent = 0;
  {
    // No reserve: kiln writes until RocksDB itself meets ENOSPC.
    Kiln kiln(dir, 0);
    for (; sent < 20; ++sent) {
      REQUIRE(kiln.Send(sent).ok());
      acknowledged += kSamplesPerRequest;
    }
    const std::string filler = disk.path + "/someone-elses-file";
    // All but 1 MiB, just after kiln last looked: its next WAL appends
    // meet ENOSPC before it reads the free space again.
    Fill(filler, *kiln::storage::StatvfsFreeBytes(disk.path) - (1 << 20));
    int refused = 0;
    bool rocksdb_enospc = false;
    for (int i = 0; i < 3000 && refused < 3; ++i, ++sent) {
      grpc::Status s = kiln.Send(sent);
      if (s.ok()) {
        acknowledged += kSamplesPerRequest;
      } else {
        CHECK(s.error_code() == grpc::StatusCode::UNAVAILABLE);
        rocksdb_enospc =
            rocksdb_enospc || s.error_message().find("No space left on device") != std::string::npos;
        ++refused;
      }
    }
    CHECK(refused == 3);
    std::printf("disk_full_test: RocksDB met ENOSPC: %s; the store says: %s\n", rocksdb_enospc ? "yes" : "no",
                kiln.store->Stats().writes_refused.c_str());
    fs::remove(filler);
    grpc::Status again;
    // RocksDB's own recovery from ENOSPC checks the free space every few
    // seconds; kiln resumes the database as soon as it lets go.
    const auto freed = std::chrono::steady_clock::now();
    for (int i = 0; i < 600; ++i) {
      again = kiln.Send(sent);
      if (again.ok()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    CHECK_MESSAGE(again.ok(), again.error_message());
    std::printf("disk_full_test: accepted again %.1f s after space was freed\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - freed).count());
    if (again.ok()) acknowledged += kSamplesPerRequest;
    ++sent;
  }
  CHECK(StoredSamples(dir) == acknowledged);
}
