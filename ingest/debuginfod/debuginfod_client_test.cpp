// FetchDebugInfo against servers on 127.0.0.1: a small HTTP server written
// here for what a real debuginfod does not do on demand (a slow transfer, a
// 500, a 404, a hang), then a real debuginfod server serving a folder that
// holds the debug file of c_stripped. Without the debuginfod binary (package
// `debuginfod`) the real-server cases print why and exit 77 (ctest: skipped);
// they come last so the others run either way.
#include "ingest/debuginfod/debuginfod_client.h"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "ingest/symbols/elf_identity.h"
#include "ingest/symbols/symbols_test_util.h"

using namespace kiln::symbols;
using namespace kiln::symbols::testing;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr char kSomeId[] = "0123456789abcdef0123456789abcdef01234567";

sockaddr_in Loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  return addr;
}

int PortOf(int socket_fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  getsockname(socket_fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

// A port nobody listens on right now (bound and released).
int FreePort() {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr = Loopback(0);
  bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  const int port = PortOf(s);
  close(s);
  return port;
}

// Sends all of `bytes`; false once the client has gone.
bool SendAll(int fd, const std::string& bytes) {
  for (size_t off = 0; off < bytes.size();) {
    const ssize_t n = send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

// An HTTP/1.1 server on loopback, a thread per connection, whose answer to
// each request is written by `answer(fd, path, stop)`; `stop` turns true
// when the server is destroyed, so a slow answer can end.
class TestHttpServer {
 public:
  using Answer = std::function<void(int fd, const std::string& path, const std::atomic<bool>& stop)>;

  explicit TestHttpServer(Answer answer) : answer_(std::move(answer)) {
    listener_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr = Loopback(0);
    REQUIRE(bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    REQUIRE(listen(listener_, 16) == 0);
    port_ = PortOf(listener_);
    accept_thread_ = std::thread([this] { AcceptLoop(); });
  }
  ~TestHttpServer() {
    stop_ = true;
    accept_thread_.join();
    for (std::thread& t : connections_) t.join();
    close(listener_);
  }
  TestHttpServer(const TestHttpServer&) = delete;
  TestHttpServer& operator=(const TestHttpServer&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<std::string> paths() const {
    std::lock_guard lock(mutex_);
    return paths_;
  }

 private:
  void AcceptLoop() {
    while (!stop_) {
      pollfd p{listener_, POLLIN, 0};
      if (poll(&p, 1, 50) != 1) continue;
      const int fd = accept(listener_, nullptr, nullptr);
      if (fd >= 0) connections_.emplace_back([this, fd] { Serve(fd); });
    }
  }
  void Serve(int fd) {
    std::string request;
    char buf[4096];
    while (request.find("\r\n\r\n") == std::string::npos) {
      const ssize_t n = recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      request.append(buf, static_cast<size_t>(n));
    }
    // "GET /buildid/<id>/debuginfo HTTP/1.1"
    const size_t start = request.find(' ') + 1;
    const std::string path = request.substr(start, request.find(' ', start) - start);
    {
      std::lock_guard lock(mutex_);
      paths_.push_back(path);
    }
    answer_(fd, path, stop_);
    close(fd);
  }

  Answer answer_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread accept_thread_;
  std::vector<std::thread> connections_;  // only the accept thread adds
  mutable std::mutex mutex_;
  std::vector<std::string> paths_;
};

std::string Header(const std::string& status, size_t length) {
  return "HTTP/1.1 " + status + "\r\nContent-Length: " + std::to_string(length) +
         "\r\nConnection: close\r\n\r\n";
}

// Answers every request with `status` and `body`.
TestHttpServer::Answer Fixed(const std::string& status, const std::string& body) {
  return [=](int fd, const std::string&, const std::atomic<bool>&) {
    SendAll(fd, Header(status, body.size()) + body);
  };
}

// Bytes that differ from offset to offset, so a misplaced chunk shows.
std::string Pattern(size_t size) {
  std::string out(size, '\0');
  for (size_t i = 0; i < size; ++i) out[i] = static_cast<char>((i * 2654435761u) >> 13);
  return out;
}

std::vector<std::string> FilesIn(const std::string& folder) {
  std::vector<std::string> out;
  if (!fs::exists(folder)) return out;
  for (const auto& entry : fs::recursive_directory_iterator(folder))
    if (!entry.is_directory()) out.push_back(fs::relative(entry.path(), folder).string());
  return out;
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

// [SECTION] Without a real server

TEST_CASE("debuginfod: a malformed id, no server configured, an unreachable server") {
  TempDir dir;
  for (const char* bad : {"", "abc", "xyz0", "12 34"}) {
    CAPTURE(bad);
    CHECK(FetchDebugInfo(bad, {.urls = "http://127.0.0.1:1", .cache_dir = dir / "cache"}).status().code() ==
          absl::StatusCode::kInvalidArgument);
  }

  const char* env = std::getenv("DEBUGINFOD_URLS");
  const std::string saved = env ? env : "";
  unsetenv("DEBUGINFOD_URLS");
  auto none = FetchDebugInfo(kSomeId, {.cache_dir = dir / "cache"});
  setenv("DEBUGINFOD_URLS", "   ", 1);
  auto blank = FetchDebugInfo(kSomeId, {.cache_dir = dir / "cache"});
  if (saved.empty()) {
    unsetenv("DEBUGINFOD_URLS");
  } else {
    setenv("DEBUGINFOD_URLS", saved.c_str(), 1);
  }
  CHECK(none.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(none.status().message().find("DEBUGINFOD_URLS") != std::string::npos);
  CHECK(blank.status().code() == absl::StatusCode::kFailedPrecondition);

  const std::string dead = "http://127.0.0.1:" + std::to_string(FreePort());
  auto unreachable = FetchDebugInfo(kSomeId, {.urls = dead, .cache_dir = dir / "cache"});
  REQUIRE_FALSE(unreachable.ok());
  CHECK(unreachable.status().code() == absl::StatusCode::kUnavailable);
  const std::string message(unreachable.status().message());
  CHECK_MESSAGE(message.find(dead + ": server unreachable (") != std::string::npos, message);
  CHECK(message.find(kSomeId) != std::string::npos);
  CHECK(FilesIn(dir / "cache").empty());
}

TEST_CASE("debuginfod: 404 from every server is NotFound; a 500 names the server and the code") {
  TempDir dir;
  TestHttpServer missing(Fixed("404 Not Found", "no such build id"));
  TestHttpServer missing_too(Fixed("404 Not Found", ""));
  auto not_found = FetchDebugInfo(
      kSomeId, {.urls = missing.url() + " " + missing_too.url() + "/", .cache_dir = dir / "cache"});
  CHECK(not_found.status().code() == absl::StatusCode::kNotFound);
  CHECK(not_found.status().message().find("not found (404)") != std::string::npos);
  CHECK(not_found.status().message().find(kSomeId) != std::string::npos);
  // The protocol's path, with no doubled slash from "url/".
  CHECK(missing.paths() == std::vector<std::string>{std::string("/buildid/") + kSomeId + "/debuginfo"});
  CHECK(missing_too.paths() == missing.paths());
  // The error page is not a debug file.
  CHECK(FilesIn(dir / "cache").empty());

  TestHttpServer broken(Fixed("500 Internal Server Error", "database is locked"));
  auto failed = FetchDebugInfo(kSomeId, {.urls = broken.url(), .cache_dir = dir / "cache"});
  CHECK(failed.status().code() == absl::StatusCode::kUnavailable);
  const std::string message(failed.status().message());
  CHECK_MESSAGE(message.find(broken.url() + ": server error (HTTP 500)") != std::string::npos, message);
  CHECK(FilesIn(dir / "cache").empty());

  // One server without the file and one broken: not "not found", since the
  // broken one might have it.
  auto mixed =
      FetchDebugInfo(kSomeId, {.urls = missing.url() + " " + broken.url(), .cache_dir = dir / "cache"});
  CHECK(mixed.status().code() == absl::StatusCode::kUnavailable);
  CHECK(mixed.status().message().find(missing.url() + ": not found (404)") != std::string::npos);
}

TEST_CASE("debuginfod: the first server with the file wins, after a redirect, and the answer names it") {
  TempDir dir;
  const std::string body = Pattern(3 << 20);
  TestHttpServer has_it(Fixed("200 OK", body));
  TestHttpServer redirects([&](int fd, const std::string& path, const std::atomic<bool>&) {
    SendAll(fd, "HTTP/1.1 302 Found\r\nLocation: " + has_it.url() + path +
                    "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  });
  TestHttpServer missing(Fixed("404 Not Found", "no"));
  const std::string dead = "http://127.0.0.1:" + std::to_string(FreePort());

  std::vector<std::pair<int64_t, int64_t>> progress;
  DebuginfodOptions options{.urls = dead + " " + missing.url() + " " + redirects.url() + "/",
                            .cache_dir = dir / "cache"};
  options.progress = [&](int64_t done, int64_t total) { progress.emplace_back(done, total); };
  const auto start = Clock::now();
  auto fetched = FetchDebugInfo(kSomeId, options);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  REQUIRE_MESSAGE(fetched.ok(), fetched.status().ToString());
  MESSAGE("3 MiB over loopback in " << seconds << " s");
  CHECK(fetched->path == dir / (std::string("cache/") + kSomeId + "/debuginfo"));
  CHECK(fetched->server == redirects.url());
  CHECK_FALSE(fetched->from_cache);
  CHECK(ReadFileBytes(fetched->path) == body);
  // Only the finished file: no temporary file is left next to it.
  CHECK(FilesIn(dir / "cache") == std::vector<std::string>{std::string(kSomeId) + "/debuginfo"});
  REQUIRE_FALSE(progress.empty());
  CHECK(progress.back() == std::pair<int64_t, int64_t>(body.size(), body.size()));

  // Cached now: the servers are not asked again.
  auto again = FetchDebugInfo(kSomeId, {.urls = missing.url(), .cache_dir = dir / "cache"});
  REQUIRE(again.ok());
  CHECK(again->from_cache);
  CHECK(again->path == fetched->path);
  CHECK(again->server.empty());
  CHECK(missing.paths().size() == 1);
}

TEST_CASE("debuginfod: DEBUGINFOD_MAXSIZE refuses a larger file") {
  TempDir dir;
  TestHttpServer has_it(Fixed("200 OK", Pattern(50'000)));
  setenv("DEBUGINFOD_MAXSIZE", "10000", 1);
  auto fetched = FetchDebugInfo(kSomeId, {.urls = has_it.url(), .cache_dir = dir / "cache"});
  setenv("DEBUGINFOD_MAXSIZE", "60000", 1);
  auto fits = FetchDebugInfo(kSomeId, {.urls = has_it.url(), .cache_dir = dir / "cache"});
  unsetenv("DEBUGINFOD_MAXSIZE");
  CHECK(fetched.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(fetched.status().message().find("DEBUGINFOD_MAXSIZE (10000 bytes)") != std::string::npos);
  CHECK(fits.ok());
}

// A transfer of Pattern(size) that sends `chunk` bytes every 20 ms until
// done or the client leaves.
TestHttpServer::Answer Trickle(size_t size, size_t chunk) {
  return [size, chunk](int fd, const std::string&, const std::atomic<bool>& stop) {
    const std::string body = Pattern(size);
    if (!SendAll(fd, Header("200 OK", size))) return;
    for (size_t off = 0; off < size && !stop; off += chunk) {
      if (!SendAll(fd, body.substr(off, chunk))) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  };
}

TEST_CASE(
    "debuginfod: cancel during a slow transfer leaves no partial file; progress comes about once a second") {
  TempDir dir;
  const size_t size = 64 << 20;  // would take over five minutes
  // About 200 KiB/s, well above DEBUGINFOD_TIMEOUT's floor.
  TestHttpServer slow(Trickle(size, 4096));
  std::atomic<bool> cancel{false};
  std::mutex mutex;
  std::vector<std::pair<int64_t, int64_t>> progress;
  std::vector<Clock::time_point> when;
  DebuginfodOptions options{.urls = slow.url(), .cache_dir = dir / "cache"};
  options.cancel = &cancel;
  options.progress = [&](int64_t done, int64_t total) {
    std::lock_guard lock(mutex);
    progress.emplace_back(done, total);
    when.push_back(Clock::now());
  };
  absl::StatusOr<FetchedDebugInfo> result = absl::UnknownError("not run");
  Clock::time_point returned;
  std::thread fetch([&] {
    result = FetchDebugInfo(kSomeId, options);
    returned = Clock::now();
  });
  const std::string folder = dir / (std::string("cache/") + kSomeId);
  // Until the third progress report: bytes are arriving and sit in a
  // temporary file, so its removal below means something.
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (Clock::now() < deadline) {
    {
      std::lock_guard lock(mutex);
      if (progress.size() >= 3) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const std::vector<std::string> during = FilesIn(folder);
  const auto cancelled_at = Clock::now();
  cancel = true;
  fetch.join();
  const double latency = std::chrono::duration<double>(returned - cancelled_at).count();
  MESSAGE("cancel took " << latency * 1000 << " ms");

  CHECK(result.status().code() == absl::StatusCode::kCancelled);
  CHECK(latency < 1.0);
  REQUIRE(during.size() == 1);
  CHECK(during[0].rfind("debuginfo.", 0) == 0);
  CHECK(FilesIn(folder).empty());
  std::lock_guard lock(mutex);
  REQUIRE(progress.size() >= 3);
  CHECK(progress.back().first > 0);
  CHECK(progress.back().first < static_cast<int64_t>(size));
  CHECK(progress.back().second == static_cast<int64_t>(size));
  // Loose bounds: the machine may be busy; the loop itself wakes every
  // 100 ms, so a report per wake-up would fail the first.
  for (size_t i = 1; i < when.size(); ++i) {
    const double gap = std::chrono::duration<double>(when[i] - when[i - 1]).count();
    CHECK(gap > 0.5);
    CHECK(gap < 2.0);
  }
}

TEST_CASE("debuginfod: cancel while the server has not answered yet") {
  TempDir dir;
  // Accepts, reads the request, never answers (until the test ends).
  TestHttpServer silent([](int, const std::string&, const std::atomic<bool>& stop) {
    while (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  });
  std::atomic<bool> cancel{false};
  DebuginfodOptions options{.urls = silent.url(), .cache_dir = dir / "cache"};
  options.cancel = &cancel;
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    cancel = true;
  });
  const auto start = Clock::now();
  auto result = FetchDebugInfo(kSomeId, options);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  later.join();
  CHECK(result.status().code() == absl::StatusCode::kCancelled);
  CHECK(seconds < 1.5);
  CHECK(silent.paths().size() == 1);
}

TEST_CASE("debuginfod: four threads fetching the same id all get the complete file") {
  TempDir dir;
  const std::string body = Pattern(8 << 20);
  TestHttpServer has_it(Fixed("200 OK", body));
  std::vector<absl::StatusOr<FetchedDebugInfo>> results(4, absl::UnknownError("not run"));
  std::vector<std::string> contents(4);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      // Started together, so their downloads overlap.
      ++ready;
      while (ready < 4) std::this_thread::yield();
      results[i] = FetchDebugInfo(kSomeId, {.urls = has_it.url(), .cache_dir = dir / "cache"});
      if (results[i].ok()) contents[i] = ReadFileBytes(results[i]->path);
    });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < 4; ++i) {
    CAPTURE(i);
    REQUIRE_MESSAGE(results[i].ok(), results[i].status().ToString());
    CHECK(results[i]->path == results[0]->path);
    CHECK(contents[i].size() == body.size());
    CHECK(contents[i] == body);
  }
  MESSAGE(has_it.paths().size() << " of 4 fetches downloaded (the rest found the file cached)");
  CHECK(FilesIn(dir / "cache") == std::vector<std::string>{std::string(kSomeId) + "/debuginfo"});
}

// [SECTION] Against a real debuginfod server

// The debuginfod server binary, or exits 77 (skipped) after saying why.
// debuginfod-find comes in the same package.
std::string DebuginfodOrSkip() {
  const std::string server_bin = KILN_DEBUGINFOD_BIN;
  if (server_bin.empty() || access(server_bin.c_str(), X_OK) != 0) {
    std::printf(
        "debuginfod_client_test: skipped: the debuginfod server binary is not installed "
        "(Debian package debuginfod)\n");
    std::fflush(stdout);
    std::_Exit(77);
  }
  return server_bin;
}

TEST_CASE("debuginfod: a real server serves by build id; the cache answers once it is gone") {
  const std::string server_bin = DebuginfodOrSkip();
  TempDir dir;
  CopyFileTo(TestBin("c_stripped.debug"), dir / "serve/c_stripped.debug");
  auto id = ReadElfIdentity(TestBin("c_stripped"));
  REQUIRE(id.ok());
  auto server =
      std::make_unique<DebuginfodServer>(server_bin, dir / "serve", dir / "debuginfod.sqlite", FreePort());
  const std::string url = server->url();
  const std::string cache = dir / "cache";

  // The server listens a moment after it starts, and answers 404 until it
  // has scanned its folder; a failed try leaves nothing in the cache, so the
  // same folder is used each time.
  absl::StatusOr<FetchedDebugInfo> fetched = absl::UnknownError("not tried");
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < deadline && server->running()) {
    fetched = FetchDebugInfo(id->gnu_build_id, {.urls = url + "/", .cache_dir = cache});
    if (fetched.ok()) break;
    CHECK(FilesIn(cache).empty());
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  INFO("server log: " << ReadFileBytes(dir / "debuginfod.log").substr(0, 2000));
  REQUIRE_MESSAGE(fetched.ok(), fetched.status().ToString());
  CHECK(fetched->path == cache + "/" + id->gnu_build_id + "/debuginfo");
  CHECK(fetched->server == url);
  CHECK_FALSE(fetched->from_cache);
  CHECK(ReadFileBytes(fetched->path) == ReadFileBytes(TestBin("c_stripped.debug")));
  auto fetched_id = ReadElfIdentity(fetched->path);
  REQUIRE(fetched_id.ok());
  CHECK(fetched_id->gnu_build_id == id->gnu_build_id);
  CHECK(fetched_id->has_debug_info);

  // An unreachable server listed first does not stop the one that has it.
  const std::string dead = "http://127.0.0.1:" + std::to_string(FreePort());
  auto second = FetchDebugInfo(id->gnu_build_id, {.urls = dead + " " + url, .cache_dir = dir / "cache-2"});
  REQUIRE_MESSAGE(second.ok(), second.status().ToString());
  CHECK(second->server == url);
  CHECK(ReadFileBytes(second->path) == ReadFileBytes(TestBin("c_stripped.debug")));

  // Uppercase hex is the same id, and the same cache entry.
  std::string upper_id = id->gnu_build_id;
  for (char& c : upper_id) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  auto upper = FetchDebugInfo(upper_id, {.urls = url, .cache_dir = cache});
  REQUIRE(upper.ok());
  CHECK(upper->path == fetched->path);

  auto unknown = FetchDebugInfo(kSomeId, {.urls = url, .cache_dir = cache});
  CHECK(unknown.status().code() == absl::StatusCode::kNotFound);
  CHECK(unknown.status().message().find(kSomeId) != std::string::npos);

  // With the server gone, the cached file is still the answer, and the
  // server that is down now is not reported.
  server.reset();
  auto cached = FetchDebugInfo(id->gnu_build_id, {.urls = url, .cache_dir = cache});
  REQUIRE_MESSAGE(cached.ok(), cached.status().ToString());
  CHECK(cached->from_cache);
  CHECK(cached->path == fetched->path);
  CHECK(cached->server.empty());
  // ... and a file not cached is now unreachable.
  CHECK(FetchDebugInfo(id->gnu_build_id, {.urls = url, .cache_dir = dir / "cache-3"}).status().code() ==
        absl::StatusCode::kUnavailable);
}

TEST_CASE("debuginfod: this client and libdebuginfod's debuginfod-find fill one cache at once") {
  const std::string find_bin = fs::path(DebuginfodOrSkip()).parent_path() / "debuginfod-find";
  REQUIRE(access(find_bin.c_str(), X_OK) == 0);
  TempDir dir;
  const size_t size = 8 << 20;
  // 256 KiB every 20 ms: about 0.7 s, so the downloads overlap.
  TestHttpServer has_it(Trickle(size, 256 << 10));
  const std::string cache = dir / "cache";
  const std::string command = "DEBUGINFOD_URLS=" + has_it.url() + " DEBUGINFOD_CACHE_PATH=" + cache + " " +
                              find_bin + " debuginfo " + kSomeId + " 2>&1";
  std::vector<FILE*> others;
  for (int i = 0; i < 2; ++i) others.push_back(popen(command.c_str(), "r"));
  std::vector<absl::StatusOr<FetchedDebugInfo>> ours(2, absl::UnknownError("not run"));
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i)
    threads.emplace_back(
        [&, i] { ours[i] = FetchDebugInfo(kSomeId, {.urls = has_it.url(), .cache_dir = cache}); });
  for (std::thread& t : threads) t.join();
  const std::string expected_path = cache + "/" + kSomeId + "/debuginfo";
  for (FILE* other : others) {
    REQUIRE(other != nullptr);
    std::string out;
    char buf[4096];
    while (size_t n = std::fread(buf, 1, sizeof(buf), other)) out.append(buf, n);
    CHECK(pclose(other) == 0);
    CHECK(out == expected_path + "\n");
  }
  for (const auto& result : ours) {
    REQUIRE_MESSAGE(result.ok(), result.status().ToString());
    CHECK(result->path == expected_path);
  }
  MESSAGE(has_it.paths().size() << " of 4 fetches downloaded (the rest found the file cached)");
  CHECK(ReadFileBytes(expected_path) == Pattern(size));
  CHECK(FilesIn(cache + "/" + kSomeId) == std::vector<std::string>{"debuginfo"});
}
