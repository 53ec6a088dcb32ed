#include "elf_file.h"

#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "ingest/symbols/elf_image_elfutils.h"
#include "ingest/symbols/mini_debug_info.h"

namespace kiln::agent {
namespace {

using symbols::internal::BuildIdFromNotes;
using symbols::internal::ElfImage;
using symbols::internal::ElfSection;

// Adds the function symbols of every SHT_SYMTAB / SHT_DYNSYM section of `elf`
// whose type is `section_type`. Returns how many were added.
std::size_t AddFunctionSymbols(Elf* elf, std::uint32_t section_type, SymbolTable& table) {
  std::size_t added = 0;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != section_type || shdr.sh_entsize == 0) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data) continue;
    std::size_t count = shdr.sh_size / shdr.sh_entsize;
    for (std::size_t i = 0; i < count; ++i) {
      GElf_Sym sym;
      if (!gelf_getsym(data, static_cast<int>(i), &sym)) continue;
      int type = GELF_ST_TYPE(sym.st_info);
      if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_value == 0 || sym.st_shndx == SHN_UNDEF)
        continue;
      if (sym.st_name == 0) continue;
      // elf_strptr points into the mapped file; the table keeps the mapping.
      const char* name = elf_strptr(elf, shdr.sh_link, sym.st_name);
      if (!name) continue;
      table.AddBorrowed(sym.st_value, sym.st_size, name);
      ++added;
    }
  }
  return added;
}

std::size_t AddDebugDataSymbols(const ElfImage& image, SymbolTable& table) {
  std::optional<ElfSection> section = image.FindSectionWithData(".gnu_debugdata");
  if (!section) return 0;
  Elf_Data* data = elf_rawdata(section->scn, nullptr);
  if (!data || !data->d_buf || data->d_size == 0) return 0;
  absl::StatusOr<std::string> inner =
      symbols::internal::XzDecode(static_cast<const std::uint8_t*>(data->d_buf), data->d_size, image.name());
  if (!inner.ok()) return 0;
  absl::StatusOr<ElfImage> mini = ElfImage::FromOwnedBytes(std::move(*inner), image.name() + " (.gnu_debugdata)");
  if (!mini.ok()) return 0;
  // Names point into the decompressed image: the table keeps it alive.
  auto kept = std::make_shared<ElfImage>(std::move(*mini));
  const std::size_t added = AddFunctionSymbols(kept->elf(), SHT_SYMTAB, table);
  table.KeepAlive(std::move(kept));
  return added;
}

}  // namespace

std::uint64_t ElfInfo::FileOffsetToVaddr(std::uint64_t file_offset) const {
  for (const ElfLoadSegment& s : loads) {
    if (file_offset >= s.file_offset && file_offset < s.file_offset + std::max(s.file_size, s.mem_size))
      return file_offset - s.file_offset + s.vaddr;
  }
  return file_offset;
}

std::string DebugFilePathForBuildId(std::string_view build_id) {
  if (build_id.size() < 3) return {};
  return "/usr/lib/debug/.build-id/" + std::string(build_id.substr(0, 2)) + "/" + std::string(build_id.substr(2)) +
         ".debug";
}

Result<ElfInfo> ReadElfInfo(int fd, const std::string& name) {
  absl::StatusOr<ElfImage> image = ElfImage::FromFd(fd, name);
  if (!image.ok()) return Result<ElfInfo>::Error(std::string(image.status().message()));
  Elf* elf = image->elf();
  GElf_Ehdr ehdr;
  if (!gelf_getehdr(elf, &ehdr)) return Result<ElfInfo>::Error(name + ": bad ELF header: " + elf_errmsg(-1));
  ElfInfo info;
  info.is_shared = ehdr.e_type == ET_DYN;
  std::size_t phnum = 0;
  if (elf_getphdrnum(elf, &phnum) != 0) return Result<ElfInfo>::Error(name + ": bad program headers");
  for (std::size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (!gelf_getphdr(elf, static_cast<int>(i), &ph)) continue;
    if (ph.p_type == PT_LOAD) {
      info.loads.push_back({ph.p_offset, ph.p_vaddr, ph.p_filesz, ph.p_memsz, (ph.p_flags & PF_X) != 0});
    } else if (ph.p_type == PT_NOTE && info.gnu_build_id.empty()) {
      Elf_Data* data =
          elf_getdata_rawchunk(elf, static_cast<off_t>(ph.p_offset), ph.p_filesz, ELF_T_NHDR);
      if (data) info.gnu_build_id = BuildIdFromNotes(data);
    }
  }
  if (info.gnu_build_id.empty()) {  // files without PT_NOTE still may have the section
    if (std::optional<ElfSection> notes = image->FindSectionWithData(".note.gnu.build-id")) {
      if (Elf_Data* data = elf_getdata(notes->scn, nullptr)) info.gnu_build_id = BuildIdFromNotes(data);
    }
  }
  return info;
}

SymbolTable::SymbolTable() = default;
SymbolTable::~SymbolTable() {
  // Symbols point into the sources: drop them first.
  symbols_.clear();
  sources_.clear();
}
SymbolTable::SymbolTable(SymbolTable&&) noexcept = default;
SymbolTable& SymbolTable::operator=(SymbolTable&&) noexcept = default;

void SymbolTable::Add(std::uint64_t start, std::uint64_t size, std::string_view name) {
  owned_names_.push_back(std::make_unique<std::string>(name));
  AddBorrowed(start, size, owned_names_.back()->c_str());
}

void SymbolTable::AddBorrowed(std::uint64_t start, std::uint64_t size, const char* name) {
  symbols_.push_back({start, static_cast<std::uint32_t>(std::min<std::uint64_t>(size, UINT32_MAX)),
                      static_cast<std::uint32_t>(symbols_.size()), name});
}

void SymbolTable::Finish() {
  // Sort by address; among aliases at one address keep the one with a size,
  // else the first added (.symtab of a debug file before the binary's own).
  std::sort(symbols_.begin(), symbols_.end(), [](const Symbol& a, const Symbol& b) {
    return a.start != b.start ? a.start < b.start : a.order < b.order;
  });
  std::vector<Symbol> unique;
  unique.reserve(symbols_.size());
  for (const Symbol& s : symbols_) {
    if (!unique.empty() && unique.back().start == s.start) {
      if (unique.back().size == 0 && s.size != 0) unique.back() = s;
      continue;
    }
    unique.push_back(s);
  }
  symbols_ = std::move(unique);
  symbols_.shrink_to_fit();
}

std::string_view SymbolTable::Lookup(std::uint64_t address) const {
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), address,
                             [](std::uint64_t a, const Symbol& s) { return a < s.start; });
  if (it == symbols_.begin()) return {};
  const Symbol& s = *std::prev(it);
  if (s.size != 0 && address >= s.start + s.size) return {};
  return std::string_view(s.name);
}

std::size_t SymbolTable::MemoryBytes() const {
  std::size_t n = symbols_.capacity() * sizeof(Symbol);
  for (const auto& name : owned_names_) n += name->capacity() + sizeof(std::string);
  return n;
}

Result<ElfSymbolsReport> AddElfSymbols(int fd, SymbolTable& table, const std::string& name) {
  absl::StatusOr<ElfImage> image = ElfImage::FromFd(fd, name);
  if (!image.ok()) return Result<ElfSymbolsReport>::Error(std::string(image.status().message()));
  // elf_strptr points into the mapped file: the table keeps the image.
  auto source = std::make_shared<ElfImage>(std::move(*image));
  ElfSymbolsReport r;
  r.from_symtab = AddFunctionSymbols(source->elf(), SHT_SYMTAB, table);
  r.from_dynsym = AddFunctionSymbols(source->elf(), SHT_DYNSYM, table);
  if (r.from_symtab == 0) r.from_debugdata = AddDebugDataSymbols(*source, table);
  table.KeepAlive(std::move(source));
  return r;
}

}  // namespace kiln::agent
