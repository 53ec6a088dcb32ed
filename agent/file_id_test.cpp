#include "file_id.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

using namespace kiln::agent;

namespace {

// The definition, computed by coreutils: head, tail, the size as 8
// big-endian bytes, sha256sum, first 32 hex digits.
std::string HtlHashWithShell(const std::string& path, std::uint64_t size) {
  std::string size_bytes;
  for (int i = 7; i >= 0; --i) {
    char b[8];
    std::snprintf(b, sizeof(b), "\\%03o", static_cast<unsigned>((size >> (8 * i)) & 0xff));
    size_bytes += b;
  }
  std::string cmd = "( head -c 4096 '" + path + "'; tail -c 4096 '" + path + "'; printf '" + size_bytes +
                    "' ) | sha256sum | cut -c1-32";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[128] = {};
  REQUIRE(std::fgets(buf, sizeof(buf), p) != nullptr);
  pclose(p);
  std::string out(buf);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

}  // namespace

TEST_CASE("htlhash matches a sha256sum computation of the definition") {
  char dir_template[] = "/tmp/kiln-htl-XXXXXX";
  REQUIRE(mkdtemp(dir_template) != nullptr);
  std::string dir = dir_template;
  // Sizes around the 4096-byte chunks: overlap, exact, and far apart.
  for (std::size_t size : {0u, 1u, 100u, 4095u, 4096u, 4097u, 8192u, 10000u, 1000003u}) {
    std::string path = dir + "/f" + std::to_string(size);
    std::vector<std::uint8_t> content(size);
    for (std::size_t i = 0; i < size; ++i) content[i] = static_cast<std::uint8_t>((i * 131 + size) & 0xff);
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(content.data()), static_cast<std::streamsize>(size));
    auto ours = ComputeHtlHashOfPath(path);
    REQUIRE(ours.ok());
    INFO("size " << size);
    CHECK(ours.value().size() == 32);
    CHECK(ours.value() == HtlHashWithShell(path, size));
    CHECK(ComputeHtlHashOfBytes(content) == ours.value());
    unlink(path.c_str());
  }
  rmdir(dir.c_str());
}

TEST_CASE("htlhash of a missing file names the file") {
  auto r = ComputeHtlHashOfPath("/nonexistent/kiln");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().find("/nonexistent/kiln") != std::string::npos);
}
