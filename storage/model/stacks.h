// Stacks: the weighted call stacks of a slice as sequences of functions.
// Transforms (transforms.h) rewrite them and trees (flame_tree.h, diff.h)
// are built from them, so every view and export of one slice under one
// list of transforms sees the same stacks.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "storage/model/profile_model.h"

namespace kiln::storage {

// A function as views name it: frames with the same label, type and
// executable (one function at different addresses or lines) are one
// function. Trees merge functions by label and type alone.
struct StackFunction {
  std::string name;  // FrameLabel, or a made-up name (a collapsed library)
  FrameType type = FrameType::kUnknown;
  std::string executable;  // the executable's file name as sent, may be empty
  uint32_t frame = 0;      // a slice frame it stands for (file, line); 0 for made-up ones
};

class FunctionTable {
 public:
  // The id of (name, type, executable), added with `frame` as its
  // representative when new.
  uint32_t Intern(std::string_view name, FrameType type, std::string_view executable, uint32_t frame);
  const StackFunction& operator[](uint32_t id) const { return functions_[id]; }
  size_t size() const { return functions_.size(); }

 private:
  std::vector<StackFunction> functions_;
  absl::flat_hash_map<std::tuple<std::string, FrameType, std::string>, uint32_t> ids_;
};

struct Stacks {
  std::shared_ptr<const ProfileSlice> slice;        // attribute sets and frames refer to it
  std::shared_ptr<const FunctionTable> functions;   // what elements refer to
  // Stack i is elements[offsets[i] .. offsets[i+1]), function ids, root first.
  std::vector<uint32_t> offsets{0};
  std::vector<uint32_t> elements;
  std::vector<uint32_t> attribute_sets;  // per stack
  std::vector<int64_t> weights;          // per stack
  std::vector<uint64_t> events;          // per stack

  size_t size() const { return attribute_sets.size(); }
  std::pair<const uint32_t*, const uint32_t*> Stack(size_t i) const {
    return {elements.data() + offsets[i], elements.data() + offsets[i + 1]};
  }
  // Appends a stack (identical stacks may repeat: trees merge them).
  void Add(const uint32_t* begin, const uint32_t* end, uint32_t attribute_set, int64_t weight, uint64_t events);
  // The same slice and functions, no stacks: what a transform fills.
  Stacks EmptyLike() const;
};

// One stack per slice weight, frames as functions. `show_inline` false
// leaves inlined frames out (their weight stays with the caller).
Stacks StacksOf(std::shared_ptr<const ProfileSlice> slice, bool show_inline = true);

// The slice `stacks` describe: one frame per function (its representative
// frame's file, line, executable and type; a made-up function only its
// name), the same attribute sets, weights and time facts. How pprof and
// OTLP exports write transformed stacks.
std::shared_ptr<const ProfileSlice> SliceOfStacks(const Stacks& stacks);

}  // namespace kiln::storage
