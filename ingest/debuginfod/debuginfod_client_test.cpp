// FetchDebugInfo against a real debuginfod server on 127.0.0.1 that serves a
// folder holding the debug file of c_stripped. Without the debuginfod binary
// (package `debuginfod`) the test prints why and exits 77 (ctest: skipped).
#include "ingest/debuginfod/debuginfod_client.h"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "ingest/symbols/elf_identity.h"
#include "ingest/symbols/symbols_test_util.h"

using namespace kiln::symbols;
using namespace kiln::symbols::testing;

namespace {

// A port nobody listens on right now (bound and released).
int FreePort() {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len);
  close(s);
  return ntohs(addr.sin_port);
}

class DebuginfodServer {
 public:
  DebuginfodServer(const std::string& binary, const std::string& serve_dir, const std::string& db, int port)
      : port_(port) {
    std::fflush(nullptr);  // or the child repeats what stdout holds
    pid_ = fork();
    if (pid_ == 0) {
      std::string p = std::to_string(port);
      std::freopen((serve_dir + "/../debuginfod.log").c_str(), "w", stderr);
      std::freopen("/dev/null", "w", stdout);
      execl(binary.c_str(), binary.c_str(), "-F", serve_dir.c_str(), "-p", p.c_str(), "-d", db.c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
  }
  ~DebuginfodServer() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int status = 0;
      for (int i = 0; i < 50 && waitpid(pid_, &status, WNOHANG) == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (waitpid(pid_, &status, WNOHANG) == 0) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
      }
    }
  }
  DebuginfodServer(const DebuginfodServer&) = delete;
  DebuginfodServer& operator=(const DebuginfodServer&) = delete;
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  bool running() const { return pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0; }

 private:
  int port_;
  pid_t pid_ = -1;
};

}  // namespace

TEST_CASE("debuginfod: fetch by build id, 404 for an unknown id, unreachable server, no URLs") {
  std::string server_bin = KILN_DEBUGINFOD_BIN;
  if (server_bin.empty() || access(server_bin.c_str(), X_OK) != 0) {
    std::printf(
        "debuginfod_client_test: skipped: the debuginfod server binary is not installed "
        "(Debian package debuginfod)\n");
    std::fflush(stdout);
    std::_Exit(77);
  }
  TempDir dir;
  CopyFileTo(TestBin("c_stripped.debug"), dir / "serve/c_stripped.debug");
  auto id = ReadElfIdentity(TestBin("c_stripped"));
  REQUIRE(id.ok());
  DebuginfodServer server(server_bin, dir / "serve", dir / "debuginfod.sqlite", FreePort());

  // The server scans its folder after it starts; until then it answers 404,
  // which libdebuginfod caches, so every try uses a cache folder of its own.
  absl::StatusOr<std::string> fetched = absl::UnknownError("not tried");
  std::vector<std::pair<int64_t, int64_t>> progress;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  int attempt = 0;
  std::string cache;
  while (std::chrono::steady_clock::now() < deadline && server.running()) {
    cache = dir / ("cache" + std::to_string(attempt++));
    DebuginfodOptions options{.urls = server.url(), .cache_dir = cache};
    options.progress = [&](int64_t done, int64_t total) { progress.emplace_back(done, total); };
    fetched = FetchDebugInfo(id->gnu_build_id, options);
    if (fetched.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  INFO("server log: " << ReadFileBytes(dir / "debuginfod.log").substr(0, 2000));
  REQUIRE_MESSAGE(fetched.ok(), fetched.status().ToString());
  CHECK(fetched->rfind(cache + "/", 0) == 0);
  CHECK(ReadFileBytes(*fetched) == ReadFileBytes(TestBin("c_stripped.debug")));
  auto fetched_id = ReadElfIdentity(*fetched);
  REQUIRE(fetched_id.ok());
  CHECK(fetched_id->gnu_build_id == id->gnu_build_id);
  CHECK(fetched_id->has_debug_info);

  // Served again from the cache (the server is not asked: same path).
  auto again = FetchDebugInfo(id->gnu_build_id, {.urls = server.url(), .cache_dir = cache});
  REQUIRE(again.ok());
  CHECK(*again == *fetched);

  auto unknown =
      FetchDebugInfo("0123456789abcdef0123456789abcdef01234567", {.urls = server.url(), .cache_dir = cache});
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.status().code() == absl::StatusCode::kNotFound);
  CHECK(unknown.status().message().find("not found (404)") != std::string::npos);
  CHECK(unknown.status().message().find("0123456789abcdef0123456789abcdef01234567") != std::string::npos);

  std::string dead = "http://127.0.0.1:" + std::to_string(FreePort());
  auto unreachable = FetchDebugInfo(id->gnu_build_id, {.urls = dead, .cache_dir = dir / "cache-dead"});
  REQUIRE_FALSE(unreachable.ok());
  CHECK(unreachable.status().code() == absl::StatusCode::kUnavailable);
  CHECK(unreachable.status().message().find("server unreachable") != std::string::npos);
  CHECK(unreachable.status().message().find(dead) != std::string::npos);

  std::atomic<bool> cancel{true};
  DebuginfodOptions cancelled{.urls = server.url(), .cache_dir = dir / "cache-cancel"};
  cancelled.cancel = &cancel;
  CHECK(FetchDebugInfo(id->gnu_build_id, cancelled).status().code() == absl::StatusCode::kCancelled);

  CHECK(FetchDebugInfo("xyz", {.urls = server.url()}).status().code() == absl::StatusCode::kInvalidArgument);

  // No server configured anywhere.
  const char* env = std::getenv("DEBUGINFOD_URLS");
  std::string saved = env ? env : "";
  unsetenv("DEBUGINFOD_URLS");
  auto none = FetchDebugInfo(id->gnu_build_id, {.cache_dir = dir / "cache-none"});
  if (!saved.empty()) setenv("DEBUGINFOD_URLS", saved.c_str(), 1);
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(none.status().message().find("DEBUGINFOD_URLS") != std::string::npos);
}
