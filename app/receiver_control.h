// Who may send, as the app decides it: the receiver's options from flags,
// the environment and the window's saved choices (ResolveReceiverOptions,
// pure), and ReceiverControl, the receiver the window can restart with a
// token or on loopback only while its worker reads the stats.
//
// Threads: ResolveReceiverOptions anywhere. ReceiverControl: Start/Stop
// from one owning thread (the UI's), stats()/options() from any thread.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "ingest/forward/forwarder.h"
#include "ingest/otlp_receiver.h"
#include "storage/store.h"

namespace kiln::app {

inline constexpr const char* kDefaultListenAddress = "0.0.0.0:11000";

// The receiver's part of the command line.
struct ReceiverFlags {
  std::string listen_address;   // "" = the saved choice, else kDefaultListenAddress
  std::string auth_token_file;  // --auth-token-file
  std::string tls_cert_file, tls_key_file, tls_client_ca_file;
  uint64_t max_sender_bytes_per_second = 0;  // --max-sender-rate (0 = no limit)
};

// Where the token comes from, for the status line and the agent commands.
struct ResolvedReceiver {
  ingest::ReceiverOptions options;
  // The file agents can be given (-auth-token-file): --auth-token-file, or
  // the saved token file; "" when the token came from KILN_AUTH_TOKEN or
  // there is none.
  std::string token_file;
  std::string token_source;  // "--auth-token-file F", "KILN_AUTH_TOKEN", "F (saved by the window)", ""
};

// The token: --auth-token-file, else $KILN_AUTH_TOKEN, else the token file
// the window's "Require a token" wrote (`saved_token_file`, when it exists).
// The address: --listen, else `saved_listen` (the window's preference), else
// kDefaultListenAddress. An unreadable token or TLS file is an error naming it.
[[nodiscard]] absl::StatusOr<ResolvedReceiver> ResolveReceiverOptions(
    const ReceiverFlags& flags, const std::function<const char*(const char*)>& getenv,
    const std::string& saved_token_file, const std::string& saved_listen = "");

// The token file "Require a token" writes: beside settings.ini
// ($XDG_CONFIG_HOME/kiln/auth-token), so it outlives the store.
std::string SavedTokenFile(const std::string& settings_ini_path);

class ReceiverControl {
 public:
  explicit ReceiverControl(storage::Store& store) : store_(store) {}
  ~ReceiverControl() { Stop(); }
  ReceiverControl(const ReceiverControl&) = delete;
  ReceiverControl& operator=(const ReceiverControl&) = delete;

  // Starts, or restarts with new options (the old receiver answers what it
  // has in flight first). When the new options cannot be served the old
  // ones are started again and the error returned.
  [[nodiscard]] absl::Status Start(const ResolvedReceiver& resolved);
  void Stop();
  // nullopt while not listening.
  std::optional<ingest::ReceiverStats> stats() const;
  ResolvedReceiver resolved() const;
  // --forward: where the requests this receiver accepts go on to, for the
  // window's status line. `forwarder` (null: none) must outlive this, or be
  // set to null before it goes.
  void SetForwarder(const ingest::Forwarder* forwarder);
  std::vector<ingest::ForwardStatus> forward_status() const;  // empty without --forward

 private:
  storage::Store& store_;
  mutable std::mutex mu_;
  std::shared_ptr<ingest::OtlpReceiver> receiver_;  // guarded by mu_; stats() copies it
  ResolvedReceiver resolved_;                       // guarded by mu_
  const ingest::Forwarder* forwarder_ = nullptr;    // guarded by mu_
};

}  // namespace kiln::app
