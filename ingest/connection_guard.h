// ConnectionGuard: bounds what TCP connections to the OTLP receiver can take
// from kiln, whoever opens them. gRPC (1.51, as Debian 12 ships it) accepts
// every connection and keeps it as long as the peer likes, buffers each
// request whole before kiln sees it, and after one failed accept (EMFILE:
// too many open files) its listener never accepts again. So kiln raises its
// open-file limit at start (RaiseOpenFileLimit) and the guard looks at the
// process's sockets on the listening port several times a second, shutting
// down those past the limits below; gRPC then closes them as if the peer
// had. A well-behaved agent reconnects and resends: nothing it was told was
// stored is lost.
//
// The policy (ChooseConnectionsToClose) is a pure function of what a look
// saw, tested without sockets; the guard's thread does the looking (Linux:
// /proc/self/fd and TCP_INFO). Elsewhere the guard only counts nothing and
// the limits gRPC enforces itself (handshake timeout, connection age) stay.
//
// Threads: the guard runs its own thread; NoteAnswered() and stats() from
// any thread.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::ingest {

struct ConnectionLimits {
  // Connections in all (0 = half the open-file limit, at most 4096) and
  // from one host (address); past them the newest are closed.
  size_t max_connections = 0;
  size_t max_per_host = 64;
  // Connected but never sent a byte (not even HTTP/2's preface).
  std::chrono::milliseconds silent_timeout{std::chrono::seconds(10)};
  // Not a byte, not even a keepalive ping, for this long.
  std::chrono::milliseconds idle_timeout{std::chrono::minutes(5)};
  // A request begun (bytes received since the last whole request) and
  // nothing new for this long, or not finished after `request_timeout`.
  std::chrono::milliseconds stalled_timeout{std::chrono::seconds(30)};
  std::chrono::milliseconds request_timeout{std::chrono::minutes(2)};
  // Bytes of requests begun and not yet received whole, all connections
  // together: gRPC holds them in memory. Past it, the largest go first.
  uint64_t max_partial_bytes = uint64_t{128} << 20;
  // How often the guard looks. Over loopback a sender pushes hundreds of
  // MB a second, so the memory budget is only as tight as this is short.
  std::chrono::milliseconds period{std::chrono::milliseconds(50)};
};

// Why the guard closed a connection; one line each in the log's words.
enum class ConnectionClose : uint8_t {
  kTooManyFromHost,
  kTooMany,
  kSilent,
  kIdle,
  kStalled,
  kSlowRequest,
  kPartialBudget,
};
inline constexpr size_t kConnectionCloseCount = 7;
std::string_view ConnectionCloseDescription(ConnectionClose reason);
using ConnectionCloseCounts = std::array<uint64_t, kConnectionCloseCount>;

// One connection as a look saw it.
struct ConnectionView {
  std::string host;          // the peer's address
  int64_t age_ms = 0;        // since the guard first saw it
  bool silent = false;       // has not sent a byte
  int64_t quiet_ms = 0;      // since its last byte arrived
  uint64_t partial_bytes = 0;  // of a request begun and not received whole
  int64_t request_ms = 0;    // since that request began (0 = none begun)
};

// Which connections to close and why: indexes into `connections`, each at
// most once. Pure.
struct CloseDecision {
  size_t index;
  ConnectionClose reason;
};
std::vector<CloseDecision> ChooseConnectionsToClose(const std::vector<ConnectionView>& connections,
                                                    const ConnectionLimits& limits);

// Raises the soft open-file limit to the hard one (a desktop session's
// soft limit is often 1,024, which a thousand idle connections exhaust).
// Returns the soft limit now in force.
uint64_t RaiseOpenFileLimit();

struct ConnectionGuardStats {
  size_t open = 0;             // connections at the last look
  uint64_t partial_bytes = 0;  // requests begun, at the last look
  size_t max_connections = 0;  // as applied
  size_t max_per_host = 0;
  ConnectionCloseCounts closed{};  // since start
  bool operator==(const ConnectionGuardStats&) const = default;
};

// gRPC's peer string with its IPv6 brackets unescaped ("ipv6:%5B::1%5D:5"
// -> "ipv6:[::1]:5"), as the guard names sockets.
std::string UnescapeGrpcPeer(std::string_view grpc_peer);

class ConnectionGuard {
 public:
  // Called on the guard's thread for every connection it closes.
  using OnClose = std::function<void(ConnectionClose reason, const std::string& host)>;
  // A guard that looks at nothing until Watch(): it exists before the
  // server accepts its first connection, so NoteAnswered() always has one.
  static std::unique_ptr<ConnectionGuard> Create(ConnectionLimits limits, OnClose on_close);
  virtual ~ConnectionGuard() = default;
  // Guards the connections accepted on `port` (this process's sockets
  // whose local port it is) from now on. Starts its thread unless
  // `limits.period` is 0 (tests then call LookOnce). Call once.
  virtual void Watch(int port) = 0;
  // A request from `grpc_peer` ("ipv4:10.0.0.5:53412") arrived whole: what
  // its connection received so far is no longer a partial request.
  virtual void NoteAnswered(const std::string& grpc_peer) = 0;
  virtual ConnectionGuardStats stats() const = 0;
  virtual void LookOnce() = 0;
};

}  // namespace kiln::ingest
