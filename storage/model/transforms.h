// Transforms: pure rewrites of Stacks, applied in order before a tree is
// built. The window shows them as removable chips, the command line takes
// them as flags (kiln export --invert, --focus=FN, ...), and both apply
// them through ApplyTransforms, so a view and its export agree.
//
// Functions are named by their label (FrameLabel), matched exactly; a
// name matches the function in every frame type that has it. No transform
// changes the total weight except those that keep only some stacks
// (focus, callers of).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "storage/model/stacks.h"

namespace kiln::storage {

struct Transform {
  enum class Kind : uint8_t {
    // Each stack reversed: leaf first (a bottom-up tree).
    kInvert,
    // Stacks through the function, each starting at its outermost call
    // (its callees merged across call sites; a recursive call is inside
    // the outermost one, so no sample counts twice).
    kFocusFunction,
    // Stacks that start with `path`, each starting at the path's last
    // function (one call site's subtree).
    kFocusSubtree,
    // Stacks through the function, each from its innermost call up to the
    // root (its callers, merged, inverted).
    kCallersOf,
    // The function's frames removed; their self weight goes to the caller.
    kMerge,
    // Frames whose name matches the regular expression (RE2, partial
    // match) removed; the weight stays with the caller.
    kHide,
    // Empty argument: consecutive repeats of any function become one.
    // With a function: everything between its outermost call and a
    // recursive call of it is removed too (direct and indirect recursion).
    kCollapseRecursion,
    // Consecutive repeats of the function become one.
    kCollapseDirectRecursion,
    // Consecutive frames of an executable (by file name, e.g. libc.so.6)
    // become one frame named after it.
    kCollapseLibrary,
    // Kernel frames removed.
    kDropKernel,
  };
  Kind kind = Kind::kInvert;
  std::string argument;           // function name, pattern or executable
  std::vector<std::string> path;  // kFocusSubtree: function names from the root
  bool operator==(const Transform&) const = default;
};

// The text form, as the command line spells it: "invert", "focus=FN",
// "focus-subtree=A;B;C", "callers-of=FN", "callees-of=FN" (parsed as
// focus), "merge=FN", "hide=REGEX", "collapse-recursion",
// "collapse-recursion=FN", "collapse-direct-recursion=FN",
// "collapse-library=EXE", "drop-kernel".
std::string TransformSpec(const Transform& transform);
absl::StatusOr<Transform> ParseTransform(std::string_view spec);
// The command-line flag name of a kind ("focus", "hide", ...).
std::string_view TransformFlag(Transform::Kind kind);
// What the window's chip says: "Focus: main", "Hide: ^std::", "Inverted".
std::string TransformLabel(const Transform& transform);

// ParseTransform rejects what cannot be applied; a transform built in code
// with an invalid kHide pattern hides nothing, one with an empty
// kFocusSubtree path keeps every stack.
Stacks ApplyTransform(const Stacks& stacks, const Transform& transform);
Stacks ApplyTransforms(Stacks stacks, const std::vector<Transform>& transforms);

}  // namespace kiln::storage
