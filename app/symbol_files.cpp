// The parts of app/symbol_service.h that need no ELF reader, so builds with
// and without kiln_symbols share them.
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "app/symbol_service.h"

namespace kiln::app {

std::vector<std::string> DebuginfodUrls(const std::string& flag) {
  std::string text = flag;
  if (text.empty()) {
    const char* env = std::getenv("DEBUGINFOD_URLS");
    if (env) text = env;
  }
  std::vector<std::string> urls;
  std::string current;
  for (char c : text + " ") {
    if (c == ' ' || c == ',' || c == '\t' || c == '\n') {
      if (!current.empty()) urls.push_back(current);
      current.clear();
    } else {
      current.push_back(c);
    }
  }
  return urls;
}

bool IsElfFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char magic[4] = {};
  const ssize_t n = pread(fd, magic, sizeof magic, 0);
  close(fd);
  return n == 4 && std::memcmp(magic,
                               "\x7f"
                               "ELF",
                               4) == 0;
}

}  // namespace kiln::app
