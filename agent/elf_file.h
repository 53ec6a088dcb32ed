#pragma once
// Reading the parts of an ELF file the agent needs, through kiln's checked
// libelf opener (ingest/symbols' ElfImage: the viewer's, so hostile files
// meet the same checks in both):
//   ReadElfInfo:    load segments (to turn a file offset into an ELF virtual
//                   address) and the GNU build id. Cheap: headers and notes.
//   AddElfSymbols:  function symbols from .symtab, .dynsym and MiniDebugInfo
//                   (.gnu_debugdata: an xz-compressed ELF holding a .symtab,
//                   as Fedora and others ship). Costlier: the symbolizer
//                   calls it once per file, lazily.
// Both read through a file descriptor the caller owns and may close after.
// Thread-safe: libelf handles are per call.

#include <cstdint>
#include <memory>
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
  bool is_shared = false;             // ET_DYN (PIE or shared library)
  std::vector<ElfLoadSegment> loads;  // PT_LOAD in file order
  std::string gnu_build_id;           // lowercase hex, "" when absent

  // ELF virtual address of the byte at `file_offset`, using the PT_LOAD that
  // contains it; when none does (odd layouts), the offset itself.
  std::uint64_t FileOffsetToVaddr(std::uint64_t file_offset) const;
};

// `name` (the file's path) is for messages.
[[nodiscard]] Result<ElfInfo> ReadElfInfo(int fd, const std::string& name = "ELF file");

// Where this host keeps the separate debug file of a GNU build id (Debian's
// -dbg / -dbgsym packages): /usr/lib/debug/.build-id/xx/rest.debug, or ""
// for an id too short to have one. The file may not exist.
std::string DebugFilePathForBuildId(std::string_view build_id);

// Function symbols sorted by address.
//
// Names are not copied: they point into the ELF files' string tables, which
// stay memory-mapped (read-only, file-backed, paged in only where a name is
// read) for as long as the table lives. A C++ library's names are most of
// its symbol table's size, so this keeps tables at 24 bytes a symbol.
class SymbolTable {
 public:
  struct Symbol {
    std::uint64_t start;
    std::uint32_t size;   // 0 = unknown: extends to the next symbol
    std::uint32_t order;  // insertion order: first added wins among aliases
    const char* name;
  };
  SymbolTable();
  ~SymbolTable();
  SymbolTable(SymbolTable&&) noexcept;
  SymbolTable& operator=(SymbolTable&&) noexcept;

  // `name` is copied (for tests and synthetic symbols).
  void Add(std::uint64_t start, std::uint64_t size, std::string_view name);
  // `name` must live as long as the table (a string in a kept source).
  void AddBorrowed(std::uint64_t start, std::uint64_t size, const char* name);
  // Keeps `source` (a mapped ELF, a decompressed buffer) alive with the table.
  void KeepAlive(std::shared_ptr<void> source) { sources_.push_back(std::move(source)); }
  // Sorts and removes duplicates; call once after the last Add.
  void Finish();
  // The symbol containing `address`, or an empty view.
  std::string_view Lookup(std::uint64_t address) const;
  std::size_t size() const { return symbols_.size(); }
  std::size_t MemoryBytes() const;

 private:
  std::vector<Symbol> symbols_;
  std::vector<std::unique_ptr<std::string>> owned_names_;
  std::vector<std::shared_ptr<void>> sources_;
};

struct ElfSymbolsReport {
  std::size_t from_symtab = 0;
  std::size_t from_dynsym = 0;
  std::size_t from_debugdata = 0;
};

// Adds the file's function symbols to `table` (call table.Finish() after the
// last file). Several files can feed one table: a binary and its separate
// debug file. The table keeps its own duplicate of `fd` and the mapping.
[[nodiscard]] Result<ElfSymbolsReport> AddElfSymbols(int fd, SymbolTable& table, const std::string& name = "ELF file");

}  // namespace kiln::agent
