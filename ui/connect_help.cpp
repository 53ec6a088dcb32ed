#include "ui/connect_help.h"

namespace kiln::ui {

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

std::vector<ConnectRecipe> ConnectRecipes(const std::string& listen_address,
                                          const std::vector<std::string>& addresses) {
  std::string port = PortOf(listen_address);
  if (port.empty()) port = "11000";
  const std::string local = "127.0.0.1:" + port;
  // IPv6 addresses need brackets before a port.
  std::string remote_host = addresses.empty() || LoopbackOnly(listen_address) ? "THIS-MACHINE" : addresses.front();
  if (remote_host.find(':') != std::string::npos) remote_host = "[" + remote_host + "]";
  const std::string remote = remote_host + ":" + port;

  std::vector<ConnectRecipe> r;
  r.push_back({"kiln-agent on this machine",
               "Samples every CPU of this Linux machine and sends here (needs root for BPF).",
               "sudo kiln-agent -collection-agent=" + local + " -disable-tls"});
  r.push_back({"kiln-agent on another host",
               "Run on the host to profile; it must reach this machine's port " + port + ".",
               "sudo kiln-agent -collection-agent=" + remote + " -disable-tls"});
  r.push_back({"OpenTelemetry eBPF profiler (standalone)",
               "The upstream agent takes the same flags.",
               "sudo ebpf-profiler -collection-agent=" + remote + " -disable-tls"});
  r.push_back({"OpenTelemetry Collector with the profiling receiver",
               "The eBPF profiler as the Collector's `profiling` receiver, exporting here with the "
               "`otlp` exporter. Save as kiln.yaml and run the Collector distribution that contains the "
               "receiver with: --config kiln.yaml --feature-gates=service.profilesSupport",
               "receivers:\n"
               "  profiling:\n"
               "exporters:\n"
               "  otlp:\n"
               "    endpoint: " + remote + "\n"
               "    tls:\n"
               "      insecure: true\n"
               "service:\n"
               "  pipelines:\n"
               "    profiles:\n"
               "      receivers: [profiling]\n"
               "      exporters: [otlp]\n"});
  r.push_back({"Through an ssh tunnel",
               "When the host cannot reach this machine: run the first line here (it forwards the "
               "host's port " + port + " to this kiln), then the agent on the host.",
               "ssh -R " + port + ":localhost:" + port + " USER@HOST\n"
               "sudo kiln-agent -collection-agent=127.0.0.1:" + port + " -disable-tls"});
  return r;
}

}  // namespace kiln::ui
