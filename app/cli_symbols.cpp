// `kiln symbols add` and `kiln symbols list`: symbols for a store from the
// command line. `add` writes, so kiln must not be running on the store;
// `list` opens it read-only and works beside a running kiln.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

#include "app/cli.h"
#include "app/symbol_service.h"
#include "storage/store.h"

namespace kiln::app {

int RunSymbolsAdd(const SymbolsAddOptions& options) {
  // Opening for writing would create an empty store, and every file would
  // then "match nothing": a mistyped directory is better named as such.
  std::error_code ec;
  if (!std::filesystem::is_directory(options.data_dir, ec)) {
    std::cerr << "kiln symbols add: no store at " << options.data_dir << "\n";
    return 1;
  }
  auto store = storage::Store::Open(options.data_dir, storage::Store::Mode::kReadWrite);
  if (!store.ok()) {
    std::cerr << "kiln symbols add: " << store.status().message() << "\n";
    if (absl::IsFailedPrecondition(store.status())) {
      std::cerr << "kiln symbols add: if kiln is running on this store, drop the files on its window "
                   "(Executables > Add symbols from a file) or stop it first\n";
    }
    return 1;
  }
  int failed = 0;
  for (const std::string& path : options.files) {
    const AddFileOutcome outcome = AddSymbolFile(**store, path);
    std::printf("%s: %s\n", path.c_str(), outcome.message.c_str());
    if (!outcome.ok) ++failed;
  }
  std::fflush(stdout);
  if (failed > 0) {
    std::fprintf(stderr, "kiln symbols add: %d of %zu file%s failed\n", failed, options.files.size(),
                 options.files.size() == 1 ? "" : "s");
    return 1;
  }
  return 0;
}

namespace {

std::string OrDash(const std::string& s) { return s.empty() ? "-" : s; }

}  // namespace

int RunSymbolsList(const SymbolsListOptions& options) {
  auto store = storage::Store::Open(options.data_dir, storage::Store::Mode::kReadOnly);
  if (!store.ok()) {
    std::cerr << "kiln symbols list: " << store.status().message() << "\n";
    return 1;
  }
  std::map<std::string, storage::SymbolStatus> statuses;
  for (auto& [key, status] : (*store)->SymbolStatuses()) statuses[key] = status;
  const std::vector<storage::ExecutableInfo> executables = (*store)->Executables();
  if (executables.empty()) {
    std::printf("no executables in %s yet\n", options.data_dir.c_str());
    return 0;
  }
  // One block per executable: paths, hashes and reasons are too long for
  // aligned columns, and a block reads well and greps well.
  for (const storage::ExecutableInfo& exe : executables) {
    const storage::SymbolStatus* best = nullptr;
    for (const std::string& key : storage::SymbolKeys(exe.htlhash, exe.gnu_build_id)) {
      auto it = statuses.find(key);
      if (it == statuses.end()) continue;
      if (!best || (it->second.state == storage::SymbolStatus::State::kSymbolized &&
                    best->state != storage::SymbolStatus::State::kSymbolized)) {
        best = &it->second;
      }
    }
    const storage::SymbolStatus status = best ? *best : storage::SymbolStatus{};
    std::printf("%s\n", OrDash(exe.file_name).c_str());
    std::printf("  htlhash:   %s\n", OrDash(exe.htlhash).c_str());
    std::printf("  build id:  %s\n", OrDash(exe.gnu_build_id).c_str());
    std::string state(storage::SymbolStateName(status.state));
    if (exe.htlhash.empty() && exe.gnu_build_id.empty()) state = "no id (cannot be matched)";
    if (status.state == storage::SymbolStatus::State::kFailed && !status.detail.empty())
      state += ": " + status.detail;
    std::printf("  status:    %s\n", state.c_str());
    std::printf("  source:    %s\n", OrDash(status.source).c_str());
    std::printf("  functions: %llu\n", static_cast<unsigned long long>(status.functions));
  }
  return 0;
}

}  // namespace kiln::app
