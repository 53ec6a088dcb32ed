#include "symbolizer.h"

#include <cxxabi.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>

namespace kiln::agent {
namespace {
constexpr const char* kDebugFileRoot = "/usr/lib/debug";
}  // namespace

std::string Demangle(std::string_view name) {
  if (!name.starts_with("_Z")) return std::string(name);
  std::string input(name);
  int status = 0;
  char* out = abi::__cxa_demangle(input.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !out) {
    std::free(out);
    return input;
  }
  std::string result(out);
  std::free(out);
  return result;
}

std::string Symbolizer::Lookup(const ExecutableEntry& executable, std::uint64_t elf_vaddr) {
  if (!enabled_) return {};
  auto [it, inserted] = tables_.try_emplace(executable.file.get());
  FileSymbols& fs = it->second;
  if (!inserted && fs.file.expired()) {  // a new file at a freed file's address
    fs = FileSymbols{};
    inserted = true;
  }
  if (inserted) {
    fs.file = executable.file;
    // A separate debug file on this host (Debian's *-dbg / -dbgsym packages)
    // has the full .symtab that the stripped library lacks; read it first so
    // its names win for aliases.
    const std::string& build_id = executable.file->gnu_build_id;
    if (build_id.size() > 2) {
      std::string debug_path = std::string(kDebugFileRoot) + "/.build-id/" + build_id.substr(0, 2) + "/" +
                               build_id.substr(2) + ".debug";
      if (int fd = open(debug_path.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
        (void)AddElfSymbols(fd, fs.table);
        close(fd);
      }
    }
    if (int fd = open(executable.open_path.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
      (void)AddElfSymbols(fd, fs.table);
      close(fd);
    }
    fs.table.Finish();
  }
  auto cached = fs.names.find(elf_vaddr);
  if (cached != fs.names.end()) return cached->second;
  std::string name = Demangle(fs.table.Lookup(elf_vaddr));
  fs.names.emplace(elf_vaddr, name);
  return name;
}

void Symbolizer::Sweep() {
  for (auto it = tables_.begin(); it != tables_.end();) {
    if (it->second.file.expired())
      it = tables_.erase(it);
    else
      ++it;
  }
}

std::size_t Symbolizer::MemoryBytes() const {
  std::size_t n = 0;
  for (const auto& [file, fs] : tables_) n += fs.table.MemoryBytes() + fs.names.size() * 64;
  return n;
}

}  // namespace kiln::agent
