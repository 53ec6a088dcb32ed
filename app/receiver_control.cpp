#include "app/receiver_control.h"

#include <filesystem>

namespace kiln::app {

absl::StatusOr<ResolvedReceiver> ResolveReceiverOptions(const ReceiverFlags& flags,
                                                        const std::function<const char*(const char*)>& getenv,
                                                        const std::string& saved_token_file,
                                                        const std::string& saved_listen) {
  ResolvedReceiver r;
  r.options.listen_address = !flags.listen_address.empty() ? flags.listen_address
                             : !saved_listen.empty()       ? saved_listen
                                                           : kDefaultListenAddress;
  ingest::ReceiverSecurity& security = r.options.security;
  if (!flags.auth_token_file.empty()) {
    absl::StatusOr<std::string> token = ingest::ReadTokenFile(flags.auth_token_file);
    if (!token.ok()) return token.status();
    security.auth_token = *token;
    r.token_file = flags.auth_token_file;
    r.token_source = "--auth-token-file " + flags.auth_token_file;
  } else if (const char* env = getenv("KILN_AUTH_TOKEN"); env != nullptr && *env != '\0') {
    // The same rules as a file's token.
    absl::StatusOr<std::string> token = ingest::ParseToken(env, "KILN_AUTH_TOKEN");
    if (!token.ok()) return token.status();
    security.auth_token = *token;
    r.token_source = "KILN_AUTH_TOKEN";
  } else if (!saved_token_file.empty() && std::filesystem::exists(saved_token_file)) {
    absl::StatusOr<std::string> token = ingest::ReadTokenFile(saved_token_file);
    if (!token.ok()) return token.status();
    security.auth_token = *token;
    r.token_file = saved_token_file;
    r.token_source = saved_token_file + " (saved by the window)";
  }
  r.options.max_sender_bytes_per_second = flags.max_sender_bytes_per_second;
  security.tls_cert_file = flags.tls_cert_file;
  security.tls_key_file = flags.tls_key_file;
  security.tls_client_ca_file = flags.tls_client_ca_file;
  // Read now, so a wrong path is a start-up error rather than a receiver
  // that never listens.
  for (auto [file, what] : {std::pair{&security.tls_cert_file, "TLS certificate"},
                            {&security.tls_key_file, "TLS key"},
                            {&security.tls_client_ca_file, "TLS client CA"}}) {
    if (file->empty()) continue;
    if (file == &security.tls_key_file) {
      if (absl::Status secret = ingest::CheckSecretFile(*file, what); !secret.ok()) return secret;
    }
    if (absl::StatusOr<std::string> pem = ingest::ReadPemFile(*file, what); !pem.ok()) return pem.status();
  }
  if (security.tls_cert_file.empty() != security.tls_key_file.empty() ||
      (!security.tls_client_ca_file.empty() && security.tls_cert_file.empty())) {
    return absl::InvalidArgumentError(
        "TLS needs both --tls-cert and --tls-key (and --tls-client-ca needs them too)");
  }
  return r;
}

std::string SavedTokenFile(const std::string& settings_ini_path) {
  return (std::filesystem::path(settings_ini_path).parent_path() / "auth-token").string();
}

absl::Status ReceiverControl::Start(const ResolvedReceiver& resolved) {
  std::shared_ptr<ingest::OtlpReceiver> old;
  ResolvedReceiver old_resolved;
  {
    std::lock_guard lock(mu_);
    old = std::move(receiver_);
    old_resolved = resolved_;
  }
  // The old one frees the port before the new one binds it.
  if (old) old->Stop();
  old.reset();
  absl::StatusOr<std::unique_ptr<ingest::OtlpReceiver>> started =
      ingest::OtlpReceiver::Start(&store_, resolved.options);
  absl::Status error;
  if (!started.ok()) {
    error = started.status();
    if (old_resolved.options.listen_address.empty()) return error;
    started = ingest::OtlpReceiver::Start(&store_, old_resolved.options);
    if (!started.ok()) return error;
  }
  std::lock_guard lock(mu_);
  receiver_ = std::shared_ptr<ingest::OtlpReceiver>(std::move(*started));
  resolved_ = error.ok() ? resolved : old_resolved;
  return error;
}

void ReceiverControl::Stop() {
  std::shared_ptr<ingest::OtlpReceiver> old;
  {
    std::lock_guard lock(mu_);
    old = std::move(receiver_);
  }
  if (old) old->Stop();
}

std::optional<ingest::ReceiverStats> ReceiverControl::stats() const {
  std::shared_ptr<ingest::OtlpReceiver> r;
  {
    std::lock_guard lock(mu_);
    r = receiver_;
  }
  if (!r) return std::nullopt;
  return r->stats();
}

ResolvedReceiver ReceiverControl::resolved() const {
  std::lock_guard lock(mu_);
  return resolved_;
}

void ReceiverControl::SetForwarder(const ingest::Forwarder* forwarder) {
  std::lock_guard lock(mu_);
  forwarder_ = forwarder;
}

std::vector<ingest::ForwardStatus> ReceiverControl::forward_status() const {
  std::lock_guard lock(mu_);  // held while reading: SetForwarder(nullptr) waits for it
  return forwarder_ ? forwarder_->Status() : std::vector<ingest::ForwardStatus>{};
}

}  // namespace kiln::app
