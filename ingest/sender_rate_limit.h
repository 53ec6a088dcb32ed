// SenderRateLimit: an optional budget of request bytes per second for each
// sending host (--max-sender-rate), so one agent gone wild cannot take the
// writer from the others. A token bucket per host: it holds up to
// `burst_seconds` of the rate (agents send every few seconds), refills
// continuously, and a request is admitted when the bucket holds its bytes.
// A request larger than the whole bucket is admitted when the bucket is
// full (else it could never pass), leaving the bucket in debt.
//
// Pure apart from its mutex; the caller passes the clock.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "absl/container/flat_hash_map.h"

namespace kiln::ingest {

class SenderRateLimit {
 public:
  SenderRateLimit(uint64_t bytes_per_second, int64_t burst_seconds = 10);
  // True when `host` may send `bytes` now (and they are charged).
  bool Admit(const std::string& host, uint64_t bytes, int64_t now_ns);
  uint64_t bytes_per_second() const { return rate_; }
  size_t hosts() {  // remembered now (tests)
    std::lock_guard lock(mu_);
    return buckets_.size();
  }

 private:
  struct Bucket {
    double tokens = 0;
    int64_t updated_ns = 0;
  };
  const uint64_t rate_;
  const double burst_;
  std::mutex mu_;
  absl::flat_hash_map<std::string, Bucket> buckets_;  // guarded by mu_
};

}  // namespace kiln::ingest
