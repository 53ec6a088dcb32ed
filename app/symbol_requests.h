// Symbol requests: how `kiln symbols add` reaches a kiln that is running on
// the same store. RocksDB lets one process write a store, so the command
// cannot store symbols itself while the window (or --headless) has it open;
// instead it leaves a request file in <data-dir>/symbol-requests/, the
// running kiln's SymbolService reads the files named in it, and writes a
// result file the command waits for and prints.
//
// Files, all written to a temporary name and renamed, so a reader never sees
// half of one:
//   <id>.request  one absolute file path per line
//   <id>.taken    a request the service has started on (renamed from .request)
//   <id>.result   one line per file: "ok" or "failed", a tab, the path, a
//                 tab, the message; the command deletes it after printing
// A request left by a command that gave up waiting stays and is handled the
// next time a kiln with a SymbolService runs on the store.
//
// Plain file operations, no threads of their own; safe to call from several
// processes at once (rename is the only hand-over).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kiln::app {

// <data_dir>/symbol-requests
std::string SymbolRequestDir(const std::string& data_dir);

struct SymbolRequestResult {
  std::string path;
  bool ok = false;
  std::string message;
};

// Writes a request for `files` (made absolute against the current folder)
// and returns its id.
[[nodiscard]] absl::StatusOr<std::string> SubmitSymbolRequest(const std::string& data_dir,
                                                              const std::vector<std::string>& files);

// Waits up to `timeout` for the result of request `id`, polling; deletes the
// result file once read. DeadlineExceeded when none came (the request is
// left for a later kiln), NotFound when the request vanished unanswered.
[[nodiscard]] absl::StatusOr<std::vector<SymbolRequestResult>> AwaitSymbolRequest(
    const std::string& data_dir, const std::string& id, std::chrono::milliseconds timeout);

// A request the service has taken: its id and files.
struct TakenSymbolRequest {
  std::string id;
  std::vector<std::string> files;
};

// Takes every waiting request in `request_dir` (oldest first), renaming each
// to .taken so it is handled once. With `retake_abandoned` (a service's first
// call: only one kiln writes a store, so any .taken file then was left by one
// that stopped mid-request) those are taken again too. An absent folder is no
// requests.
std::vector<TakenSymbolRequest> TakeSymbolRequests(const std::string& request_dir, bool retake_abandoned);

// Writes the results of a taken request and removes its .taken file.
absl::Status AnswerSymbolRequest(const std::string& request_dir, const std::string& id,
                                 const std::vector<SymbolRequestResult>& results);

}  // namespace kiln::app
