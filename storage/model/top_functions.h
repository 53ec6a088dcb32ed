// Top functions and executables tables: pure aggregations of a ProfileSlice.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "storage/model/profile_model.h"
#include "storage/model/stacks.h"

namespace kiln::storage {

struct TopFunctionRow {
  std::string function;    // frame label (see FrameLabel)
  std::string file;        // source file, may be empty
  std::string executable;  // executable file name, may be empty
  FrameType type = FrameType::kUnknown;
  int64_t self = 0;   // weight of stacks whose leaf is this function
  int64_t total = 0;  // weight of stacks containing it (counted once per stack)
  uint64_t self_events = 0;   // the same as numbers of sample entries
  uint64_t total_events = 0;
};

// One row per function (label, executable, type) of the stacks, sorted by
// self weight descending, then total, then name: what the stacks show
// after their transforms.
std::vector<TopFunctionRow> BuildTopFunctions(const Stacks& stacks);
// The same for a slice's stacks. Inlined frames count as functions of
// their own when `show_inline`.
std::vector<TopFunctionRow> BuildTopFunctions(std::shared_ptr<const ProfileSlice> slice, bool show_inline = true);

// One function on both sides of a diff (top_functions of each, joined by
// function, executable and type). Shares are of each side's total.
struct DiffFunctionRow {
  std::string function;
  std::string executable;
  FrameType type = FrameType::kUnknown;
  int64_t base_self = 0, base_total = 0;
  int64_t target_self = 0, target_total = 0;
  double base_self_share = 0, base_total_share = 0;
  double target_self_share = 0, target_total_share = 0;
  // Whether the total share's change is more than sampling noise, tested
  // as the diff flame graph tests a node (ShareChangeZ).
  double z = 0;
  bool significant = false;
};
// Sorted by the change in total share, largest growth first.
std::vector<DiffFunctionRow> BuildDiffTopFunctions(const Stacks& base, const Stacks& target);

struct ExecutableRow {
  std::string file_name;
  std::string htlhash;
  std::string gnu_build_id;
  std::string go_build_id;
  int64_t weight = 0;       // weight of stacks with at least one frame in it
  uint64_t frames = 0;      // distinct frames seen in it
  uint64_t unsymbolized_frames = 0;  // of those, frames without a function name
};

// Every executable referenced by a frame of the slice, heaviest first.
std::vector<ExecutableRow> BuildExecutableTable(const ProfileSlice& slice);

}  // namespace kiln::storage
