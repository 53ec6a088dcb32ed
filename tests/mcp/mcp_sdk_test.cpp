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

  const int rc = WaitChild(SpawnChild({node, SourceDir() + "/tests/mcp/mcp_sdk_client.mjs", sdk, KilnBinary(), data,
                                       before, after, std::to_string(kSplitNs), go,
                                       SourceDir() + "/tests/data/corpus/parca/fib.pb.gz",
                                       SourceDir() + "/tests/data/corpus/pprof/sample.cpu.pb.gz"}));
  CHECK(rc == 0);
  CHECK(running.Stop(SIGTERM) == 0);
}

}  // namespace kiln::testing
