#pragma once
// Command line of kiln-agent. The flag names and syntax are those of the
// OpenTelemetry eBPF profiler (Go's `flag` package: `-name=value`,
// `-name value`, `--name`, booleans as `-name` or `-name=false`), so commands
// written for it or for devfiler work unchanged.
//
// ParseAgentFlags is pure: the environment comes in through `getenv`, so tests
// can pass a fake one.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "result.h"

namespace kiln::agent {

struct AgentOptions {
  std::string collection_agent;  // HOST:PORT of the OTLP gRPC receiver
  bool disable_tls = false;      // TLS (verifying the server) unless set
  std::string tls_ca_file;       // -tls-ca-file: trust this CA (PEM), not the system roots
  std::string auth_token_file;   // -auth-token-file: sent as "authorization: Bearer <token>"
  // OTEL_EXPORTER_OTLP_HEADERS ("k1=v1,k2=v2", percent-decoded), sent with
  // every export; the token file's header replaces an authorization here.
  std::vector<std::pair<std::string, std::string>> headers;
  int samples_per_second = 20;   // per CPU
  std::chrono::nanoseconds reporter_interval = std::chrono::seconds(5);
  // Extra resource attributes on every process, in order: OTEL_RESOURCE_ATTRIBUTES
  // first, then -tags (later wins on duplicate keys).
  std::vector<std::pair<std::string, std::string>> resource_attributes;
  bool symbolize = true;  // -no-symbolize turns host symbolization off
  bool verbose = false;
  double off_cpu_threshold = 0;               // probability a switched-out thread is followed
  std::uint32_t unwind_table_rows = 4u << 20;  // CFI rows in the BPF maps (4 bytes each)
  std::size_t max_unsent_bytes = 16u << 20;  // queue bound before dropping oldest
  bool show_version = false;
  bool show_help = false;
};

using GetEnvFn = std::function<const char*(const char*)>;

// argv without the program name. An error names the flag and reads like Go's
// ("invalid value \"x\" for flag -samples-per-second: ...").
[[nodiscard]] Result<AgentOptions> ParseAgentFlags(std::span<const std::string_view> args,
                                                   const GetEnvFn& getenv);

// Go's time.ParseDuration subset: "5s", "500ms", "1m30s", "1h", "250us", "10ns".
[[nodiscard]] std::optional<std::chrono::nanoseconds> ParseGoDuration(std::string_view text);

// OTEL_RESOURCE_ATTRIBUTES: "k1=v1,k2=v2", values percent-decoded.
[[nodiscard]] Result<std::vector<std::pair<std::string, std::string>>> ParseResourceAttributes(
    std::string_view text);

// The headers every export carries: OTEL_EXPORTER_OTLP_HEADERS, then the
// token from -auth-token-file (read here: an unreadable or empty file is an
// error naming it). Keys are lower-cased, as gRPC metadata requires.
[[nodiscard]] Result<std::vector<std::pair<std::string, std::string>>> ExportHeaders(
    const AgentOptions& options);

// The PEM text of -tls-ca-file ("" when not given); an error names the file.
[[nodiscard]] Result<std::string> ReadTlsCaFile(const AgentOptions& options);

std::string AgentUsage();

}  // namespace kiln::agent
