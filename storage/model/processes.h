// The processes a slice holds, one per pid, with the name the flamegraph
// gives them, their weight and when they ran: what the PID filter shows
// beside bare numbers. Pure (processes_test in model_test).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "storage/model/profile_model.h"

namespace kiln::storage {

struct ProcessSummary {
  std::string pid;
  std::string name;  // ProcessLabel of its heaviest attribute set
  int64_t weight = 0;
  uint64_t events = 0;
  // When its samples were taken; 0 when the slice kept no sample times.
  int64_t first_ns = 0;
  int64_t last_ns = 0;
};

// Every pid with weight in the slice, heaviest first (then by pid).
// Samples without a pid are left out.
std::vector<ProcessSummary> ProcessesOf(const ProfileSlice& slice);

}  // namespace kiln::storage
