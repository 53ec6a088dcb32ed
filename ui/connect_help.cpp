#include "ui/connect_help.h"

#include <filesystem>
#include <string_view>

namespace kiln::ui {

std::string LocalAgentCommand(const std::string& kiln_path, const std::string& path_env,
                              const std::function<bool(const std::string&)>& is_executable) {
  namespace fs = std::filesystem;
  const fs::path here = fs::path(kiln_path).parent_path();
  std::vector<fs::path> candidates = {here / ".." / "agent" / "kiln-agent", here / "kiln-agent"};
  for (size_t start = 0; start <= path_env.size();) {
    size_t end = path_env.find(':', start);
    if (end == std::string::npos) end = path_env.size();
    // An empty PATH entry is the current directory: not a place to offer.
    if (end > start && path_env[start] == '/') candidates.push_back(fs::path(path_env.substr(start, end - start)) / "kiln-agent");
    start = end + 1;
  }
  constexpr std::string_view kSudoPath[] = {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin",
                                           "/usr/bin",        "/sbin",           "/bin"};
  for (const fs::path& c : candidates) {
    const fs::path found = c.lexically_normal();
    if (!found.is_absolute() || !is_executable(found.string())) continue;
    for (std::string_view dir : kSudoPath) {
      if (found.parent_path() == fs::path(dir)) return "kiln-agent";
    }
    return found.string();
  }
  return "";
}

std::string PortOf(const std::string& listen_address) {
  const size_t colon = listen_address.rfind(':');
  if (colon == std::string::npos || colon + 1 >= listen_address.size()) return "";
  const std::string port = listen_address.substr(colon + 1);
  if (port.find_first_not_of("0123456789") != std::string::npos) return "";
  return port;
}

bool LoopbackOnly(const std::string& listen_address) {
  return listen_address.rfind("127.", 0) == 0 || listen_address.rfind("localhost:", 0) == 0 ||
         listen_address.rfind("[::1]:", 0) == 0;
}

std::string AccessSummary(const std::string& listen_address, const ReceiverAccess& access, bool* warn) {
  const bool loopback = LoopbackOnly(listen_address);
  *warn = !loopback && !access.token && !access.client_certificates;
  std::string s = loopback ? "loopback only" : "open to the network";
  if (access.client_certificates) {
    s += ", mutual TLS";
  } else if (access.tls) {
    s += ", TLS";
  }
  s += access.token ? ", token required" : ", no token";
  return s;
}

std::vector<ConnectRecipe> ConnectRecipes(const std::string& listen_address,
                                          const std::vector<std::string>& addresses,
                                          const ReceiverAccess& access, const std::string& local_agent) {
  std::string port = PortOf(listen_address);
  if (port.empty()) port = "11000";
  // A TLS certificate names a host; "localhost" is the name most carry.
  const std::string local = (access.tls ? "localhost:" : "127.0.0.1:") + port;
  // IPv6 addresses need brackets before a port.
  std::string remote_host = addresses.empty() || LoopbackOnly(listen_address) ? "THIS-MACHINE" : addresses.front();
  if (remote_host.find(':') != std::string::npos) remote_host = "[" + remote_host + "]";
  const std::string remote = remote_host + ":" + port;
  // The agent's flags for how this kiln wants to be reached. TLS verifies
  // kiln's certificate: CA.pem stands for the CA that signed it.
  const std::string transport = access.tls ? " -tls-ca-file CA.pem" : " -disable-tls";
  const std::string local_token = !access.token               ? ""
                                  : access.token_file.empty() ? " -auth-token-file TOKEN-FILE"
                                                              : " -auth-token-file " + access.token_file;
  const std::string remote_token = access.token ? " -auth-token-file TOKEN-FILE" : "";
  const std::string token_note =
      access.token ? " Copy the token file" +
                         (access.token_file.empty() ? std::string() : " (" + access.token_file + ")") +
                         " to the host as TOKEN-FILE, readable by root only."
                   : "";

  std::vector<ConnectRecipe> r;
  r.push_back({"kiln-agent on this machine",
               local_agent.empty()
                   ? "Samples every CPU of this Linux machine and sends here (needs root for BPF). kiln-agent "
                     "is not on this machine: install the kiln-agent package, or build it from source "
                     "(bash packaging/test.sh builds build/agent/kiln-agent)."
                   : "Samples every CPU of this Linux machine and sends here (needs root for BPF).",
               "sudo " + (local_agent.empty() ? std::string("kiln-agent") : local_agent) +
                   " -collection-agent=" + local + transport + local_token});
  r.push_back({"kiln-agent on another host",
               "Run on the host to profile (the kiln-agent package, or a copy of a build's "
               "build/agent/kiln-agent); it must reach this machine's port " +
                   port + "." + token_note,
               "sudo kiln-agent -collection-agent=" + remote + transport + remote_token});
  if (access.token || access.client_certificates) {
    r.push_back({"OpenTelemetry eBPF profiler (standalone)",
                 "The standalone binary cannot send a token or a client certificate: run it as the "
                 "Collector's profiling receiver (below), or use kiln-agent.",
                 "sudo ebpf-profiler -collection-agent=" + remote + transport + "  # refused by this kiln"});
  } else {
    r.push_back({"OpenTelemetry eBPF profiler (standalone)", "The upstream agent takes the same flags.",
                 "sudo ebpf-profiler -collection-agent=" + remote + transport});
  }
  std::string tls_config =
      access.tls ? "    tls:\n      ca_file: CA.pem\n" : "    tls:\n      insecure: true\n";
  if (access.client_certificates) tls_config += "      cert_file: CLIENT.pem\n      key_file: CLIENT.key\n";
  const std::string headers =
      access.token ? "    headers:\n      authorization: \"Bearer ${env:KILN_TOKEN}\"\n" : "";
  r.push_back({"OpenTelemetry Collector with the profiling receiver",
               "The eBPF profiler as the Collector's `profiling` receiver, exporting here with the "
               "`otlp` exporter. Save as kiln.yaml and run the Collector distribution that contains the "
               "receiver with: --config kiln.yaml --feature-gates=service.profilesSupport" +
                   std::string(access.token ? " (with KILN_TOKEN set to the token in its environment)" : ""),
               "receivers:\n"
               "  profiling:\n"
               "exporters:\n"
               "  otlp:\n"
               "    endpoint: " +
                   remote + "\n" + tls_config + headers +
                   "service:\n"
                   "  pipelines:\n"
                   "    profiles:\n"
                   "      receivers: [profiling]\n"
                   "      exporters: [otlp]\n"});
  r.push_back({"Through an ssh tunnel",
               "When the host cannot reach this machine: run the first line here (it forwards the "
               "host's port " +
                   port + " to this kiln), then the agent on the host.",
               "ssh -R " + port + ":localhost:" + port +
                   " USER@HOST\n"
                   "sudo kiln-agent -collection-agent=" +
                   local + transport + remote_token});
  return r;
}

}  // namespace kiln::ui
