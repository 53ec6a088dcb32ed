// What binutils and coreutils say about an ELF file (htlhash by its
// definition, build id from readelf, symbol addresses from nm): the oracle
// the symbolization tests compare kiln against. Test-only.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace kiln::testing {

inline std::string Shell(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  REQUIRE_MESSAGE(p != nullptr, command);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

// The htlhash by its definition: sha256 of the first and last 4096 bytes and
// the size as 8 big-endian bytes, first 32 hex digits.
inline std::string HtlhashOf(const std::string& path) {
  const std::string size = Shell("stat -c %s '" + path + "'");
  std::string size_bytes;
  const unsigned long long n = std::stoull(size);
  for (int i = 7; i >= 0; --i) {
    char b[8];
    std::snprintf(b, sizeof b, "\\%03o", static_cast<unsigned>((n >> (8 * i)) & 0xff));
    size_bytes += b;
  }
  return Shell("( head -c 4096 '" + path + "'; tail -c 4096 '" + path + "'; printf '" + size_bytes +
               "' ) | sha256sum | cut -c1-32");
}

inline std::string BuildIdOf(const std::string& path) {
  return Shell("readelf -n '" + path + "' | sed -n 's/.*Build ID: *//p'");
}

inline uint64_t NmAddress(const std::string& path, const std::string& symbol) {
  const std::string hex = Shell("nm '" + path + "' | awk '$3 == \"" + symbol + "\" {print $1}'");
  REQUIRE_MESSAGE(!hex.empty(), "nm finds no " << symbol << " in " << path);
  return std::stoull(hex, nullptr, 16);
}

}  // namespace kiln::testing
