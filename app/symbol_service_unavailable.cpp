// Linked instead of symbol_service.cpp when kiln_symbols or kiln_debuginfod
// is not built (neither elfutils nor LLVM, or no libcurl): the store, the CLI
// and the window work, and every attempt to read symbols says why it cannot.

#include "app/symbol_service.h"

namespace kiln::app {

namespace {
constexpr const char* kUnavailable =
    "this kiln was built without native symbolization (kiln_symbols needs elfutils or LLVM, kiln_debuginfod "
    "needs libcurl), so it cannot read ELF files";
}

bool CanReadSymbolFiles() { return false; }

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
