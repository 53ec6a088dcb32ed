#pragma once
// The agent's libelf basics, one copy for its two ELF readers (elf_file.cpp:
// build ids, load segments, symbols; unwind_table.cpp: call frame
// information, Go's line table): the library's version set once, an owning
// Elf*, and sections by name.

#include <gelf.h>
#include <libelf.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string_view>

namespace kiln::agent {

inline void InitLibelf() {
  static std::once_flag once;
  std::call_once(once, [] { elf_version(EV_CURRENT); });
}

struct ElfCloser {
  void operator()(Elf* e) const {
    if (e) elf_end(e);
  }
};
using ElfPtr = std::unique_ptr<Elf, ElfCloser>;

struct ElfSection {
  Elf_Scn* scn = nullptr;
  GElf_Shdr shdr{};
};

// The first section called `name` that has data in the file (not NOBITS).
inline std::optional<ElfSection> FindElfSection(Elf* elf, std::string_view name) {
  std::size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) return std::nullopt;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    ElfSection s;
    s.scn = scn;
    if (!gelf_getshdr(scn, &s.shdr) || s.shdr.sh_type == SHT_NOBITS) continue;
    const char* n = elf_strptr(elf, shstrndx, s.shdr.sh_name);
    if (n && name == n) return s;
  }
  return std::nullopt;
}

}  // namespace kiln::agent
