#include "ingest/connection_guard.h"

#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"

#if defined(__linux__)
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <linux/tcp.h>  // tcp_info with tcpi_bytes_received (glibc's is older)
#include <sys/socket.h>
#include <unistd.h>
#endif
#include "storage/release_memory.h"

namespace kiln::ingest {

std::string_view ConnectionCloseDescription(ConnectionClose reason) {
  switch (reason) {
    case ConnectionClose::kTooManyFromHost:
      return "over the per-host connection cap";
    case ConnectionClose::kTooMany:
      return "over the connection cap";
    case ConnectionClose::kSilent:
      return "connected and silent";
    case ConnectionClose::kIdle:
      return "idle";
    case ConnectionClose::kStalled:
      return "stalled in the middle of a request";
    case ConnectionClose::kSlowRequest:
      return "too slow to send a request";
    case ConnectionClose::kPartialBudget:
      return "over the memory budget for requests being received";
  }
  return "?";
}

// ============================================================================
// [SECTION] Policy
// ============================================================================

std::vector<CloseDecision> ChooseConnectionsToClose(const std::vector<ConnectionView>& connections,
                                                    const ConnectionLimits& limits) {
  std::vector<CloseDecision> out;
  std::vector<bool> closing(connections.size(), false);
  auto close = [&](size_t i, ConnectionClose reason) {
    if (closing[i]) return;
    closing[i] = true;
    out.push_back({i, reason});
  };
  // Each connection on its own first: these free what they hold whatever
  // the totals are.
  for (size_t i = 0; i < connections.size(); ++i) {
    const ConnectionView& c = connections[i];
    if (c.silent && c.age_ms >= limits.silent_timeout.count()) {
      close(i, ConnectionClose::kSilent);
    } else if (c.quiet_ms >= limits.idle_timeout.count()) {
      close(i, ConnectionClose::kIdle);
    } else if (c.request_ms > 0 && c.quiet_ms >= limits.stalled_timeout.count()) {
      close(i, ConnectionClose::kStalled);
    } else if (c.request_ms >= limits.request_timeout.count()) {
      close(i, ConnectionClose::kSlowRequest);
    }
  }
  // Newest first among what is left: an agent that has been connected
  // for hours keeps its connection when a stranger floods.
  std::vector<size_t> by_age;
  for (size_t i = 0; i < connections.size(); ++i) {
    if (!closing[i]) by_age.push_back(i);
  }
  std::stable_sort(by_age.begin(), by_age.end(),
                   [&](size_t a, size_t b) { return connections[a].age_ms > connections[b].age_ms; });
  // by_age is oldest first: keep the first max_per_host of each host.
  std::map<std::string_view, size_t> per_host;
  size_t kept = 0;
  for (size_t i : by_age) {
    if (++per_host[connections[i].host] > limits.max_per_host) {
      close(i, ConnectionClose::kTooManyFromHost);
    } else if (limits.max_connections > 0 && ++kept > limits.max_connections) {
      close(i, ConnectionClose::kTooMany);
    }
  }
  // The memory of requests begun: the largest go until the rest fit.
  uint64_t partial = 0;
  std::vector<size_t> by_partial;
  for (size_t i = 0; i < connections.size(); ++i) {
    if (closing[i] || connections[i].request_ms == 0) continue;
    partial += connections[i].partial_bytes;
    by_partial.push_back(i);
  }
  std::sort(by_partial.begin(), by_partial.end(), [&](size_t a, size_t b) {
    return connections[a].partial_bytes > connections[b].partial_bytes;
  });
  for (size_t i : by_partial) {
    if (partial <= limits.max_partial_bytes) break;
    partial -= connections[i].partial_bytes;
    close(i, ConnectionClose::kPartialBudget);
  }
  return out;
}

uint64_t RaiseOpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
#if defined(__APPLE__)
    // macOS refuses more than OPEN_MAX for the soft limit.
    raised.rlim_cur = std::min<rlim_t>(limit.rlim_max, 10240);
#endif
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return limit.rlim_cur == RLIM_INFINITY ? UINT64_MAX : static_cast<uint64_t>(limit.rlim_cur);
}

// ============================================================================
// [SECTION] The guard's looks (Linux)
// ============================================================================

namespace {

// A request has begun once this much arrived since the last whole one;
// HTTP/2's own chatter (pings, window updates, settings) stays below it.
constexpr uint64_t kRequestBegunBytes = 16 << 10;
// Chatter under this per look, while no request has begun, is not counted
// toward one (hours of keepalive pings would add up otherwise).
constexpr uint64_t kChatterBytes = 256;

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class LinuxGuard final : public ConnectionGuard {
 public:
  LinuxGuard(ConnectionLimits limits, OnClose on_close) : limits_(limits), on_close_(std::move(on_close)) {
    if (limits_.max_connections == 0) {
      const uint64_t files = RaiseOpenFileLimit();
      limits_.max_connections = static_cast<size_t>(std::clamp<uint64_t>(files / 2, 64, 4096));
    }
  }
  void Watch(int port) override {
    port_ = port;
    if (limits_.period.count() > 0) thread_ = std::thread([this] { Loop(); });
  }
  ~LinuxGuard() override {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  void NoteAnswered(const std::string& grpc_peer) override {
    std::string peer = UnescapeGrpcPeer(grpc_peer);
    std::lock_guard lock(mu_);
    if (answered_.size() < 65536) answered_.insert(std::move(peer));
  }

  ConnectionGuardStats stats() const override {
    std::lock_guard lock(mu_);
    ConnectionGuardStats s = stats_;
    s.max_connections = limits_.max_connections;
    s.max_per_host = limits_.max_per_host;
    return s;
  }

  void LookOnce() override;

 private:
  struct Tracked {
    int64_t first_seen_ms = 0;
    uint64_t last_bytes = 0;  // received, at the last look
    uint64_t baseline = 0;    // received when the last request arrived whole (plus chatter)
    int64_t request_start_ms = 0;
    bool seen = false;  // in the current look
  };
  struct Socket {
    int fd;
    ino_t inode;
    std::string peer;  // as gRPC writes it
    std::string host;
    uint64_t bytes_received;
    uint32_t last_data_recv_ms;
  };
  std::vector<Socket> ListSockets() const;
  void Loop() {
    std::unique_lock lock(mu_);
    while (!cv_.wait_for(lock, limits_.period, [this] { return stop_; })) {
      lock.unlock();
      LookOnce();
      lock.lock();
    }
  }

  int port_ = -1;  // set by Watch() before the thread starts
  ConnectionLimits limits_;
  const OnClose on_close_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::set<std::string> answered_;  // guarded by mu_
  ConnectionGuardStats stats_;      // guarded by mu_
  std::map<ino_t, Tracked> tracked_;  // the guard's thread only
  uint64_t freed_partial_since_trim_ = 0;  // the guard's thread only
  std::thread thread_;
};

#if defined(__linux__)
// gRPC's peer string for an address: "ipv4:1.2.3.4:5", "ipv6:[::1]:5"; an
// IPv4 address mapped into IPv6 (a dual-stack listener) reads as IPv4.
bool PeerOf(const sockaddr_storage& a, std::string* peer, std::string* host) {
  char text[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
    inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
    *host = text;
    *peer = absl::StrCat("ipv4:", text, ":", ntohs(v4->sin_port));
    return true;
  }
  if (a.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
    if (IN6_IS_ADDR_V4MAPPED(&v6->sin6_addr)) {
      inet_ntop(AF_INET, &v6->sin6_addr.s6_addr[12], text, sizeof text);
      *host = text;
      *peer = absl::StrCat("ipv4:", text, ":", ntohs(v6->sin6_port));
    } else {
      inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
      *host = text;
      *peer = absl::StrCat("ipv6:[", text, "]:", ntohs(v6->sin6_port));
    }
    return true;
  }
  return false;
}

int LocalPort(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&a)->sin_port);
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&a)->sin6_port);
  return -1;
}

std::vector<LinuxGuard::Socket> LinuxGuard::ListSockets() const {
  std::vector<Socket> out;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return out;
  const int own = dirfd(dir);
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == own) continue;
    struct stat st {};
    if (fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_storage local{}, remote{};
    socklen_t len = sizeof local;
    if (getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&local), &len) != 0) continue;
    if (LocalPort(local) != port_) continue;
    int listening = 0;
    len = sizeof listening;
    if (getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || listening) continue;
    len = sizeof remote;
    if (getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&remote), &len) != 0) continue;
    tcp_info info{};
    len = sizeof info;
    if (getsockopt(static_cast<int>(fd), IPPROTO_TCP, TCP_INFO, &info, &len) != 0) continue;
    Socket s{.fd = static_cast<int>(fd), .inode = st.st_ino, .peer = {}, .host = {},
             .bytes_received = info.tcpi_bytes_received, .last_data_recv_ms = info.tcpi_last_data_recv};
    if (!PeerOf(remote, &s.peer, &s.host)) continue;
    out.push_back(std::move(s));
  }
  closedir(dir);
  return out;
}

void LinuxGuard::LookOnce() {
  std::vector<Socket> sockets = ListSockets();
  std::set<std::string> answered;
  {
    std::lock_guard lock(mu_);
    answered.swap(answered_);
  }
  const int64_t now = SteadyMs();
  for (auto& [inode, t] : tracked_) t.seen = false;
  std::vector<ConnectionView> views;
  views.reserve(sockets.size());
  uint64_t partial_total = 0;
  for (const Socket& s : sockets) {
    auto [it, fresh] = tracked_.try_emplace(s.inode);
    Tracked& t = it->second;
    t.seen = true;
    if (fresh) t.first_seen_ms = now;
    if (answered.contains(s.peer)) {
      t.baseline = s.bytes_received;
      t.request_start_ms = 0;
    } else if (t.request_start_ms == 0 && s.bytes_received - t.last_bytes < kChatterBytes &&
               s.bytes_received - t.baseline < kRequestBegunBytes) {
      t.baseline += s.bytes_received - t.last_bytes;
    }
    t.last_bytes = s.bytes_received;
    const uint64_t partial = s.bytes_received - std::min(t.baseline, s.bytes_received);
    if (partial >= kRequestBegunBytes && t.request_start_ms == 0) t.request_start_ms = now;
    ConnectionView v{.host = s.host,
                     .age_ms = now - t.first_seen_ms,
                     .silent = s.bytes_received == 0,
                     .quiet_ms = s.bytes_received == 0 ? now - t.first_seen_ms : s.last_data_recv_ms,
                     .partial_bytes = t.request_start_ms != 0 ? partial : 0,
                     .request_ms = t.request_start_ms != 0 ? std::max<int64_t>(1, now - t.request_start_ms) : 0};
    partial_total += v.partial_bytes;
    views.push_back(std::move(v));
  }
  std::erase_if(tracked_, [](const auto& entry) { return !entry.second.seen; });
  const std::vector<CloseDecision> decisions = ChooseConnectionsToClose(views, limits_);
  ConnectionCloseCounts closed{};
  uint64_t partial_closed = 0;
  for (const CloseDecision& d : decisions) {
    const Socket& s = sockets[d.index];
    // The fd may have been closed and reused since the listing: only the
    // same socket is shut down. gRPC sees the end of the stream and closes
    // the connection (and its fd) itself.
    struct stat st {};
    if (fstat(s.fd, &st) != 0 || st.st_ino != s.inode) continue;
    if (shutdown(s.fd, SHUT_RDWR) != 0) continue;
    ++closed[static_cast<size_t>(d.reason)];
    partial_closed += views[d.index].partial_bytes;
    if (on_close_) on_close_(d.reason, s.host);
  }
  // Requests cut off free what gRPC buffered, but glibc keeps freed memory
  // in its per-thread arenas; hand it back so kiln's size follows what it
  // holds (the run stayed at 1.3 GB after the attack ended).
  if (freed_partial_since_trim_ += partial_closed; freed_partial_since_trim_ >= (uint64_t{32} << 20)) {
    storage::ReleaseFreedMemory();
    freed_partial_since_trim_ = 0;
  }
  std::lock_guard lock(mu_);
  stats_.open = sockets.size();
  stats_.partial_bytes = partial_total;
  for (size_t i = 0; i < kConnectionCloseCount; ++i) stats_.closed[i] += closed[i];
}
#else
std::vector<LinuxGuard::Socket> LinuxGuard::ListSockets() const { return {}; }
void LinuxGuard::LookOnce() {}
#endif

}  // namespace

std::unique_ptr<ConnectionGuard> ConnectionGuard::Create(ConnectionLimits limits, OnClose on_close) {
  return std::make_unique<LinuxGuard>(limits, std::move(on_close));
}

std::string UnescapeGrpcPeer(std::string_view grpc_peer) {
  std::string peer(grpc_peer);
  for (auto [from, to] : {std::pair<std::string_view, char>{"%5B", '['}, {"%5D", ']'}}) {
    for (size_t at; (at = peer.find(from)) != std::string::npos;) peer.replace(at, from.size(), 1, to);
  }
  return peer;
}

}  // namespace kiln::ingest
