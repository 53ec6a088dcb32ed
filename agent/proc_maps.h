#pragma once
// /proc/PID/maps: which file backs each address range of a process.
//
// ParseProcMaps is pure (text in, entries out) so it is tested without a
// process. Entries keep the kernel's order (ascending start address), which
// FindMapping relies on.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "result.h"

namespace kiln::agent {

struct MapsEntry {
  std::uint64_t start = 0;  // first address
  std::uint64_t end = 0;    // one past the last address
  std::uint64_t file_offset = 0;
  std::uint64_t inode = 0;
  std::uint32_t dev_major = 0;
  std::uint32_t dev_minor = 0;
  bool readable = false;
  bool executable = false;
  bool deleted = false;  // path ended in " (deleted)"; the suffix is removed
  std::string path;      // "" for anonymous, "[vdso]", "[stack]", or a file path

  // A mapping of a regular file (not anonymous, not [vdso] and friends).
  bool IsFile() const { return inode != 0 && !path.empty() && path[0] == '/'; }
  // Executable anonymous memory: a JIT's code (V8, a JVM, Python's perf
  // trampolines), named or not ("[anon:...]"); not [vdso] and friends.
  bool IsAnonymousCode() const { return executable && (path.empty() || path.rfind("[anon", 0) == 0); }
};

// `source` names the input in error messages ("/proc/42/maps").
[[nodiscard]] Result<std::vector<MapsEntry>> ParseProcMaps(std::string_view text, std::string_view source);

// The entry that contains `address`, or nullptr. `entries` sorted by start.
const MapsEntry* FindMapping(const std::vector<MapsEntry>& entries, std::uint64_t address);

}  // namespace kiln::agent
