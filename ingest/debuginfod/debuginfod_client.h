// FetchDebugInfo: downloads the debug file of a GNU build id from debuginfod
// servers (libdebuginfod), into its on-disk cache.
//
// Blocking for as long as the download takes: call it on a background
// thread. libdebuginfod 0.188 reads its servers and cache folder only from
// the environment (DEBUGINFOD_URLS, DEBUGINFOD_CACHE_PATH), so a fetch whose
// options set them sets those variables for its duration, and fetches are
// serialized process-wide (one at a time; meant for one background worker).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"

namespace kiln::symbols {

struct DebuginfodOptions {
  // Space-separated server URLs; "" uses DEBUGINFOD_URLS from the environment.
  std::string urls;
  // Cache folder; "" uses libdebuginfod's (DEBUGINFOD_CACHE_PATH, else
  // $XDG_CACHE_HOME/debuginfod_client or ~/.cache/debuginfod_client).
  std::string cache_dir;
  // Bytes received so far and the total (0 when not yet known), from the
  // fetching thread, about once a second while a transfer runs.
  std::function<void(int64_t done, int64_t total)> progress;
  // When it becomes true the transfer is aborted (libdebuginfod's progress
  // callback returns non-zero) and the fetch returns CancelledError.
  const std::atomic<bool>* cancel = nullptr;
};

// The path of the cached debug file for `build_id_hex` (lowercase or
// uppercase hex, as ElfIdentity::gnu_build_id). Errors: InvalidArgument for a
// malformed id; FailedPrecondition when no server URL is configured;
// NotFound when the servers answered but do not have it (404); Unavailable
// when no server could be reached; Cancelled.
[[nodiscard]] absl::StatusOr<std::string> FetchDebugInfo(const std::string& build_id_hex,
                                                         const DebuginfodOptions& options = {});

}  // namespace kiln::symbols
