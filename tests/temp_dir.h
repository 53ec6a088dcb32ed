// A fresh directory under the system's temp directory, removed with all it
// holds at scope exit: the one TempDir of Kiln's tests.
#pragma once

#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

namespace kiln::testing {

struct TempDir {
  explicit TempDir(const std::string& prefix = "kiln-test") {
    std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp " + tmpl + " failed");
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  operator std::string() const { return path; }  // where a path is wanted
  std::string path;
};

// Bytes of every regular file under `dir`: what a store takes on disk
// (files vanishing meanwhile, as RocksDB's do, are skipped).
inline uint64_t DirectoryBytes(const std::string& dir) {
  uint64_t bytes = 0;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code size_ec;
    if (it->is_regular_file(size_ec)) bytes += it->file_size(size_ec);
  }
  return bytes;
}

// A file's whole content ("" when it cannot be read): what a command the
// test ran wrote.
inline std::string ReadWholeFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

}  // namespace kiln::testing
