// This machine's network addresses, for "Connect an agent": IPv4 before
// IPv6, no loopback and no IPv6 link-local (an agent cannot use those
// without an interface name). Any thread; reads the interfaces each call.
#pragma once

#include <string>
#include <vector>

namespace kiln::app {

std::vector<std::string> LocalAddresses();

}  // namespace kiln::app
