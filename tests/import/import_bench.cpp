// Import benchmark: ~100 MB pprof and `perf script` captures built by
// repeating corpus files (fresh location ids per pprof copy so stacks stay
// distinct; perf timestamps shifted per copy), imported from memory and
// from disk. Prints MB/s, samples/s and peak RSS; asserts nothing.
//
// Usage: capture_import_bench [target MB, default 100] [DIR, default
// /tmp/kiln-import-bench]
// Reference: Go's pprof parses a 34 MB profile in about 1.7 s (20 MB/s);
// the goal is at least 10x that. When `go` is on PATH the benchmark also
// times `go tool pprof -raw` on the same pprof files (parse plus printing:
// more than parsing alone) and prints the ratio (KILN_BENCH_GO=0: not).
#include <fcntl.h>
#include <malloc.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "ingest/capture/capture.h"
#include "ingest/capture/capture_commands.h"
#include "ingest/capture/export.h"
#include "pprof/profile.pb.h"
#include "tests/import/corpus_files.h"

namespace {

using kiln::capture::testing::Gunzip;
using kiln::capture::testing::ReadAll;
std::string Corpus() { return kiln::capture::testing::CorpusDir(); }

using kiln::capture::ImportBytes;
using kiln::capture::ImportFile;

std::string BuildPprof(size_t target_bytes) {
  perftools::profiles::Profile base;
  base.ParseFromString(Gunzip(ReadAll(Corpus() + "/parca/alloc_objects.pb.gz")));
  perftools::profiles::Profile big = base;
  big.clear_sample();
  big.clear_location();
  uint64_t max_id = 0;
  for (const auto& l : base.location()) max_id = std::max<uint64_t>(max_id, l.id());
  size_t per_copy = base.ByteSizeLong();
  size_t copies = std::max<size_t>(1, target_bytes / per_copy);
  for (size_t c = 0; c < copies; ++c) {
    uint64_t offset = c * max_id;
    for (const auto& l : base.location()) {
      auto* nl = big.add_location();
      *nl = l;
      nl->set_id(l.id() + offset);
      nl->set_address(l.address() + c * 16);
    }
    for (const auto& s : base.sample()) {
      auto* ns = big.add_sample();
      *ns = s;
      for (int i = 0; i < ns->location_id_size(); ++i) ns->set_location_id(i, s.location_id(i) + offset);
    }
  }
  return big.SerializeAsString();
}

// Repeats the corpus perf files, shifting each copy's timestamps past the
// previous copy's so the result is one plausible long recording.
std::string BuildPerf(size_t target_bytes) {
  std::string base;
  for (const char* f : {"/flamegraph/perf-numa-stacks-01.txt", "/speedscope/system-wide.linux-perf.txt",
                        "/speedscope/forks.linux-perf.txt", "/flamegraph/perf-java-faults-01.txt"}) {
    std::string text = ReadAll(Corpus() + f);
    if (!text.empty() && text.back() != '\n') text += '\n';
    base += text + "\n";
  }
  std::string out;
  out.reserve(target_bytes + base.size());
  double shift = 0;
  while (out.size() < target_bytes) {
    size_t pos = 0;
    while (pos < base.size()) {
      size_t end = base.find('\n', pos);
      if (end == std::string::npos) end = base.size();
      std::string_view line(base.data() + pos, end - pos);
      pos = end + 1;
      if (!line.empty() && line[0] != '\t' && line[0] != ' ' && line[0] != '#') {
        // Shift "secs.frac:" by `shift` seconds.
        size_t colon = line.find(": ");
        size_t dot = line.rfind('.', colon);
        size_t start = line.rfind(' ', dot);
        if (colon != std::string_view::npos && dot != std::string_view::npos &&
            start != std::string_view::npos && dot < colon) {
          double t = std::strtod(std::string(line.substr(start + 1, colon - start - 1)).c_str(), nullptr);
          char buf[64];
          std::snprintf(buf, sizeof(buf), "%.6f", t + shift);
          out.append(line.substr(0, start + 1));
          out.append(buf);
          out.append(line.substr(colon));
          out.push_back('\n');
          continue;
        }
      }
      out.append(line);
      out.push_back('\n');
    }
    shift += 1000000;
  }
  return out;
}

struct Figures {
  double seconds = 0;
  double cpu_seconds = 0;  // user + system of the import alone
  uint64_t samples = 0;
  long peak_rss_kb = 0;
  bool ok = false;
};

// Runs one import in a fresh process (fork + exec of this program), so
// each peak RSS is its own and the heap is not the generator's leftovers.
const char* g_self = nullptr;

Figures Measure(const std::string& path, bool from_memory) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    execl(g_self, g_self, "--measure", path.c_str(), from_memory ? "memory" : "file",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  Figures f;
  std::string text;
  char buf[256];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof(buf))) > 0) text.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status;
  waitpid(pid, &status, 0);
  unsigned long long samples = 0;
  f.ok = std::sscanf(text.c_str(), "%lf %lf %llu %ld", &f.seconds, &f.cpu_seconds, &samples,
                     &f.peak_rss_kb) == 4;
  f.samples = samples;
  return f;
}

double CpuSeconds() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

int MeasureChild(const std::string& path, bool from_memory) {
  std::string bytes = from_memory ? ReadAll(path) : std::string();
  double cpu0 = CpuSeconds();
  auto t0 = std::chrono::steady_clock::now();
  auto c = from_memory ? ImportBytes(bytes, path) : ImportFile(path);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double cpu = CpuSeconds() - cpu0;
  if (!c.ok()) {
    std::fprintf(stderr, "%s\n", std::string(c.status().message()).c_str());
    return 1;
  }
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("%f %f %llu %ld\n", seconds, cpu, static_cast<unsigned long long>(c->batch.samples.size()),
              ru.ru_maxrss);
  return 0;
}

// Each import runs KILN_BENCH_RUNS times (default 5), each in a fresh
// process; the fastest and the median wall time are printed (the machine is
// shared: the median says what to expect, the fastest what the code does
// alone), and CPU time, samples/s and peak RSS of the fastest run.
int BenchRuns() {
  const char* env = std::getenv("KILN_BENCH_RUNS");
  int runs = env != nullptr ? std::atoi(env) : 5;
  return std::max(1, runs);
}

// `go tool pprof ARGS FILE` with stdout to /dev/null: wall seconds, CPU
// seconds of the tool and its children, and their peak RSS. Go gets a
// private HOME/GOCACHE/PPROF_TMPDIR and no network.
struct GoFigures {
  bool ok = false;
  double seconds = 0, cpu_seconds = 0;
  long peak_rss_kb = 0;
};

std::string FindGo() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/go";
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

GoFigures MeasureGo(const std::string& go, const std::string& mode, const std::string& path,
                    const std::string& scratch) {
  GoFigures f;
  auto t0 = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    setenv("HOME", scratch.c_str(), 1);
    setenv("GOCACHE", (scratch + "/gocache").c_str(), 1);
    setenv("PPROF_TMPDIR", scratch.c_str(), 1);
    setenv("GOPROXY", "off", 1);
    setenv("GOTOOLCHAIN", "local", 1);
    execl(go.c_str(), "go", "tool", "pprof", mode.c_str(), "-symbolize=none", path.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  struct rusage ru {};
  if (pid < 0 || wait4(pid, &status, 0, &ru) != pid) return f;
  f.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  f.cpu_seconds = ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  f.peak_rss_kb = ru.ru_maxrss;
  f.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return f;
}

void ReportGo(const std::string& go, const char* what, const std::string& path, uint64_t raw_bytes,
              const std::string& scratch) {
  Figures kiln;  // the fastest of the runs, as in Report
  for (int i = 0; i < BenchRuns(); ++i) {
    Figures f = Measure(path, false);
    if (f.ok && (!kiln.ok || f.seconds < kiln.seconds)) kiln = f;
  }
  // -raw: parse and print every sample (-top also builds the call graph:
  // slower still, and gigabytes of RSS on these files).
  for (const char* mode : {"-raw"}) {
    GoFigures g = MeasureGo(go, mode, path, scratch);
    if (!g.ok || !kiln.ok) {
      std::printf("%-22s go tool pprof %s FAILED\n", what, mode);
      continue;
    }
    std::printf(
        "%-22s go tool pprof %-4s | wall %6.2f s %6.1f MB/s raw | cpu %6.2f s | peak RSS %ld MB | "
        "kiln (file) wall %.3f s: %.1fx faster\n",
        what, mode, g.seconds, raw_bytes / 1e6 / g.seconds, g.cpu_seconds, g.peak_rss_kb / 1024, kiln.seconds,
        g.seconds / kiln.seconds);
  }
}

void Report(const char* what, const std::string& path, uint64_t raw_bytes) {
  struct stat st {};
  uint64_t file_bytes = stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  for (bool memory : {true, false}) {
    std::vector<Figures> runs;
    for (int i = 0; i < BenchRuns(); ++i) {
      Figures f = Measure(path, memory);
      if (f.ok) runs.push_back(f);
    }
    if (runs.empty()) {
      std::printf("%-22s %-6s FAILED\n", what, memory ? "memory" : "file");
      continue;
    }
    std::sort(runs.begin(), runs.end(),
              [](const Figures& a, const Figures& b) { return a.seconds < b.seconds; });
    const Figures& f = runs.front();
    const double median = runs[runs.size() / 2].seconds;
    // Wall time depends on what else runs on the machine; CPU time (user +
    // system of the import, both threads) is the work done.
    std::printf(
        "%-22s %-6s %6.1f MB file %6.1f MB raw | wall min %6.3f s %6.1f MB/s, median %6.3f s %6.1f MB/s | "
        "cpu %6.3f s | %5.2f M samples/s | %llu samples, peak RSS %ld MB (%zu runs)\n",
        what, memory ? "memory" : "file", file_bytes / 1e6, raw_bytes / 1e6, f.seconds,
        raw_bytes / 1e6 / f.seconds, median, raw_bytes / 1e6 / median, f.cpu_seconds,
        f.samples / 1e6 / f.seconds, static_cast<unsigned long long>(f.samples), f.peak_rss_kb / 1024,
        runs.size());
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--one") {
    // One import of an existing file, for profilers.
    auto c = ImportFile(argv[2]);
    std::printf("%s: %s\n", argv[2],
                c.ok() ? (std::to_string(c->batch.samples.size()) + " samples").c_str()
                       : std::string(c.status().message()).c_str());
    return c.ok() ? 0 : 1;
  }
  g_self = argv[0];
  if (argc >= 4 && std::string(argv[1]) == "--convert") {
    // What `kiln export --input FILE --format F --annotate` prints, until
    // main() wires the command (a debugging aid).
    kiln::capture::ConvertCommand c;
    c.input = argv[2];
    c.format = argv[3];
    c.annotate = true;
    if (argc >= 5) c.group_by = argv[4];
    return kiln::capture::RunConvertCommand(c, std::cout, std::cerr);
  }
  if (argc == 4 && std::string(argv[1]) == "--store") {
    // `kiln import` of one file into a fresh store directory, timed.
    auto store = kiln::storage::Store::Open(argv[2], kiln::storage::Store::Mode::kReadWrite);
    if (!store.ok()) return 1;
    auto t0 = std::chrono::steady_clock::now();
    auto r = kiln::capture::ImportIntoStore(store->get(), argv[3], {});
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    struct rusage ru {};
    getrusage(RUSAGE_SELF, &ru);
    std::printf("%s into store: %s in %.3f s, peak RSS %ld MB\n", argv[3],
                r.ok() ? (std::to_string(r->samples) + " samples").c_str()
                       : std::string(r.status().message()).c_str(),
                s, ru.ru_maxrss / 1024);
    return r.ok() ? 0 : 1;
  }
  if (argc == 4 && std::string(argv[1]) == "--measure") {
    return MeasureChild(argv[2], std::string(argv[3]) == "memory");
  }
  size_t target_mb = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 100;
  if (ReadAll(Corpus() + "/README.md").empty()) {
    std::fprintf(stderr, "corpus not found at %s\n", Corpus().c_str());
    return 77;
  }
  std::string dir = argc > 2 ? argv[2] : "/tmp/kiln-import-bench";
  std::system(("mkdir -p " + dir).c_str());

  uint64_t pprof_raw = 0, perf_raw = 0;
  {
    std::string pprof = BuildPprof(target_mb << 20);
    std::ofstream(dir + "/big.pb", std::ios::binary) << pprof;
    std::ofstream(dir + "/big.pb.gz", std::ios::binary) << kiln::capture::GzipCompress(pprof);
    std::string perf = BuildPerf(target_mb << 20);
    std::ofstream(dir + "/big.perf.txt", std::ios::binary) << perf;
    pprof_raw = pprof.size();
    perf_raw = perf.size();
  }
  // Children start as copies of this process and Linux carries the peak
  // RSS across fork and exec: give the generator's memory back first.
  malloc_trim(0);

  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  std::printf("kiln import benchmark on %s, %ld CPUs online\n", host, sysconf(_SC_NPROCESSORS_ONLN));
  Report("pprof (uncompressed)", dir + "/big.pb", pprof_raw);
  Report("pprof (gzip)", dir + "/big.pb.gz", pprof_raw);
  Report("perf script", dir + "/big.perf.txt", perf_raw);
  const char* go_env = std::getenv("KILN_BENCH_GO");
  if (go_env != nullptr && std::string(go_env) == "0") {
    std::printf("KILN_BENCH_GO=0: no go tool pprof comparison\n");
  } else if (std::string go = FindGo(); !go.empty()) {
    std::string scratch = dir + "/go-home";
    std::system(("mkdir -p " + scratch + "/gocache").c_str());
    ReportGo(go, "pprof (uncompressed)", dir + "/big.pb", pprof_raw, scratch);
    ReportGo(go, "pprof (gzip)", dir + "/big.pb.gz", pprof_raw, scratch);
  } else {
    std::printf("go not on PATH: no go tool pprof comparison\n");
  }
  return 0;
}
