#pragma once
// Host-side names for native frames: ELF symbols of the file (.symtab,
// .dynsym, MiniDebugInfo) and of its separate debug file found by build id
// under /usr/lib/debug/.build-id, demangled with the C++ ABI demangler; for
// Go programs, Go's own line table (.gopclntab, kept by stripped Go
// binaries too), which also gives the file and line.
//
// Names are a convenience for the viewer; frames still carry file ids and
// addresses so it can symbolize again with better symbols.
// Memory: a C++ binary's symbol table can take tens of MB, so tables are
// transient. A file's table is read when an address without a cached name
// shows up; Sweep (after each report) keeps the tables used in the last
// interval within kTableBudgetBytes and drops the rest. The names found stay
// cached per (file, address) until the file is no longer mapped. In a steady
// state addresses repeat and tables are rarely read.
//
// Main thread only.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "elf_file.h"
#include "executable_cache.h"
#include "ingest/symbols/go_pclntab.h"

namespace kiln::agent {


struct NativeName {
  std::string function;  // "" when unknown
  std::string file;      // source file, where the table has it (Go)
  std::int64_t line = 0;
};

class Symbolizer {
 public:
  explicit Symbolizer(bool enabled) : enabled_(enabled) {}
  // Empty when disabled, unknown, or the file cannot be read.
  NativeName Lookup(const ExecutableEntry& executable, std::uint64_t elf_vaddr);
  std::size_t go_tables() const { return go_tables_; }
  std::size_t go_tables_refused() const { return go_tables_refused_; }
  void Sweep();
  std::size_t files() const { return files_.size(); }
  std::size_t table_loads() const { return table_loads_; }
  std::size_t MemoryBytes() const;

 private:
  static constexpr std::size_t kMaxNamesPerFile = 1 << 14;
  static constexpr std::size_t kTableBudgetBytes = 4u << 20;
  struct FileSymbols {
    std::weak_ptr<const ExecutableFile> file;
    bool table_loaded = false;
    std::uint64_t last_used = 0;  // Sweep count at the last lookup
    SymbolTable table;
    std::optional<symbols::GoLineTable> go;  // a Go program's line table
    std::unordered_map<std::uint64_t, NativeName> names;  // per address, demangled
  };
  void LoadTable(const ExecutableEntry& executable, FileSymbols& fs);

  bool enabled_;
  std::unordered_map<const ExecutableFile*, FileSymbols> files_;
  std::size_t table_loads_ = 0;
  std::size_t go_tables_ = 0;          // Go line tables read
  std::size_t go_tables_refused_ = 0;  // damaged, or a Go before 1.18
  std::uint64_t sweeps_ = 0;
};

}  // namespace kiln::agent
