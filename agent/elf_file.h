#pragma once
// Reading the parts of an ELF file the agent needs, with libelf (elfutils):
//   ReadElfInfo:    load segments (to turn a file offset into an ELF virtual
//                   address) and the GNU build id. Cheap: headers and notes.
//   AddElfSymbols:  function symbols from .symtab, .dynsym and MiniDebugInfo
//                   (.gnu_debugdata: an xz-compressed ELF holding a .symtab,
//                   as Fedora and others ship). Costlier: the symbolizer
//                   calls it once per file, lazily.
// Both read through a file descriptor the caller owns and may close after.
// Thread-safe: libelf handles are per call.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "result.h"

namespace kiln::agent {

struct ElfLoadSegment {
  std::uint64_t file_offset = 0;
  std::uint64_t vaddr = 0;
  std::uint64_t file_size = 0;
  std::uint64_t mem_size = 0;
  bool executable = false;
};

struct ElfInfo {
  bool is_shared = false;              // ET_DYN (PIE or shared library)
  std::vector<ElfLoadSegment> loads;   // PT_LOAD in file order
  std::string gnu_build_id;            // lowercase hex, "" when absent

  // ELF virtual address of the byte at `file_offset`, using the PT_LOAD that
  // contains it; when none does (odd layouts), the offset itself.
  std::uint64_t FileOffsetToVaddr(std::uint64_t file_offset) const;
};

[[nodiscard]] Result<ElfInfo> ReadElfInfo(int fd);

// Function symbols sorted by address. Names are the raw (mangled) names,
// stored in one arena so a table of 100k symbols stays a few MB.
class SymbolTable {
 public:
  struct Symbol {
    std::uint64_t start;
    std::uint32_t size;      // 0 = unknown: extends to the next symbol
    std::uint32_t name_offset;
  };
  void Add(std::uint64_t start, std::uint64_t size, std::string_view name);
  // Sorts and removes duplicates; call once after the last Add.
  void Finish();
  // The symbol containing `address`, or an empty view.
  std::string_view Lookup(std::uint64_t address) const;
  std::size_t size() const { return symbols_.size(); }
  std::size_t MemoryBytes() const { return symbols_.capacity() * sizeof(Symbol) + names_.capacity(); }

 private:
  std::vector<Symbol> symbols_;
  std::string names_;  // NUL-separated
};

struct ElfSymbolsReport {
  std::size_t from_symtab = 0;
  std::size_t from_dynsym = 0;
  std::size_t from_debugdata = 0;
};

// Adds the file's function symbols to `table` (call table.Finish() after the
// last file). Several files can feed one table: a binary and its separate
// debug file.
[[nodiscard]] Result<ElfSymbolsReport> AddElfSymbols(int fd, SymbolTable& table);

}  // namespace kiln::agent
