// Who may send to the OTLP receiver: a bearer token and TLS, and the pure
// pieces behind them (the token check, token files).
//
// The receiver is open on 0.0.0.0 by default so a remote agent can reach a
// laptop; the OpenTelemetry eBPF profiler's standalone binary cannot send
// headers, so a token stays opt-in. When one is set every Export, loopback
// included, must carry "authorization: Bearer <token>".
//
// Threads: pure functions, safe from any thread.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kiln::ingest {

struct ReceiverSecurity {
  // "" = no token required.
  std::string auth_token;
  // PEM files. TLS when cert and key are set; with a client CA, clients
  // must also present a certificate it signed (mutual TLS).
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_client_ca_file;
  bool tls() const { return !tls_cert_file.empty(); }
};

enum class TokenCheck {
  kOk,
  kMissing,    // no authorization header
  kNotBearer,  // a header, but not "Bearer <token>"
  kWrong,      // a bearer token that is not this kiln's
};

// Checks an authorization header value (nullptr: none was sent) against
// `token`. The comparison takes the same time wherever the two differ, so
// the answer's timing tells a sender nothing about the token.
TokenCheck CheckBearerToken(const std::string_view* header, std::string_view token);

// What an UNAUTHENTICATED answer says: why, and how to send the token.
std::string UnauthenticatedMessage(TokenCheck check);

// A token as written by a user: surrounding white space dropped; empty, or
// with characters a header cannot carry, is an error naming `source` ("token
// file PATH", "KILN_AUTH_TOKEN").
[[nodiscard]] absl::StatusOr<std::string> ParseToken(std::string_view text, std::string_view source);

// A file holding a secret (a token, a TLS key) is refused, as ssh refuses
// a private key, when it is a symbolic link, belongs to another user, or
// others may read or change it; the error says how to mend it. OK for a
// missing file (reading it then says so).
[[nodiscard]] absl::Status CheckSecretFile(const std::string& path, std::string_view what);

// Reads a token file (CheckSecretFile first): surrounding white space is
// dropped; an empty file, one over 4 KiB or a token with characters a
// header cannot carry is an error naming the file.
[[nodiscard]] absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

// A new token: 32 bytes from the system's random source, as 64 hex digits.
[[nodiscard]] absl::StatusOr<std::string> GenerateToken();

// Writes `token` to `path` readable by its owner only (0600), replacing the
// file atomically; creates the parent directory.
[[nodiscard]] absl::Status WriteTokenFile(const std::string& path, std::string_view token);

// Checks that a TLS file can be read and looks like PEM; the error names
// the file and what it was meant to be ("TLS certificate", ...).
[[nodiscard]] absl::StatusOr<std::string> ReadPemFile(const std::string& path, std::string_view what);

}  // namespace kiln::ingest
