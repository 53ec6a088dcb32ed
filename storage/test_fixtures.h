// Test fixtures: profile batches from folded-stack text, so tests read like
// the trees they build ("main;work;leaf 3"). For tests and benchmarks only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "storage/profile_model.h"
#include "storage/symbol_table.h"

namespace kiln::storage::testing {

struct FoldedFixtureOptions {
  SampleTypeInfo sample_type;  // of every sample (on-CPU samples unless set)
  int64_t first_time_ns = 1'700'000'000'000'000'000;  // samples are 1 ms apart from here
  std::string process;                                // process.executable.name of every sample ("" = none)
  std::string thread;                                 // thread.name of every sample ("" = none)
  // The value per event; a line's count N makes N samples of this value.
  int64_t value = 1;
};

// Each non-empty line is "frame;frame;...;leaf COUNT", root first. A frame
// written "name@k" is a kernel frame, "name@i" an inlined native frame,
// "exe+0x1f" an unsymbolized native frame of executable "exe"; any other
// frame is a native frame with that function name.
ProfileBatch BatchFromFolded(std::string_view text, const FoldedFixtureOptions& options = {});

// Appends `more` to `batch` (dictionaries concatenated, indices shifted).
void AppendBatch(ProfileBatch* batch, const ProfileBatch& more);

// A symbol table with an inline chain: f [0x100, 0x200) in /src/main.c,
// g inlined at main.c:10 covering [0x120, 0x160), h inlined into g at
// util.h:5 covering [0x130, 0x140); line rows at 0x100 main.c:8, 0x120
// util.h:4, 0x130 util.h:2, 0x140 util.h:6, 0x160 main.c:12.
SymbolTable NestedSymbolTable();

}  // namespace kiln::storage::testing
