// `kiln mcp` with a real MCP client: the official TypeScript SDK
// (@modelcontextprotocol/sdk, pinned in package-lock.json, installed with
// `npm ci` into the clone's .cache on first run) starts the built kiln
// over stdio and checks every tool against the folded files the store was
// imported from, and captures against `go tool pprof -top`
// (mcp_sdk_client.mjs). The store is held open by a running
// `kiln --headless`, as an assistant would query a live kiln's store.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "pprof/profile.pb.h"
#include "tests/child_process.h"
#include "tests/integration/kiln_process.h"
#include "tests/temp_dir.h"

namespace kiln::testing {
namespace {

constexpr int64_t kBeforeNs = 1'795'600'000'000'000'000;  // 2026-11-25T08:26:40Z
constexpr int64_t kAfterNs = kBeforeNs + 7'200'000'000'000;  // two hours later
constexpr int64_t kSplitNs = kBeforeNs + 3'600'000'000'000;

std::string SourceDir() { return std::getenv("KILN_SOURCE_DIR"); }

void WriteStamped(const std::string& path, const std::string& text, int64_t time_ns) {
  std::ofstream(path) << text;
  const timespec t{static_cast<time_t>(time_ns / 1'000'000'000), static_cast<long>(time_ns % 1'000'000'000)};
  const timespec times[2] = {t, t};
  REQUIRE(utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
}

// The SDK in the clone's .cache (shared by every build directory, as the
// sid root is), installed from the lock file when it is missing or the
// lock file changed.
std::string InstallSdk() {
  const std::string dir = SourceDir() + "/.cache/mcp-sdk";
  std::filesystem::create_directories(dir);
  const std::string lock = SourceDir() + "/tests/mcp/package-lock.json";
  const std::string stamp = dir + "/node_modules/.kiln-installed-lock";
  auto read = [](const std::string& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  if (read(stamp) == read(lock) && !read(lock).empty()) return dir;
  std::filesystem::copy_file(SourceDir() + "/tests/mcp/package.json", dir + "/package.json",
                             std::filesystem::copy_options::overwrite_existing);
  std::filesystem::copy_file(lock, dir + "/package-lock.json", std::filesystem::copy_options::overwrite_existing);
  const std::string npm = FindOnPath("npm");
  REQUIRE_MESSAGE(!npm.empty(), "npm is not installed (packaging/install-deps.sh installs it)");
  const int rc = WaitChild(SpawnChild({npm, "ci", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel=error"}));
  REQUIRE_MESSAGE(rc == 0, "npm ci of the MCP SDK failed (it needs the npm registry)");
  std::ofstream(stamp) << read(lock);
  return dir;
}

// A pprof as Go's, Java's and Python's tracing SDKs label it: main;handler
// 30 ns in span ...abc, main;parse 50 ns in span ...def (one trace), and
// main;idle 20 ns in no span.
void WriteSpansPprof(const std::string& path) {
  perftools::profiles::Profile p;
  for (const char* s : {"", "cpu", "nanoseconds", "main", "handler", "parse", "idle", "span_id", "trace_id",
                        "0000000000000abc", "0000000000000def", "4bf92f3577b34da6a3ce929d0e0e4736"}) {
    p.add_string_table(s);
  }
  p.add_sample_type()->set_type(1);
  p.mutable_sample_type(0)->set_unit(2);
  for (int f = 1; f <= 4; ++f) {  // functions and locations 1..4: main, handler, parse, idle
    p.add_function()->set_id(f);
    p.mutable_function(f - 1)->set_name(2 + f);
    p.add_location()->set_id(f);
    p.mutable_location(f - 1)->add_line()->set_function_id(f);
  }
  auto add = [&](uint64_t leaf, int64_t value, int64_t span) {
    perftools::profiles::Sample* s = p.add_sample();
    s->add_location_id(leaf);
    s->add_location_id(1);
    s->add_value(value);
    if (span == 0) return;
    for (auto [key, str] : {std::pair<int64_t, int64_t>{7, span}, {8, 11}}) {
      perftools::profiles::Label* l = s->add_label();
      l->set_key(key);
      l->set_str(str);
    }
  };
  add(2, 30, 9);
  add(3, 50, 10);
  add(4, 20, 0);
  std::ofstream out(path, std::ios::binary);
  REQUIRE(p.SerializeToOstream(&out));
}

}  // namespace

TEST_CASE("kiln mcp answers the official MCP SDK client, checked against the imported files") {
  const std::string node = FindOnPath("node");
  REQUIRE_MESSAGE(!node.empty(), "node (nodejs) is not installed");
  const std::string go = FindOnPath("go");
  REQUIRE_MESSAGE(!go.empty(), "go (golang) is not installed: go tool pprof is the oracle for captures");
  const std::string sdk = InstallSdk();

  TempDir dir("kiln-mcp");
  const std::string data = dir.path + "/store";
  const std::string before = dir.path + "/before.folded", after = dir.path + "/after.folded";
  WriteStamped(before,
               "main;parse;lex 300\nmain;parse 100\nmain;work;hash 200\nmain;work;compress;deflate 150\n"
               "main;idle 250\n",
               kBeforeNs);
  WriteStamped(after,
               "main;parse;lex 100\nmain;parse 50\nmain;work;hash 600\nmain;work;compress;deflate 160\n"
               "main;idle 90\n",
               kAfterNs);
  for (const std::string& file : {before, after}) {
    const CommandResult r = RunKiln({"import", "--data-dir", data, file});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
  }
  HeadlessKiln running(data);  // holds the store, as a live kiln does
  const std::string spans = dir.path + "/spans.pb";
  WriteSpansPprof(spans);
  setenv("KILN_MCP_SPANS_PPROF", spans.c_str(), 1);

  const int rc = WaitChild(SpawnChild({node, SourceDir() + "/tests/mcp/mcp_sdk_client.mjs", sdk, KilnBinary(), data,
                                       before, after, std::to_string(kSplitNs), go,
                                       SourceDir() + "/tests/data/corpus/parca/fib.pb.gz",
                                       SourceDir() + "/tests/data/corpus/pprof/sample.cpu.pb.gz"}));
  unsetenv("KILN_MCP_SPANS_PPROF");
  CHECK(rc == 0);
  CHECK(running.Stop(SIGTERM) == 0);
}

}  // namespace kiln::testing
