// Temporary capture stores: the private store a capture opened in the
// window is written into lives in TMPDIR/kiln-capture-XXXXXX, with a marker
// file naming the kiln process that owns it (pid and process start time).
// A kiln killed with -9 leaves its directories behind; the next kiln's
// start-up sweep removes them, and only them: a directory is removed when
// its name has the prefix, it is a real directory of this user, it holds
// the marker, the owner process is gone (a reused pid is told apart by
// its start time) and no process holds the store's RocksDB LOCK.
//
// Threads: plain functions of the file system; any thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "storage/store.h"

namespace kiln::capture {

inline constexpr char kCaptureStorePrefix[] = "kiln-capture-";
inline constexpr char kCaptureStoreMarker[] = "KILN_CAPTURE_STORE";

// Creates BASE/kiln-capture-XXXXXX and its marker naming this process.
// Empty `base`: the system's temporary directory.
[[nodiscard]] absl::StatusOr<std::string> CreateCaptureStoreDir(const std::string& base = "");

// Removes a capture store directory (its store closed): the store's files
// first and the marker last, so an interrupted removal is swept later.
void RemoveCaptureStoreDir(const std::string& dir);

struct CaptureStoreSweep {
  std::vector<std::string> removed;
  std::vector<std::string> in_use;  // owner alive, or the store's LOCK held
};
// Removes the capture stores under `base` (empty: the temporary directory)
// whose kiln is gone. Anything without the prefix and the marker is left
// alone, and so are directories of this process.
CaptureStoreSweep SweepCaptureStoreDirs(const std::string& base = "");

// A store in a fresh capture store directory (CreateCaptureStoreDir),
// removed (with the store closed first) when this is destroyed: where the
// window and `kiln mcp --input` put an opened capture.
class TemporaryStore {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<TemporaryStore>> Create();
  ~TemporaryStore();
  TemporaryStore(const TemporaryStore&) = delete;
  TemporaryStore& operator=(const TemporaryStore&) = delete;

  storage::Store& store() { return *store_; }
  const std::string& dir() const { return dir_; }

 private:
  TemporaryStore(std::string dir, std::unique_ptr<storage::Store> store)
      : dir_(std::move(dir)), store_(std::move(store)) {}
  std::string dir_;
  std::unique_ptr<storage::Store> store_;
};

}  // namespace kiln::capture
