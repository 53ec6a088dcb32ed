#include "symbolizer.h"

#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "ingest/symbols/demangle.h"

namespace kiln::agent {

void Symbolizer::LoadTable(const ExecutableEntry& executable, FileSymbols& fs) {
  fs.table = SymbolTable();
  fs.table_loaded = true;
  ++table_loads_;
  // A separate debug file on this host (Debian's *-dbg / -dbgsym packages)
  // has the full .symtab that the stripped library lacks; read it first so
  // its names win for aliases.
  std::string debug_path = DebugFilePathForBuildId(executable.file->gnu_build_id);
  if (!debug_path.empty()) {
    if (int fd = open(debug_path.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
      (void)AddElfSymbols(fd, fs.table, debug_path);
      close(fd);
    }
  }
  if (int fd = open(executable.open_path.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
    (void)AddElfSymbols(fd, fs.table, executable.open_path);
    close(fd);
  }
  fs.table.Finish();
  // Go: its own table names every function with file and line, also in a
  // stripped binary (NotFound for everything else).
  fs.go.reset();
  if (absl::StatusOr<symbols::GoLineTable> go = symbols::ReadGoLineTable(executable.open_path); go.ok()) {
    fs.go = std::move(*go);
    ++go_tables_;
  } else if (!absl::IsNotFound(go.status())) {
    ++go_tables_refused_;  // damaged or from before Go 1.18: ELF symbols only
  }
}

NativeName Symbolizer::Lookup(const ExecutableEntry& executable, std::uint64_t elf_vaddr) {
  if (!enabled_) return {};
  auto [it, inserted] = files_.try_emplace(executable.file.get());
  FileSymbols& fs = it->second;
  if (!inserted && fs.file.expired()) fs = FileSymbols{};  // a new file at a freed file's address
  fs.file = executable.file;
  fs.last_used = sweeps_;
  // Names already found are kept across intervals; a table is only loaded
  // for addresses not seen before, and dropped again at the next Sweep.
  auto cached = fs.names.find(elf_vaddr);
  if (cached != fs.names.end()) return cached->second;
  if (!fs.table_loaded) LoadTable(executable, fs);
  if (fs.names.size() >= kMaxNamesPerFile) fs.names.clear();
  NativeName name;
  if (std::optional<symbols::GoFrame> g = fs.go ? fs.go->Lookup(elf_vaddr) : std::nullopt; g && !g->function.empty()) {
    name.function = std::move(g->function);
    name.file = std::move(g->file);
    name.line = g->line;
  } else {
    name.function = symbols::Demangle(std::string(fs.table.Lookup(elf_vaddr)));
  }
  fs.names.emplace(elf_vaddr, name);
  return name;
}

void Symbolizer::Sweep() {
  ++sweeps_;
  bool freed = false;
  // Keep the most recently used tables within kTableBudgetBytes; they are
  // the ones the next interval most likely needs again.
  std::vector<std::pair<std::uint64_t, FileSymbols*>> loaded;
  for (auto it = files_.begin(); it != files_.end();) {
    if (it->second.file.expired()) {
      freed |= it->second.table_loaded;
      it = files_.erase(it);
      continue;
    }
    if (it->second.table_loaded) loaded.push_back({it->second.last_used, &it->second});
    ++it;
  }
  std::sort(loaded.begin(), loaded.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::size_t kept = 0;
  for (auto& [last_used, fs] : loaded) {
    kept += fs->table.MemoryBytes() + (fs->go ? fs->go->MemoryBytes() : 0);
    if (kept <= kTableBudgetBytes && sweeps_ - last_used <= 1) continue;
    fs->table = SymbolTable();
    fs->go.reset();
    fs->table_loaded = false;
    freed = true;
  }
  // Symbol tables are large and short-lived; give their pages back rather
  // than letting the heap sit at its high-water mark.
  if (freed) malloc_trim(0);
}

std::size_t Symbolizer::MemoryBytes() const {
  std::size_t n = 0;
  for (const auto& [file, fs] : files_)
    n += (fs.table_loaded ? fs.table.MemoryBytes() + (fs.go ? fs.go->MemoryBytes() : 0) : 0) + fs.names.size() * 96;
  return n;
}

}  // namespace kiln::agent
