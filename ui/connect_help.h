// What "Connect an agent" tells a user: for each way of sending profiles to
// this kiln, a title, a line of explanation and the exact text to copy.
// Pure (connect_help_test); the addresses come from the app
// (app/local_addresses.h), the port from the receiver's listen address.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace kiln::ui {

// How senders must identify themselves to this kiln.
struct ReceiverAccess {
  bool token = false;
  std::string token_file;  // what agents on this machine can read; "" = not in a file
  bool tls = false;
  bool client_certificates = false;  // mutual TLS
};

struct ConnectRecipe {
  std::string title;
  std::string explanation;
  std::string text;  // commands or a config file, copied as is
};

// `listen_address` is the receiver's ("0.0.0.0:11000", "[::]:11000",
// "127.0.0.1:40123"); `addresses` are this machine's, the most useful
// first (see LocalAddresses). An agent on this machine uses 127.0.0.1; one
// elsewhere uses the first address, or the laptop through an ssh tunnel.
// With a token the commands pass it (-auth-token-file, the Collector's
// headers); with TLS they verify kiln's certificate instead of -disable-tls.
// `local_agent` is how this machine runs kiln-agent (LocalAgentCommand); ""
// when it has none, and then the first recipe says how to get it.
std::vector<ConnectRecipe> ConnectRecipes(const std::string& listen_address,
                                          const std::vector<std::string>& addresses,
                                          const ReceiverAccess& access = {},
                                          const std::string& local_agent = "kiln-agent");

// How to run kiln-agent on this machine, as the commands above write it:
// the agent built beside this kiln (a source build: build/app/kiln and
// build/agent/kiln-agent), then one installed beside it, then one on PATH;
// "kiln-agent" when it is in a directory sudo searches (Debian's
// secure_path), else its absolute path (a source build is on nobody's
// PATH, and sudo would not find ~/.local/bin). "" when there is none.
// `kiln_path` is this program's absolute path; `is_executable` tests a path.
std::string LocalAgentCommand(const std::string& kiln_path, const std::string& path_env,
                              const std::function<bool(const std::string&)>& is_executable);

// The status line's one-line summary of who may send: "open to the network,
// no token", "loopback only, no token", "token required", "TLS, token
// required", ... `warn` is set when any host that reaches the port can send.
std::string AccessSummary(const std::string& listen_address, const ReceiverAccess& access, bool* warn);

// The port of "host:port" / "[v6]:port", or "" when there is none.
std::string PortOf(const std::string& listen_address);

// True when the receiver listens on loopback only, so other hosts cannot
// reach it whatever address they use.
bool LoopbackOnly(const std::string& listen_address);

}  // namespace kiln::ui
