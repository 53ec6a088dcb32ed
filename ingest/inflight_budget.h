// InflightBudget: the receiver's budget of request bytes in flight (received,
// not yet stored), with a share per sending host, so that one host sending
// as fast as it can cannot hold the whole budget and leave the others
// refused until it stops. A host may hold at most the budget divided by
// one more than the hosts that hold any: one host alone gets half, two a
// third each, and there is always room for a host that holds nothing. A
// request larger than its share (or the budget) still passes when its
// host (or everyone) holds nothing, or it could never pass.
//
// Refusals are UNAVAILABLE for the caller: agents keep the data and retry.
// Pure apart from its mutex.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "absl/container/flat_hash_map.h"

namespace kiln::ingest {

class InflightBudget {
 public:
  explicit InflightBudget(int64_t budget_bytes) : budget_(budget_bytes) {}

  enum class Verdict { kAdmitted, kWriterBehind, kOverShare };
  struct Answer {
    Verdict verdict;
    int64_t held;   // kWriterBehind: bytes in flight in all; kOverShare: the host's
    int64_t limit;  // the budget, or the host's share
  };
  // Charges `bytes` to `host` when admitted; Release them when done.
  Answer Admit(const std::string& host, int64_t bytes);
  void Release(const std::string& host, int64_t bytes);
  // Bytes held for a request already admitted (its decompressed copy):
  // count toward the whole budget, not a host's share.
  void Charge(int64_t bytes);
  void Discharge(int64_t bytes) { Charge(-bytes); }

  int64_t budget() const { return budget_; }
  int64_t held() {
    std::lock_guard lock(mu_);
    return total_;
  }
  size_t hosts_holding() {
    std::lock_guard lock(mu_);
    return by_host_.size();
  }

 private:
  const int64_t budget_;
  std::mutex mu_;
  int64_t total_ = 0;                                  // guarded by mu_
  absl::flat_hash_map<std::string, int64_t> by_host_;  // hosts holding bytes, guarded by mu_
};

}  // namespace kiln::ingest
