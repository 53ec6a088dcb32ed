// This machine's network addresses, for "Connect an agent": IPv4 before
// IPv6, no loopback and no IPv6 link-local (an agent cannot use those
// without an interface name). Any thread; reads the interfaces each call.
#pragma once

#include <string>
#include <vector>

namespace kiln::app {

std::vector<std::string> LocalAddresses();

// How this machine runs kiln-agent, for the commands the window shows
// (ui::LocalAgentCommand from this program's path and PATH); "" when the
// agent is nowhere to be found.
std::string LocalAgent();

}  // namespace kiln::app
