// The built-in synthetic profile behind `kiln --demo`: every view filled,
// every frame type present (deep recursion, long C++ names, many processes,
// kernel and interpreter frames). Pure: same input, same batch.
#pragma once

#include <cstdint>

#include "storage/model/profile_model.h"

namespace kiln::app {

// Samples spread over the 15 minutes before `now_ns`, on-CPU and off-CPU.
storage::ProfileBatch BuildDemoProfile(int64_t now_ns);

}  // namespace kiln::app
