#pragma once
// Host-side names for native frames: ELF symbols of the file (.symtab,
// .dynsym, MiniDebugInfo) and of its separate debug file found by build id
// under /usr/lib/debug/.build-id, demangled with the C++ ABI demangler.
//
// Names are a convenience for the viewer; frames still carry file ids and
// addresses so it can symbolize again with better symbols. Each file's table
// is read once, on its first lookup, and dropped when the file is no longer
// mapped anywhere (Sweep).
//
// Main thread only.

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "elf_file.h"
#include "executable_cache.h"

namespace kiln::agent {

// "_ZN4kiln3fooEv" -> "kiln::foo()"; other names unchanged.
std::string Demangle(std::string_view name);

class Symbolizer {
 public:
  explicit Symbolizer(bool enabled) : enabled_(enabled) {}
  // "" when disabled, unknown, or the file cannot be read.
  std::string Lookup(const ExecutableEntry& executable, std::uint64_t elf_vaddr);
  void Sweep();
  std::size_t files() const { return tables_.size(); }
  std::size_t MemoryBytes() const;

 private:
  struct FileSymbols {
    std::weak_ptr<const ExecutableFile> file;
    SymbolTable table;
    std::unordered_map<std::uint64_t, std::string> names;  // per address, demangled
  };
  bool enabled_;
  std::unordered_map<const ExecutableFile*, FileSymbols> tables_;
};

}  // namespace kiln::agent
