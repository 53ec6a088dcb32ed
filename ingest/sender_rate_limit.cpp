#include "ingest/sender_rate_limit.h"

#include <algorithm>

namespace kiln::ingest {

namespace {
// Hosts remembered at most; past it, the buckets that are full again (idle
// senders, which a new bucket equals) are forgotten.
constexpr size_t kMaxHosts = 4096;
}  // namespace

SenderRateLimit::SenderRateLimit(uint64_t bytes_per_second, int64_t burst_seconds)
    : rate_(bytes_per_second),
      burst_(static_cast<double>(bytes_per_second) * static_cast<double>(burst_seconds)) {}

bool SenderRateLimit::Admit(const std::string& host, uint64_t bytes, int64_t now_ns) {
  std::lock_guard lock(mu_);
  auto refill = [&](Bucket& b) {
    const double elapsed_s = static_cast<double>(std::max<int64_t>(0, now_ns - b.updated_ns)) / 1e9;
    b.tokens = std::min(burst_, b.tokens + elapsed_s * static_cast<double>(rate_));
    b.updated_ns = now_ns;
  };
  if (buckets_.size() >= kMaxHosts && !buckets_.contains(host)) {
    absl::erase_if(buckets_, [&](auto& entry) {
      refill(entry.second);
      return entry.second.tokens >= burst_;
    });
  }
  auto [it, added] = buckets_.try_emplace(host, Bucket{burst_, now_ns});
  Bucket& b = it->second;
  refill(b);
  const auto need = static_cast<double>(bytes);
  if (b.tokens >= need || b.tokens >= burst_) {
    b.tokens -= need;
    return true;
  }
  return false;
}

}  // namespace kiln::ingest
