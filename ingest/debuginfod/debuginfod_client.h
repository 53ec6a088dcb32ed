// FetchDebugInfo: downloads the debug file of a GNU build id from debuginfod
// servers (the debuginfod HTTP protocol, over libcurl) into an on-disk cache
// laid out like libdebuginfod's, so gdb, debuginfod-find and kiln share it.
//
// Blocking for as long as the download takes: call it on a background
// thread. Any number of threads (and processes) may fetch at once, also the
// same build id: each download goes to a temporary file of its own that is
// renamed into place only when complete. Reads the environment but never
// changes it.
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
  // Checked several times a second (also while connecting); when it becomes
  // true every transfer is aborted and the fetch returns CancelledError.
  const std::atomic<bool>* cancel = nullptr;
};

struct FetchedDebugInfo {
  std::string path;         // <cache>/<build id>/debuginfo, complete
  std::string server;       // the server URL that answered; "" from the cache
  bool from_cache = false;  // already cached: no server was asked
};

// The cached debug file for `build_id_hex` (lowercase or uppercase hex, as
// ElfIdentity::gnu_build_id); every server is asked at once and the first
// complete answer wins. Environment, as for libdebuginfod: DEBUGINFOD_URLS,
// DEBUGINFOD_CACHE_PATH, DEBUGINFOD_TIMEOUT (seconds to connect and to keep
// data coming, default 90), DEBUGINFOD_MAXTIME, DEBUGINFOD_MAXSIZE.
// Errors: InvalidArgument for a malformed id; FailedPrecondition when no
// server URL is configured or the cache folder cannot be written; NotFound
// when every server answered 404; Unavailable when a server could not be
// reached or answered another HTTP error (the message names each server and
// what happened); ResourceExhausted when the file is over DEBUGINFOD_MAXSIZE;
// Cancelled.
[[nodiscard]] absl::StatusOr<FetchedDebugInfo> FetchDebugInfo(const std::string& build_id_hex,
                                                              const DebuginfodOptions& options = {});

}  // namespace kiln::symbols
