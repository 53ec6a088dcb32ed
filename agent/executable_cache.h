#pragma once
// Executable files seen in any process, identified once each.
//
// Key: (device, inode, size, mtime) of the file as opened through the
// process (/proc/PID/root/PATH, falling back to /proc/PID/map_files/RANGE),
// so the same library in two containers is one entry only if it is the same
// file, and a replaced file is a new entry.
// For each file we compute the htlhash and GNU build id and keep its load
// segments (to turn file offsets into ELF virtual addresses).
//
// Called from the agent's main thread only. Entries live until Sweep() finds
// no mapping referencing them.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "elf_file.h"
#include "profile_batch.h"
#include "result.h"

namespace kiln::agent {

struct ExecutableEntry {
  std::shared_ptr<const ExecutableFile> file;
  ElfInfo elf;            // empty loads when the file is not ELF
  std::string open_path;  // a path that opened it last time (for symbols)
};

class ExecutableCache {
 public:
  // `open_path` is how to reach the file now; `maps_path` is the path the
  // process sees (kept in ExecutableFile::path).
  [[nodiscard]] Result<std::shared_ptr<const ExecutableEntry>> Identify(const std::string& open_path,
                                                                        const std::string& maps_path);
  // Forgets files no Mapping refers to any more.
  void Sweep();
  std::size_t size() const { return entries_.size(); }

 private:
  using Key = std::tuple<std::uint64_t, std::uint64_t, std::int64_t, std::int64_t>;
  std::map<Key, std::shared_ptr<ExecutableEntry>> entries_;
};

}  // namespace kiln::agent
