// Source lines: where in its source a function spends its weight, for the
// Source view (pprof's `list`, Hotspot's and Tracy's source views).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "storage/model/profile_model.h"

namespace kiln::storage {

struct SourceLineWeight {
  int64_t line = 0;
  int64_t self = 0;   // stacks whose leaf is the function at this line
  int64_t total = 0;  // stacks with the function at this line (once per stack)
};

// One source file of a function (inlined code brings others).
struct FunctionSource {
  std::string file;  // as the profile names it
  std::vector<SourceLineWeight> lines;  // by line number
  int64_t self = 0, total = 0;          // over its lines (total once per stack)
  int64_t HottestLine() const;          // most total weight; 0 when none
};

// Every file `function`'s frames (by FrameLabel) name, heaviest first.
// Frames without a file or line count toward no line. With `show_inline`
// false, inlined frames are left out (their lines go to the caller's).
std::vector<FunctionSource> SourceLinesOf(const ProfileSlice& slice, std::string_view function,
                                          bool show_inline = true);

// `path` with the first matching prefix replaced ("/build/src" ->
// "/home/me/src"), for sources built elsewhere. Prefixes match whole path
// components.
std::string MapSourcePath(const std::string& path, const std::vector<std::pair<std::string, std::string>>& prefixes);

}  // namespace kiln::storage
