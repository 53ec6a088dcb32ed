// Reliability: a CI fleet's churn against the real `kiln --headless` with a
// small size limit, days compressed into a minute. 16 senders; every
// request brings processes never seen before (pid, executable with its own
// build id and code, container, threads), as CI jobs do. Before the
// dictionary forgot, it outgrew the limit and retention deleted every
// sample; memory climbed without end; the attribute-set cap folded new
// pids into "other" for good.
//
// Checks: the newest acknowledged samples are all kept; the store settles
// within the limit (plus what a flush adds); kiln's RSS is flat after the
// warm-up; the last processes keep their pids; the dictionary forgot what
// retention deleted. Prints its figures.
//
//   KILN_CHURN_SECONDS (default 90; the README's figures use 300)
//   KILN_CHURN_LIMIT_MIB (default 32; the README's figures also use 100, as the issue did)
//   KILN_CHURN_DICTIONARY_MIB (kiln's --dictionary-memory; default kiln's own)
#include <doctest/doctest.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
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

// AddressSanitizer keeps freed memory in quarantine and slows kiln down
// (CI runs this test in that build too, for what ASan finds): memory is
// not held to its bounds there, and a smaller limit makes retention and
// forgetting happen within the run.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

constexpr int kSenders = 16;
constexpr int kProcessesPerRequest = 3;
constexpr int kThreadsPerProcess = 3;
constexpr int kStacksPerProcess = 24;
constexpr int kSamplesPerThread = 40;

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// One CI job's worth from `sender`: processes numbered from `first_pid`,
// each its own executable and code; samples over the last second.
collector::ExportProfilesServiceRequest ChurnRequest(int sender, uint64_t first_pid, int64_t end_ns) {
  kiln::ingest::OtlpRequestBuilder b;
  for (int p = 0; p < kProcessesPerRequest; ++p) {
    const uint64_t pid = first_pid + static_cast<uint64_t>(p);
    char htlhash[33];
    std::snprintf(htlhash, sizeof htlhash, "%016llx%016llx", static_cast<unsigned long long>(pid),
                  static_cast<unsigned long long>(pid * 2654435761u));
    const std::string exe = "/builds/job-" + std::to_string(pid) + "/bin/test-runner";
    const int32_t mapping = b.Mapping(exe, htlhash);
    const int32_t libc = b.Mapping("/usr/lib/x86_64-linux-gnu/libc.so.6", "00112233445566778899aabbccddeeff");
    std::vector<int32_t> stacks;
    for (int s = 0; s < kStacksPerProcess; ++s) {
      std::vector<int32_t> frames;  // leaf first
      frames.push_back(b.Location(libc, 0x9a000 + 16 * (s % 5), {}));
      for (int f = 0; f < 8; ++f) frames.push_back(b.Location(mapping, 0x401000 + 0x40 * (s * 8 + f), {}));
      stacks.push_back(b.Stack(frames));
    }
    const std::string pid_text = std::to_string(pid);
    const std::string container = "ci-" + pid_text;
    const std::string host = "runner-" + std::to_string(sender);
    auto* profile = b.AddProfile(b.Resource({{"process.pid", pid_text},
                                             {"process.executable.path", exe},
                                             {"process.executable.name", "test-runner"},
                                             {"container.id", container},
                                             {"host.name", host}}));
    for (int t = 0; t < kThreadsPerProcess; ++t) {
      const std::vector<int32_t> attrs = {
          b.StringAttribute("thread.name", "worker-" + std::to_string(t)),
          b.IntAttribute("thread.id", static_cast<int64_t>(pid * 16 + static_cast<uint64_t>(t)))};
      for (int i = 0; i < kSamplesPerThread; ++i) {
        const uint64_t at = static_cast<uint64_t>(end_ns - 1'000'000'000 + i * 25'000'000 + t * 1'000);
        kiln::ingest::OtlpRequestBuilder::AddSample(profile, stacks[(i * 7 + t) % stacks.size()], attrs, {at});
      }
    }
  }
  return std::move(b.request);
}

// The directory's bytes by kind of file: RocksDB's tables (.sst), blob
// files, write-ahead log (.log) and the rest (LOG, MANIFEST, ...).
std::string ByKindOfFile(const std::string& dir) {
  uint64_t sst = 0, blob = 0, wal = 0, rest = 0;
  std::error_code ec;
  for (const auto& f : std::filesystem::directory_iterator(dir, ec)) {
    const uint64_t bytes = f.is_regular_file(ec) ? f.file_size(ec) : 0;
    if (ec) continue;
    const std::string ext = f.path().extension().string();
    (ext == ".sst" ? sst : ext == ".blob" ? blob : ext == ".log" ? wal : rest) += bytes;
  }
  return "tables " + std::to_string(sst >> 20) + " MiB, blobs " + std::to_string(blob >> 20) + " MiB, WAL " +
         std::to_string(wal >> 20) + " MiB, the rest " + std::to_string(rest >> 20) + " MiB";
}

}  // namespace

TEST_CASE("a CI fleet's churn: the dictionary forgets, disk and memory stay bounded, nothing kept is lost") {
  signal(SIGPIPE, SIG_IGN);
  const int seconds = EnvInt("KILN_CHURN_SECONDS", 90);
  const uint64_t limit = static_cast<uint64_t>(EnvInt("KILN_CHURN_LIMIT_MIB", kSanitized ? 16 : 32)) << 20;
  kiln::testing::TempDir dir("kiln-churn");
  std::vector<std::string> args = {"--retention-size", std::to_string(limit >> 20) + "MiB"};
  if (const int budget = EnvInt("KILN_CHURN_DICTIONARY_MIB", 0); budget > 0) {
    args.insert(args.end(), {"--dictionary-memory", std::to_string(budget) + "MiB"});
  }
  kiln::testing::HeadlessKiln kiln(dir.path, args);

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> next_pid{100'000}, acknowledged{0}, requests{0}, refused{0};
  // Acknowledged samples per second of sample time (for the newest-window check).
  std::mutex acked_mu;
  std::vector<std::pair<int64_t, uint64_t>> acked;  // (request end ns, samples)
  uint64_t last_pid = 0;
  std::vector<std::thread> senders;
  for (int s = 0; s < kSenders; ++s) {
    senders.emplace_back([&, s] {
      auto channel = grpc::CreateChannel(kiln.target(), grpc::InsecureChannelCredentials());
      auto stub = collector::ProfilesService::NewStub(channel);
      while (!stop) {
        const uint64_t pid = next_pid.fetch_add(kProcessesPerRequest);
        const int64_t end = NowNs();
        const collector::ExportProfilesServiceRequest request = ChurnRequest(s, pid, end);
        constexpr uint64_t kSamples = kProcessesPerRequest * kThreadsPerProcess * kSamplesPerThread;
        for (int attempt = 0; attempt < 20 && !stop; ++attempt) {
          grpc::ClientContext context;
          context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
          collector::ExportProfilesServiceResponse response;
          grpc::Status status = stub->Export(&context, request, &response);
          requests.fetch_add(1);
          if (status.ok()) {
            acknowledged.fetch_add(kSamples);
            std::lock_guard lock(acked_mu);
            acked.emplace_back(end, kSamples);
            last_pid = std::max(last_pid, pid + kProcessesPerRequest - 1);
            break;
          }
          refused.fetch_add(1);  // UNAVAILABLE: retried, as agents do
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
  }

  // Watch disk and memory once a second.
  const auto start = Clock::now();
  const int64_t start_ns = NowNs();
  uint64_t disk_peak = 0;
  long rss_at_third = 0, rss_peak_after_third = 0;  // at a third of the run, and the peak after
  std::vector<long> rss_by_second, disk_by_second;
  std::string at_peak;  // what the disk held at its peak, by kind of file
  while (Clock::now() - start < std::chrono::seconds(seconds)) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const uint64_t disk = kiln::testing::DirectoryBytes(dir.path);
    const long rss = kiln::testing::ResidentMiB(kiln.pid());
    if (disk > disk_peak) at_peak = ByKindOfFile(dir.path);
    disk_by_second.push_back(static_cast<long>(disk >> 20));
    disk_peak = std::max(disk_peak, disk);
    rss_by_second.push_back(rss);
    const auto elapsed = Clock::now() - start;
    if (elapsed < std::chrono::seconds(seconds / 3)) {
      rss_at_third = rss;
    } else {
      rss_peak_after_third = std::max(rss_peak_after_third, rss);
    }
  }
  stop = true;
  for (std::thread& t : senders) t.join();
  // Settle: the last retention pass and forgetting run within seconds of
  // the last writes (a twentieth of the limit written starts a pass).
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const long rss_end = kiln::testing::ResidentMiB(kiln.pid());
  const uint64_t disk_end = kiln::testing::DirectoryBytes(dir.path);
  std::string big_files;  // what the disk holds, for when the limit is not kept
  for (const auto& f : std::filesystem::directory_iterator(dir.path)) {
    if (f.is_regular_file() && f.file_size() >= (512 << 10)) {
      big_files += " " + f.path().filename().string() + " " + std::to_string(f.file_size() >> 10) + " KiB;";
    }
  }
  MESSAGE("files of 512 KiB or more at the end:", big_files);

  // The store as kiln has it, read beside it.
  auto opened = kiln::storage::Store::Open(dir.path, kiln::storage::Store::Mode::kReadOnly);
  REQUIRE_MESSAGE(opened.ok(), opened.status().ToString());
  auto store = std::move(*opened);
  const kiln::storage::StoreStats st = store->Stats();
  // The newest 5 s of acknowledged samples are all there.
  int64_t newest = 0;
  for (const auto& [end, n] : acked) newest = std::max(newest, end);
  const int64_t from = newest - 5'000'000'000;
  uint64_t expected = 0;
  for (const auto& [end, n] : acked) {
    if (end - 1'000'000'000 >= from) expected += n;  // the whole request is after `from`
  }
  kiln::storage::Query q;
  q.from_ns = from - 1'000'000'000;
  auto slice = store->Run(q);
  REQUIRE(slice.ok());
  const uint64_t kept_recent = (*slice)->total_events;
  const std::vector<std::string> pids = store->AttributeValues("process.pid", 1'000'000);
  const bool last_pid_kept = std::find(pids.begin(), pids.end(), std::to_string(last_pid)) != pids.end();
  const uint64_t capped = store->DataLossTotals()[static_cast<size_t>(kiln::storage::DataLoss::kAttributeCapped)];
  uint64_t dictionary_bytes = 0;
  std::string parts;
  for (const auto& part : st.part_bytes) {
    if (part.part == "dictionary") dictionary_bytes = part.bytes;
    parts += " " + part.part + " " + std::to_string(part.bytes >> 10) + " KiB;";
  }
  MESSAGE("the store's parts at the end:", parts);
  std::string log;
  uint64_t forgotten = 0, forget_passes = 0;
  int shown = 0;
  std::string pass_times;  // when forgetting passes were logged (ended), seconds into the run
  for (const kiln::storage::LogEntry& e : store->ReadLog(1'000'000)) {
    if (e.message.starts_with("dictionary: forgot ")) {
      pass_times = std::to_string((e.time_ns - start_ns) / 1'000'000'000) + "s " + pass_times;
    }
    if (e.message.starts_with("dictionary: forgot ")) {
      forgotten += std::strtoull(e.message.c_str() + std::strlen("dictionary: forgot "), nullptr, 10);
      ++forget_passes;
    }
    if ((e.message.starts_with("retention") || e.message.starts_with("dictionary") ||
         e.level >= kiln::storage::LogLevel::kWarning) &&
        ++shown <= 12) {
      log = "  " + e.message + "\n" + log;
    }
  }
  MESSAGE("kiln's log (the last 12 of retention, forgetting, warnings), oldest first:\n", log);
  store.reset();
  CHECK(kiln.Stop(SIGTERM) == 0);
  kiln::testing::CommandResult stats = kiln::testing::RunKiln({"stats", "--data-dir", dir.path});

  MESSAGE("churn for ", seconds, " s, limit ", limit >> 20, " MiB: ", requests.load(), " requests (", refused.load(),
          " refused for now), ", acknowledged.load(), " samples and ", next_pid.load() - 100'000,
          " processes acknowledged; kept ", st.samples, " samples, ", st.stacks, " stacks, ", st.attribute_sets,
          " attribute sets (dictionary ", dictionary_bytes >> 10, " KiB on disk, ",
          st.dictionary_memory_bytes >> 20, " MiB in memory); forgot ", forgotten,
          " dictionary entries in ", forget_passes, " passes; disk peak ", disk_peak >> 20, " MiB, at the end ", disk_end >> 20,
          " MiB; kiln RSS ", rss_at_third, " MiB at a third, peak ", rss_peak_after_third, " MiB after, ", rss_end,
          " MiB at the end; newest 5 s: ", kept_recent, " of ", expected, " kept");
  std::string by_second;
  for (size_t i = 0; i < rss_by_second.size(); i += std::max<size_t>(1, rss_by_second.size() / 12)) {
    by_second += std::to_string(i + 1) + "s:" + std::to_string(rss_by_second[i]) + " ";
  }
  MESSAGE("kiln RSS (MiB) over time: ", by_second);
  std::string disk_series;
  for (size_t i = 0; i < disk_by_second.size(); i += std::max<size_t>(1, disk_by_second.size() / 30)) {
    disk_series += std::to_string(i + 1) + "s:" + std::to_string(disk_by_second[i]) + " ";
  }
  MESSAGE("disk (MiB) over time: ", disk_series);
  std::string spikes;
  for (size_t i = 0; i < disk_by_second.size(); ++i) {
    if (static_cast<uint64_t>(disk_by_second[i]) > (limit >> 20) * 5 / 4) {
      spikes += std::to_string(i + 1) + "s:" + std::to_string(disk_by_second[i]) + " ";
    }
  }
  MESSAGE("seconds above 1.25x the limit: ", spikes, "; forgetting passes ended at: ", pass_times);
  MESSAGE("the disk at its peak (", disk_peak >> 20, " MiB): ", at_peak);

  CHECK(st.samples > 0);                        // never emptied
  CHECK(kept_recent >= expected);               // nothing acknowledged and within the limit is lost
  CHECK(forgotten > 0);                         // the dictionary followed the data
  CHECK(last_pid_kept);                         // new processes keep their pids
  CHECK(capped == 0);
  CHECK(st.retention_problem.empty());
  // Settled, the store is within its limit plus a flush. Between passes it
  // grows by what arrives until retention and forgetting catch up: here a
  // 10 s bucket of samples is a quarter of the limit in dictionary. When
  // the dictionary lay in one large table, each compaction of it doubled it
  // for seconds and the peak was 1.6-1.8x the limit (DictionaryLayout in
  // store_internal.h); now 1.16-1.25x. The sanitized build is several times
  // slower, so passes fall further behind (1.9x at 16 MiB): there the check
  // is only that the disk does not run away. Without forgetting the store
  // grew past 3x the limit in this run, and on without end.
  CHECK(disk_end <= limit + limit / 4);
  CHECK(disk_peak <= (kSanitized ? limit * 3 : limit + limit / 2));
  // Memory follows the kept data: it comes back down after each forgetting
  // pass, so the last third of the run dips to what the middle third
  // already reached (without forgetting it only grows: every second of the
  // last third above every second of the middle), and it stays under a
  // stated ceiling (DESIGN.md's 400 MiB aim is not met at this churn rate:
  // the README says where it stands).
  const size_t third = rss_by_second.size() / 3;
  auto median = [](std::vector<long> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0L : v[v.size() / 2];
  };
  const std::vector<long> middle(rss_by_second.begin() + third, rss_by_second.begin() + 2 * third);
  const std::vector<long> last(rss_by_second.begin() + 2 * third, rss_by_second.end());
  MESSAGE("kiln RSS median: ", median(middle), " MiB in the middle third, ", median(last), " MiB in the last");
  if (kSanitized) {
    MESSAGE("RSS bounds not checked under AddressSanitizer");
  } else {
    REQUIRE(!middle.empty());
    REQUIRE(!last.empty());
    CHECK(*std::min_element(last.begin(), last.end()) <= *std::max_element(middle.begin(), middle.end()));
    CHECK(rss_peak_after_third <= 1024);
  }
  CHECK(stats.exit_code == 0);
  // `kiln stats` says what the dictionary holds in memory, as a reader of
  // the stopped store measures it.
  auto reopened = kiln::storage::Store::Open(dir.path, kiln::storage::Store::Mode::kReadOnly);
  REQUIRE(reopened.ok());
  char dictionary_line[64];
  std::snprintf(dictionary_line, sizeof dictionary_line, "dictionary:     %.1f MiB in memory",
                (*reopened)->Stats().dictionary_memory_bytes / 1048576.0);
  CHECK_MESSAGE(stats.out.find(dictionary_line) != std::string::npos, stats.out);
}
