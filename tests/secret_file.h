// Secrets for tests as kiln wants them (ingest/receiver_security.h:
// CheckSecretFile refuses a token or TLS key others can read): written, or
// copied from tests/data (git keeps only 0644), readable by the owner only.
#pragma once

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace kiln::testing {

// Writes `text` to `path` with mode 0600; returns `path`.
inline std::string WriteSecretFile(const std::string& path, std::string_view text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  ::chmod(path.c_str(), 0600);
  return path;
}

// Copies `source` into `dir` with mode 0600; returns the copy's path.
inline std::string SecretCopy(const std::string& source, const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / std::filesystem::path(source).filename()).string();
  std::filesystem::copy_file(source, path, std::filesystem::copy_options::overwrite_existing);
  ::chmod(path.c_str(), 0600);
  return path;
}

}  // namespace kiln::testing
