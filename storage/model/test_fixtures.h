// Test fixtures: profile batches from folded-stack text, so tests read like
// the trees they build ("main;work;leaf 3"). For tests and benchmarks only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "storage/model/profile_model.h"

namespace kiln::storage::testing {

struct FoldedFixtureOptions {
  SampleTypeInfo sample_type;  // of every sample (on-CPU samples unless set)
  int64_t first_time_ns = 1'700'000'000'000'000'000;  // samples are 1 ms apart from here
  std::string process;                                // process.executable.name of every sample ("" = none)
  std::string thread;                                 // thread.name of every sample ("" = none)
  // Any other attributes of every sample (process.pid, host.name, ...).
  std::vector<std::pair<std::string, std::string>> attributes;
  // The value per event; a line's count N makes N samples of this value.
  int64_t value = 1;
};

// Each non-empty line is "frame;frame;...;leaf COUNT", root first. A frame
// written "name@k" is a kernel frame, "name@i" an inlined native frame,
// "exe+0x1f" an unsymbolized native frame of executable "exe"; any other
// frame is a native frame with that function name.
ProfileBatch BatchFromFolded(std::string_view text, const FoldedFixtureOptions& options = {});

// What a query over all of `batch` returns (storage::SliceFromBatch for
// the sample type of its first sample): the slices tests build trees from.
std::shared_ptr<const ProfileSlice> WholeSlice(const ProfileBatch& batch);

// An executable as a producer names it; "" = not sent.
struct ExecutableNames {
  std::string file_name;
  std::string htlhash;
  std::string gnu_build_id;
};
// One sample (value 1, at 1'760'000'000'000'000'000) whose stack is one
// unsymbolized native frame at `address` of `executable`, with the
// attributes `attributes` (key, value): what symbolizer tests store and
// then expect named.
ProfileBatch OneNativeSample(const ExecutableNames& executable, uint64_t address = 0x1000,
                             const std::vector<std::pair<std::string, std::string>>& attributes = {});

// Appends `more` to `batch` (dictionaries concatenated, indices shifted).
void AppendBatch(ProfileBatch* batch, const ProfileBatch& more);

}  // namespace kiln::storage::testing
