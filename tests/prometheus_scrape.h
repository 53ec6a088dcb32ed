// Reading Kiln's /metrics as a Prometheus server would: an HTTP GET, and
// the text parsed by an independent parser (Python's prometheus_client,
// Debian's python3-prometheus-client). For doctest tests.
#pragma once

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>

#include "tests/temp_dir.h"

namespace kiln::testing {

inline constexpr const char* kPrometheusPython = "/usr/bin/python3";

inline bool HavePrometheusParser() {
  return std::system((std::string(kPrometheusPython) + " -c 'import prometheus_client' 2>/dev/null").c_str()) == 0;
}

// "name{k="v",...}" -> value, as prometheus_client.parser reads `text`
// (labels sorted by name). Fails the test when the parser refuses it.
inline std::map<std::string, double> ParsePrometheus(const std::string& text) {
  TempDir dir("kiln-metrics");
  const std::string in = dir.path + "/metrics.txt", script = dir.path + "/parse.py";
  std::ofstream(in) << text;
  std::ofstream(script) << "import sys\n"
                           "from prometheus_client.parser import text_string_to_metric_families\n"
                           "for family in text_string_to_metric_families(open(sys.argv[1]).read()):\n"
                           "    for s in family.samples:\n"
                           "        labels = ','.join('%s=\"%s\"' % (k, s.labels[k]) for k in sorted(s.labels))\n"
                           "        print('%s{%s}\\t%r\\t%s' % (s.name, labels, s.value, family.type))\n";
  const std::string command = std::string(kPrometheusPython) + " " + script + " " + in + " 2>&1";
  FILE* p = popen(command.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int rc = pclose(p);
  REQUIRE_MESSAGE(rc == 0, "prometheus_client could not parse it: " << out);
  std::map<std::string, double> values;
  std::istringstream lines(out);
  // name TAB value TAB type: label values hold spaces ("On-CPU (samples)").
  for (std::string line; std::getline(lines, line);) {
    const size_t tab = line.find('\t');
    REQUIRE_MESSAGE(tab != std::string::npos, line);
    values[line.substr(0, tab)] = std::stod(line.substr(tab + 1));
  }
  return values;
}

// A TCP connection to 127.0.0.1:`port`, or -1 when nothing listens there.
inline int ConnectLoopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// GET /metrics on 127.0.0.1:`port` over HTTP/1.0: status line and body.
inline std::pair<std::string, std::string> ScrapeMetrics(int port, const std::string& basic_auth = "") {
  const int fd = ConnectLoopback(port);
  REQUIRE(fd >= 0);
  std::string request = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n";
  if (!basic_auth.empty()) request += "Authorization: Basic " + basic_auth + "\r\n";
  request += "\r\n";
  REQUIRE(write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size()));
  std::string response;
  char buf[8192];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) response.append(buf, static_cast<size_t>(n));
  close(fd);
  const size_t head_end = response.find("\r\n\r\n");
  REQUIRE(head_end != std::string::npos);
  return {response.substr(0, response.find("\r\n")), response.substr(head_end + 4)};
}

}  // namespace kiln::testing
