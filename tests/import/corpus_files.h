// Test support shared by the capture tests, the GUI capture test and the
// import benchmark: where the capture corpus is (tests/data/corpus, in the
// repository), and reading (and gunzipping) files without going through the
// code under test.
#pragma once

#include <stdlib.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "tests/temp_dir.h"

namespace kiln::capture::testing {

// tests/data/corpus in the source tree (KILN_SOURCE_DIR is set by ctest).
// The corpus is part of the repository, so a missing one is a broken
// checkout: RequireCorpus() fails the test (exit 1), it never skips.
inline std::string CorpusDir() {
  const char* src = std::getenv("KILN_SOURCE_DIR");
  return std::string(src != nullptr ? src : ".") + "/tests/data/corpus";
}

inline void RequireCorpus() {
  std::error_code ec;
  if (!std::filesystem::exists(CorpusDir() + "/README.md", ec)) {
    std::fprintf(stderr,
                 "capture corpus not found at %s: run the test through ctest (which sets "
                 "KILN_SOURCE_DIR) in a complete checkout\n",
                 CorpusDir().c_str());
    std::exit(1);
  }
}

inline std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// zlib directly, so tests do not check the importer with itself.
inline std::string Gunzip(const std::string& data) {
  std::string out;
  z_stream zs{};
  inflateInit2(&zs, 16 + MAX_WBITS);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  char buf[65536];
  int rc;
  do {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof(buf);
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(buf, sizeof(buf) - zs.avail_out);
  } while (rc == Z_OK);
  inflateEnd(&zs);
  return out;
}

using ::kiln::testing::TempDir;

}  // namespace kiln::capture::testing
