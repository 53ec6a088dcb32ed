// A fresh directory under the system's temp directory, removed with all it
// holds at scope exit: the one TempDir of Kiln's tests.
#pragma once

#include <stdlib.h>

#include <filesystem>
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

}  // namespace kiln::testing
