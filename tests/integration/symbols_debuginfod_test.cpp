// debuginfod end to end: a real `debuginfod` server on loopback serves the
// test program's debug file; `kiln --headless` with DEBUGINFOD_URLS (and a
// private DEBUGINFOD_CACHE_PATH) fetches it for a stripped binary that is
// not on this machine, and `kiln export` shows the names; a later run finds
// the file in that cache with no server reachable. A server that never
// answers shows that SIGTERM cancels a download in flight. The real-server
// case skips (77) when the debuginfod binary is not installed (Debian
// package `debuginfod`).
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "tests/child_process.h"
#include "tests/free_port.h"
#include "tests/integration/symbols_fixture.h"

namespace kiln::testing {
namespace {

namespace fs = std::filesystem;

std::string DebuginfodBinary() {
  for (const char* p : {"/usr/bin/debuginfod", "/usr/sbin/debuginfod", "/usr/local/bin/debuginfod"}) {
    if (access(p, X_OK) == 0) return p;
  }
  return "";
}

// `debuginfod -F DIR -p PORT -d DB` on loopback, killed at scope exit.
// A fresh folder under `work` holding only `debug_file`, for debuginfod -F.
std::string ServeFolder(const std::string& work, const std::string& debug_file) {
  const std::string serve = work + "/serve";
  fs::create_directories(serve);
  fs::copy_file(debug_file, serve + "/" + fs::path(debug_file).filename().string());
  return serve;
}

struct DebuginfodServer {
  DebuginfodServer(const std::string& binary, const std::string& serve_dir, const std::string& db) {
    port = FreePort();
    REQUIRE(port != 0);
    pid = testing::SpawnChild({binary, "-F", serve_dir, "-p", std::to_string(port), "-d", db, "-t", "1"},
                              testing::ChildOutput::Null(), testing::ChildOutput::File(db + ".log"));
  }
  ~DebuginfodServer() {
    kill(pid, SIGTERM);
    testing::WaitChild(pid);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }
  int pid = -1;
  int port = 0;
};

}  // namespace

// Runs first: it needs no debuginfod binary (the other case exits 77
// without one).
TEST_CASE("SIGTERM cancels a debuginfod download that hangs, and nothing is recorded for it") {
  // A server that accepts connections and never answers.
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(listen(listener, 8) == 0);
  socklen_t len = sizeof addr;
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  const std::string url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));

  TempDir dir;
  TempDir cache;
  // Without the cancel, the client would wait this long: past the test's
  // ctest timeout.
  setenv("DEBUGINFOD_TIMEOUT", "900", 1);
  setenv("DEBUGINFOD_CACHE_PATH", cache.path.c_str(), 1);
  HeadlessKiln kiln(dir.path, {"--debuginfod-urls", url});
  unsetenv("DEBUGINFOD_TIMEOUT");
  unsetenv("DEBUGINFOD_CACHE_PATH");
  Send(kiln.target(), VictimRequest("/nonexistent/kiln-test/victim", HtlhashOf(KILN_VICTIM_STRIPPED),
                                    BuildIdOf(KILN_VICTIM_STRIPPED), KILN_VICTIM));
  // The download has started once kiln connects.
  pollfd p{listener, POLLIN, 0};
  REQUIRE_MESSAGE(poll(&p, 1, 60'000) == 1, "kiln never asked the debuginfod server");
  const int connection = accept(listener, nullptr, nullptr);
  CHECK(kiln.Stop(SIGTERM) == 0);
  close(connection);
  close(listener);
  const std::string list = RunKiln({"symbols", "list", "--data-dir", dir.path}).out;
  CHECK_MESSAGE(list.find("status:    not attempted") != std::string::npos, list);
}

// The debuginfod binary, or exits 77 (skipped) after saying why.
std::string DebuginfodOrSkip() {
  const std::string debuginfod = DebuginfodBinary();
  if (debuginfod.empty()) {
    std::printf(
        "symbols_debuginfod_test: skipped: the debuginfod binary is not installed (apt install "
        "debuginfod)\n");
    std::fflush(stdout);
    std::_Exit(77);
  }
  return debuginfod;
}

// Waits until `server` has scanned its folder and serves `build_id`
// (checked with libdebuginfod's own client, with a fresh cache per try: the
// client remembers a 404 for ten minutes).
void WaitServed(const DebuginfodServer& server, const std::string& build_id, const std::string& scratch) {
  bool served = false;
  for (int i = 0; i < 120 && !served; ++i) {
    const std::string out =
        Shell("DEBUGINFOD_URLS=" + server.url() + " DEBUGINFOD_CACHE_PATH=" + scratch + "/probe-cache-" +
              build_id + "-" + std::to_string(i) + " debuginfod-find debuginfo " + build_id + " 2>/dev/null");
    served = !out.empty() && fs::exists(out);
    if (!served) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  REQUIRE_MESSAGE(served, "debuginfod did not serve " << build_id << " within 60 s");
}

TEST_CASE("a stripped binary from another host gets its names from a real debuginfod server") {
  const std::string debuginfod = DebuginfodOrSkip();
  TempDir work;
  DebuginfodServer server(debuginfod, ServeFolder(work.path, KILN_VICTIM_DEBUG),
                          work.path + "/debuginfod.sqlite");
  const std::string build_id = BuildIdOf(KILN_VICTIM_STRIPPED);
  REQUIRE(!build_id.empty());
  WaitServed(server, build_id, work.path);

  TempDir dir;
  const std::string cache = work.path + "/kiln-cache";
  setenv("DEBUGINFOD_URLS", server.url().c_str(), 1);
  setenv("DEBUGINFOD_CACHE_PATH", cache.c_str(), 1);
  HeadlessKiln kiln(dir.path);
  unsetenv("DEBUGINFOD_URLS");
  unsetenv("DEBUGINFOD_CACHE_PATH");
  Send(kiln.target(), VictimRequest("/nonexistent/kiln-test/victim", HtlhashOf(KILN_VICTIM_STRIPPED),
                                    build_id, KILN_VICTIM));
  const std::string folded = WaitForFolded(dir.path, kNamed, 90);
  CHECK_MESSAGE(folded.find(kNamed) != std::string::npos, folded);
  const std::string list = WaitForList(dir.path, "status:    symbolized");
  CHECK_MESSAGE(list.find("source:    debuginfod " + server.url()) != std::string::npos, list);
  // Downloaded into the configured cache, not the user's.
  CHECK(Shell("find '" + cache + "' -name debuginfo | head -1").find(build_id) != std::string::npos);
  CHECK(kiln.Stop(SIGTERM) == 0);

  // The same with --debuginfod-urls instead of the environment.
  TempDir dir2;
  setenv("DEBUGINFOD_CACHE_PATH", (work.path + "/kiln-cache-2").c_str(), 1);
  HeadlessKiln by_flag(dir2.path, {"--debuginfod-urls", server.url()});
  unsetenv("DEBUGINFOD_CACHE_PATH");
  Send(by_flag.target(), VictimRequest("/nonexistent/kiln-test/victim", HtlhashOf(KILN_VICTIM_STRIPPED),
                                       build_id, KILN_VICTIM));
  const std::string folded2 = WaitForFolded(dir2.path, kNamed, 90);
  CHECK_MESSAGE(folded2.find(kNamed) != std::string::npos, folded2);
  CHECK(by_flag.Stop(SIGTERM) == 0);
  CHECK_MESSAGE(
      by_flag.output().find("fetching missing debug files from debuginfod (1 server)") != std::string::npos,
      by_flag.output());

  // The first run's cache holds the file: a server that is down is not
  // needed, and the source says where the file came from.
  TempDir dir3;
  setenv("DEBUGINFOD_CACHE_PATH", cache.c_str(), 1);
  const int unused_port = FreePort();
  REQUIRE(unused_port != 0);
  HeadlessKiln cached(dir3.path, {"--debuginfod-urls", "http://127.0.0.1:" + std::to_string(unused_port)});
  unsetenv("DEBUGINFOD_CACHE_PATH");
  Send(cached.target(), VictimRequest("/nonexistent/kiln-test/victim", HtlhashOf(KILN_VICTIM_STRIPPED),
                                      build_id, KILN_VICTIM));
  const std::string list3 = WaitForList(dir3.path, "status:    symbolized");
  CHECK_MESSAGE(list3.find("source:    debuginfod cache") != std::string::npos, list3);
  CHECK(cached.Stop(SIGTERM) == 0);
}

TEST_CASE("a stripped library on this machine names only its exports; debuginfod brings the rest") {
  const std::string debuginfod = DebuginfodOrSkip();
  TempDir work;
  DebuginfodServer server(debuginfod, ServeFolder(work.path, KILN_VICTIM_LIB_DEBUG),
                          work.path + "/debuginfod.sqlite");
  const std::string lib = fs::canonical(KILN_VICTIM_LIB_STRIPPED).string();
  const std::string build_id = BuildIdOf(lib);
  REQUIRE(!build_id.empty());
  // The stripped copy's .dynsym has the exported function only.
  const std::string dynsym = Shell("nm -D --defined-only '" + lib + "'");
  CHECK(dynsym.find("kiln_lib_exported") != std::string::npos);
  CHECK(dynsym.find("kiln_lib_internal") == std::string::npos);
  WaitServed(server, build_id, work.path);

  // The library as an agent on this host sends it: its real path, ids, and
  // addresses (from nm of the unstripped build) without names.
  auto request = [&] {
    OtlpRequestBuilder b;
    auto* rp = b.Resource({{"process.executable.name", "victim"}});
    auto* profile = b.AddProfile(rp, "samples", "count", "cpu", "nanoseconds", kT0);
    const int32_t mapping = b.Mapping(lib, HtlhashOf(lib));
    b.request.mutable_dictionary()->mutable_mapping_table(mapping)->add_attribute_indices(
        b.StringAttribute("process.executable.build_id.gnu", build_id));
    const int32_t exported = b.Location(mapping, NmAddress(KILN_VICTIM_LIB, "kiln_lib_exported") + 4, {});
    const int32_t internal = b.Location(mapping, NmAddress(KILN_VICTIM_LIB, "kiln_lib_internal") + 4, {});
    OtlpRequestBuilder::AddSample(profile, b.Stack({internal, exported}), {}, {kT0, kT0 + 1000});
    return std::move(b.request);
  };
  const std::string named = "victim;kiln_lib_exported;kiln_lib_internal 2";

  // Without debuginfod: the local file's exports, and the static function
  // stays an address.
  TempDir local_only;
  {
    HeadlessKiln kiln(local_only.path);
    Send(kiln.target(), request());
    const std::string list = WaitForList(local_only.path, "status:    symbolized");
    CHECK_MESSAGE(list.find("source:    local file " + lib) != std::string::npos, list);
    const std::string folded = RunKiln({"export", "--data-dir", local_only.path}).out;
    CHECK_MESSAGE(folded.find("victim;kiln_lib_exported;victim_lib.stripped+0x") != std::string::npos,
                  folded);
    CHECK(kiln.Stop(SIGTERM) == 0);
  }
  // With debuginfod: the debug file names the static function too.
  TempDir dir;
  setenv("DEBUGINFOD_CACHE_PATH", (work.path + "/kiln-cache").c_str(), 1);
  HeadlessKiln kiln(dir.path, {"--debuginfod-urls", server.url()});
  unsetenv("DEBUGINFOD_CACHE_PATH");
  Send(kiln.target(), request());
  const std::string folded = WaitForFolded(dir.path, named, 90);
  CHECK_MESSAGE(folded.find(named) != std::string::npos, folded);
  const std::string list = WaitForList(dir.path, "status:    symbolized");
  CHECK_MESSAGE(list.find("source:    debuginfod " + server.url()) != std::string::npos, list);
  CHECK(kiln.Stop(SIGTERM) == 0);
}

}  // namespace kiln::testing
