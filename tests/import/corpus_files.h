// Test support shared by the capture tests and the import benchmark:
// where the shared corpus is, and reading (and gunzipping) files without
// going through the code under test.
#pragma once

#include <stdlib.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace kiln::capture::testing {

// ../shared/corpus beside the source tree (KILN_SOURCE_DIR is set by ctest).
inline std::string CorpusDir() {
  const char* src = std::getenv("KILN_SOURCE_DIR");
  return std::string(src != nullptr ? src : ".") + "/../shared/corpus";
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

// A fresh directory under /tmp named after `prefix`, removed at scope exit.
struct TempDir {
  explicit TempDir(const std::string& prefix = "kiln-capture-test") {
    std::string tmpl = "/tmp/" + prefix + "-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp " + tmpl + " failed");
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  operator std::string() const { return path; }
  std::string path;
};

}  // namespace kiln::capture::testing
