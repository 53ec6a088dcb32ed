#include "app/local_addresses.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "ui/connect_help.h"

namespace kiln::app {

std::vector<std::string> LocalAddresses() {
  std::vector<std::string> v4, v6;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return {};
  for (const ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || (a->ifa_flags & IFF_LOOPBACK) || !(a->ifa_flags & IFF_UP)) continue;
    char text[INET6_ADDRSTRLEN] = {};
    if (a->ifa_addr->sa_family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
      if (inet_ntop(AF_INET, &in->sin_addr, text, sizeof text)) v4.emplace_back(text);
    } else if (a->ifa_addr->sa_family == AF_INET6) {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(a->ifa_addr);
      if (IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr)) continue;
      if (inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text)) v6.emplace_back(text);
    }
  }
  freeifaddrs(list);
  for (auto* v : {&v4, &v6}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
  v4.insert(v4.end(), v6.begin(), v6.end());
  return v4;
}

std::string LocalAgent() {
  std::error_code ec;
  // Linux only (so is the agent); elsewhere the commands say how to get one.
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const char* path = std::getenv("PATH");
  return ui::LocalAgentCommand(ec ? std::string() : self.string(), path ? path : "",
                               [](const std::string& p) { return access(p.c_str(), X_OK) == 0; });
}

}  // namespace kiln::app
