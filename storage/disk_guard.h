// DiskGuard: keeps the store from filling its filesystem, and says so.
//
// RocksDB that meets ENOSPC stops writing (a background error, lifted only
// by DB::Resume) and Debian's build can even abort on a failed WAL append.
// So the store refuses new data while less than a reserve is free on the
// store's filesystem, before RocksDB can get there, and accepts it again by
// itself once space returns. The free space is read (statvfs) at most once
// a second, or sooner after a few MiB were written, so a full disk is seen
// within one request of an agent.
//
// Threads: every method is safe from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kiln::storage {

// True for Admit's refusal because of the reserve (not a write error): the
// status carries a payload saying so.
bool IsDiskReserveRefusal(const absl::Status& status);

// Free bytes for an unprivileged writer on the filesystem holding `dir`.
absl::StatusOr<uint64_t> StatvfsFreeBytes(const std::string& dir);

struct DiskState {
  uint64_t free_bytes = 0;
  uint64_t reserve_bytes = 0;
  // Why new data is refused ("" while accepting): the reserve, a write
  // error RocksDB reported (read-only or vanished directory, ENOSPC), or
  // both.
  std::string refusal;
};

class DiskGuard {
 public:
  using FreeBytesFn = std::function<absl::StatusOr<uint64_t>(const std::string& dir)>;
  // Checks at most every `interval_ns` (or after `recheck_bytes` written).
  DiskGuard(std::string dir, uint64_t reserve_bytes, FreeBytesFn free_bytes = StatvfsFreeBytes,
            int64_t interval_ns = 1'000'000'000, uint64_t recheck_bytes = 8 << 20);

  // Before a write of about `bytes`: OK, or Unavailable (retryable) with a
  // message naming the directory, the free space and the reserve.
  // `changed` (optional) is set when the answer differs from the previous
  // one, so the caller logs a transition once, not every request.
  absl::Status Admit(uint64_t bytes, bool* changed = nullptr);
  // A write failed (IOError from RocksDB): refuse until `recovered`
  // returns true, which Admit calls once space is above the reserve again
  // (the store passes DB::Resume).
  void NoteWriteError(const std::string& message);
  void SetRecovery(std::function<bool()> recovered) { recover_ = std::move(recovered); }
  DiskState state() const;

 private:
  void RefreshLocked(int64_t now_ns);

  const std::string dir_;
  const uint64_t reserve_;
  const FreeBytesFn free_bytes_;
  const int64_t interval_ns_;
  const uint64_t recheck_bytes_;
  std::function<bool()> recover_;
  mutable std::mutex mu_;
  int64_t checked_ns_ = 0;      // guarded by mu_
  uint64_t written_since_ = 0;  // guarded by mu_
  uint64_t free_ = UINT64_MAX;  // guarded by mu_; last reading
  std::string free_error_;      // guarded by mu_: statvfs failed (vanished directory)
  std::string write_error_;     // guarded by mu_
  bool refused_ = false;        // guarded by mu_: the last answer
  std::string refusal_kind_;    // guarded by mu_: DiskState::refusal of it
};

}  // namespace kiln::storage
