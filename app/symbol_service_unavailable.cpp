// Linked instead of symbol_service.cpp when kiln_symbols is not built (no
// elfutils, e.g. macOS): the store, the CLI and the window work, and every
// attempt to read symbols says why it cannot.
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "app/symbol_service.h"

namespace kiln::app {

namespace {
constexpr const char* kUnavailable =
    "this kiln was built without kiln_symbols (elfutils: libelf, libdw, libdebuginfod), so it cannot read "
    "ELF files";
}

std::vector<std::string> DebuginfodUrls(const std::string& flag) {
  std::string text = flag;
  if (text.empty()) {
    if (const char* env = std::getenv("DEBUGINFOD_URLS")) text = env;
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

AddFileOutcome AddSymbolFile(storage::Store&, const std::string& path, const std::atomic<bool>*,
                             const std::function<void(double)>&) {
  return {path, false, kUnavailable};
}

SymbolService::SymbolService(storage::Store& store, SymbolSourceOptions options,
                             std::function<void()> on_change)
    : store_(store), options_(std::move(options)), on_change_(std::move(on_change)) {
  scanned_all_ = true;
}
SymbolService::~SymbolService() = default;
void SymbolService::Retry(const std::string&) {}
void SymbolService::AddFiles(const std::vector<std::string>& paths) {
  std::lock_guard lock(mutex_);
  for (const std::string& p : paths) outcomes_.push_back({p, false, kUnavailable});
}
void SymbolService::Poke() {}
SymbolProgress SymbolService::Progress() const { return {}; }
std::vector<AddFileOutcome> SymbolService::TakeOutcomes() {
  std::lock_guard lock(mutex_);
  return std::exchange(outcomes_, {});
}
bool SymbolService::Idle() const { return true; }

}  // namespace kiln::app
