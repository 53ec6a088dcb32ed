// `kiln symbols add` and `kiln symbols list`: symbols for a store from the
// command line. `add` writes the store itself, or, when a running kiln has
// it open, hands the files to that kiln; `list` opens it read-only and works
// beside a running kiln.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

#include <CLI/CLI.hpp>
#include <memory>

#include "app/cli.h"
#include "app/symbol_requests.h"
#include "app/symbol_service.h"
#include "storage/store.h"

namespace kiln::app {

namespace {

int PrintOutcomes(const std::vector<SymbolRequestResult>& outcomes) {
  int failed = 0;
  for (const SymbolRequestResult& outcome : outcomes) {
    std::printf("%s: %s\n", outcome.path.c_str(), outcome.message.c_str());
    if (!outcome.ok) ++failed;
  }
  std::fflush(stdout);
  if (failed > 0) {
    std::fprintf(stderr, "kiln symbols add: %d of %zu file%s failed\n", failed, outcomes.size(),
                 outcomes.size() == 1 ? "" : "s");
    return 1;
  }
  return 0;
}

// The store is open in another kiln: its SymbolService picks up the request.
int HandToRunningKiln(const SymbolsAddOptions& options) {
  absl::StatusOr<std::string> id = SubmitSymbolRequest(options.data_dir, options.files);
  if (!id.ok()) {
    std::cerr << "kiln symbols add: the store is in use and the request could not be left for it: "
              << id.status().message() << "\n";
    return 1;
  }
  std::cerr << "kiln symbols add: the store is in use by a running kiln; handed " << options.files.size()
            << " file" << (options.files.size() == 1 ? "" : "s") << " to it, waiting for its answer\n";
  auto results = AwaitSymbolRequest(options.data_dir, *id, std::chrono::seconds(options.wait_seconds));
  if (!results.ok()) {
    std::cerr << "kiln symbols add: " << results.status().message();
    if (absl::IsDeadlineExceeded(results.status()))
      std::cerr << "; the process holding the store may not be a kiln window or --headless (e.g. `kiln "
                   "import`). The request stays in "
                << SymbolRequestDir(options.data_dir) << " and is handled when kiln next runs on this store";
    std::cerr << "\n";
    return 1;
  }
  return PrintOutcomes(*results);
}

}  // namespace

int RunSymbolsAdd(const SymbolsAddOptions& options) {
  // Opening for writing would create an empty store, and every file would
  // then "match nothing": a mistyped directory is better named as such.
  std::error_code ec;
  if (!std::filesystem::is_directory(options.data_dir, ec)) {
    std::cerr << "kiln symbols add: no store at " << options.data_dir << "\n";
    return 1;
  }
  auto store = storage::Store::Open(options.data_dir, storage::Store::Mode::kReadWrite);
  // Only a build that can read ELF files hands them over: in one that
  // cannot, the running kiln has no service to answer, so the command
  // reports the store in use at once rather than wait for the timeout.
  if (storage::IsStoreInUse(store.status()) && CanReadSymbolFiles()) return HandToRunningKiln(options);
  if (!store.ok()) {
    std::cerr << "kiln symbols add: " << store.status().message() << "\n";
    return 1;
  }
  std::vector<SymbolRequestResult> outcomes;
  for (const std::string& path : options.files) {
    AddFileOutcome outcome = AddSymbolFile(**store, path);
    outcomes.push_back({path, outcome.ok, std::move(outcome.message)});
  }
  return PrintOutcomes(outcomes);
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

Subcommand AddSymbolsCommand(CLI::App& cli, const std::string& default_data_dir) {
  CLI::App* cmd = cli.add_subcommand("symbols", "Symbols for native frames: add files, list status");
  cmd->require_subcommand(1);
  auto add = std::make_shared<SymbolsAddOptions>();
  add->data_dir = default_data_dir;
  CLI::App* add_cmd =
      cmd->add_subcommand("add", "Store the symbols of ELF files (executables, libraries, debug files)");
  add_cmd->add_option("--data-dir", add->data_dir, "Store directory")->capture_default_str();
  add_cmd->add_option("files", add->files, "ELF files, matched by htlhash or GNU build id")->required();
  add_cmd
      ->add_option("--wait", add->wait_seconds, "When kiln is running on the store: seconds to wait for its answer")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  auto list = std::make_shared<SymbolsListOptions>();
  list->data_dir = default_data_dir;
  CLI::App* list_cmd = cmd->add_subcommand("list", "Every executable seen, with its ids and symbol status");
  list_cmd->add_option("--data-dir", list->data_dir, "Store directory")->capture_default_str();
  return {cmd, [add, add_cmd, list] { return add_cmd->parsed() ? RunSymbolsAdd(*add) : RunSymbolsList(*list); }};
}

}  // namespace kiln::app
