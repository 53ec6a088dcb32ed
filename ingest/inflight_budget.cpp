#include "ingest/inflight_budget.h"

namespace kiln::ingest {

InflightBudget::Answer InflightBudget::Admit(const std::string& host, int64_t bytes) {
  std::lock_guard lock(mu_);
  if (total_ != 0 && total_ + bytes > budget_) return {Verdict::kWriterBehind, total_, budget_};
  auto it = by_host_.find(host);
  const int64_t mine = it == by_host_.end() ? 0 : it->second;
  const int64_t holding = static_cast<int64_t>(by_host_.size()) + (it == by_host_.end() ? 1 : 0);
  const int64_t share = budget_ / (holding + 1);
  if (mine != 0 && mine + bytes > share) return {Verdict::kOverShare, mine, share};
  by_host_[host] = mine + bytes;
  total_ += bytes;
  return {Verdict::kAdmitted, total_, budget_};
}

void InflightBudget::Release(const std::string& host, int64_t bytes) {
  std::lock_guard lock(mu_);
  total_ -= bytes;
  auto it = by_host_.find(host);
  if (it == by_host_.end()) return;
  it->second -= bytes;
  if (it->second <= 0) by_host_.erase(it);
}

void InflightBudget::Charge(int64_t bytes) {
  std::lock_guard lock(mu_);
  total_ += bytes;
}

}  // namespace kiln::ingest
