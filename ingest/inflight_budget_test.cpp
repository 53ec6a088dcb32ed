#include "ingest/inflight_budget.h"

#include <doctest/doctest.h>

namespace kiln::ingest {

using Verdict = InflightBudget::Verdict;

TEST_CASE("the in-flight budget: a share per host, so a flooding host leaves room for the others") {
  InflightBudget budget(1200);
  // One host alone may hold half.
  CHECK(budget.Admit("10.0.0.5", 400).verdict == Verdict::kAdmitted);
  CHECK(budget.Admit("10.0.0.5", 200).verdict == Verdict::kAdmitted);
  const auto over = budget.Admit("10.0.0.5", 1);
  CHECK(over.verdict == Verdict::kOverShare);
  CHECK(over.held == 600);
  CHECK(over.limit == 600);
  // Another host gets in at once, up to a third while both hold bytes.
  CHECK(budget.Admit("10.0.0.6", 400).verdict == Verdict::kAdmitted);
  CHECK(budget.Admit("10.0.0.6", 1).verdict == Verdict::kOverShare);
  // A third host still has room: 200 are left of the 1200.
  CHECK(budget.Admit("10.0.0.7", 200).verdict == Verdict::kAdmitted);
  CHECK(budget.held() == 1200);
  // The budget is spent: everyone waits, the writer is behind.
  const auto behind = budget.Admit("10.0.0.8", 1);
  CHECK(behind.verdict == Verdict::kWriterBehind);
  CHECK(behind.held == 1200);
  // Stored: released, and a host that holds nothing is forgotten.
  budget.Release("10.0.0.5", 600);
  budget.Release("10.0.0.7", 200);
  CHECK(budget.hosts_holding() == 1);
  CHECK(budget.held() == 400);
  CHECK(budget.Admit("10.0.0.5", 300).verdict == Verdict::kAdmitted);
}

TEST_CASE("the in-flight budget: a request larger than a share or the budget passes when nothing is held") {
  InflightBudget budget(1000);
  // Larger than its share (500) but the host holds nothing: it passes.
  CHECK(budget.Admit("a", 700).verdict == Verdict::kAdmitted);
  CHECK(budget.Admit("a", 1).verdict == Verdict::kOverShare);
  budget.Release("a", 700);
  // Larger than the whole budget, with nothing in flight: it passes (else
  // it never could); with anything in flight it waits.
  CHECK(budget.Admit("b", 5000).verdict == Verdict::kAdmitted);
  CHECK(budget.Admit("c", 5000).verdict == Verdict::kWriterBehind);
  budget.Release("b", 5000);
  CHECK(budget.held() == 0);
  // A decompressed copy counts toward the whole budget, not the share.
  CHECK(budget.Admit("a", 100).verdict == Verdict::kAdmitted);
  budget.Charge(850);
  CHECK(budget.Admit("b", 100).verdict == Verdict::kWriterBehind);
  budget.Discharge(850);
  CHECK(budget.Admit("b", 100).verdict == Verdict::kAdmitted);
}

}  // namespace kiln::ingest
