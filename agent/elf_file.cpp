#include "elf_file.h"

#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "file_id.h"
#include "libelf_util.h"

#ifdef KILN_HAVE_LZMA
#include <lzma.h>
#endif

namespace kiln::agent {
namespace {

constexpr std::uint32_t kNoteGnuBuildId = 3;  // NT_GNU_BUILD_ID
constexpr std::size_t kMaxDebugDataBytes = 256u << 20;

std::string ElfError() { return elf_errmsg(-1); }

// An Elf* over its own duplicate of a descriptor, mapped read-only, for
// tables whose names point into it.
class MappedElf {
 public:
  explicit MappedElf(int fd) : fd_(dup(fd)) {
    if (fd_ >= 0) elf_ = elf_begin(fd_, ELF_C_READ_MMAP, nullptr);
  }
  ~MappedElf() {
    if (elf_) elf_end(elf_);
    if (fd_ >= 0) close(fd_);
  }
  MappedElf(const MappedElf&) = delete;
  MappedElf& operator=(const MappedElf&) = delete;
  Elf* elf() const { return elf_; }

 private:
  int fd_;
  Elf* elf_ = nullptr;
};

std::string BuildIdFromNotes(Elf_Data* data) {
  std::size_t offset = 0;
  GElf_Nhdr nhdr;
  std::size_t name_off = 0, desc_off = 0;
  while ((offset = gelf_getnote(data, offset, &nhdr, &name_off, &desc_off)) > 0) {
    if (nhdr.n_type == kNoteGnuBuildId && nhdr.n_namesz == 4 &&
        std::memcmp(static_cast<const char*>(data->d_buf) + name_off, "GNU", 4) == 0) {
      auto* desc = static_cast<const std::uint8_t*>(data->d_buf) + desc_off;
      return HexLower(std::span(desc, nhdr.n_descsz));
    }
  }
  return {};
}


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

#ifdef KILN_HAVE_LZMA
// .gnu_debugdata is a complete .xz stream; its size after decompression is
// unknown up front, so decode in steps into a growing buffer.
bool XzDecode(const std::uint8_t* in, std::size_t in_size, std::vector<std::uint8_t>& out) {
  lzma_stream strm = LZMA_STREAM_INIT;
  if (lzma_stream_decoder(&strm, UINT64_MAX, 0) != LZMA_OK) return false;
  out.resize(in_size * 4 + 4096);
  strm.next_in = in;
  strm.avail_in = in_size;
  strm.next_out = out.data();
  strm.avail_out = out.size();
  lzma_ret ret;
  while ((ret = lzma_code(&strm, LZMA_FINISH)) == LZMA_OK || ret == LZMA_BUF_ERROR) {
    if (strm.avail_out != 0 && ret == LZMA_BUF_ERROR) break;
    if (out.size() >= kMaxDebugDataBytes) break;
    std::size_t used = out.size() - strm.avail_out;
    out.resize(out.size() * 2);
    strm.next_out = out.data() + used;
    strm.avail_out = out.size() - used;
  }
  bool ok = ret == LZMA_STREAM_END;
  if (ok) out.resize(out.size() - strm.avail_out);
  lzma_end(&strm);
  return ok;
}
#endif

std::size_t AddDebugDataSymbols(Elf* elf, SymbolTable& table) {
#ifdef KILN_HAVE_LZMA
  std::optional<ElfSection> section = FindElfSection(elf, ".gnu_debugdata");
  if (!section) return 0;
  Elf_Data* data = elf_rawdata(section->scn, nullptr);
  if (!data || !data->d_buf || data->d_size == 0) return 0;
  auto inner = std::make_shared<std::vector<std::uint8_t>>();
  if (!XzDecode(static_cast<const std::uint8_t*>(data->d_buf), data->d_size, *inner)) return 0;
  std::shared_ptr<Elf> mini(elf_memory(reinterpret_cast<char*>(inner->data()), inner->size()), ElfCloser());
  if (!mini) return 0;
  // Names point into the decompressed image: keep it (and its Elf) alive.
  table.KeepAlive(inner);
  table.KeepAlive(mini);
  return AddFunctionSymbols(mini.get(), SHT_SYMTAB, table);
#else
  (void)elf;
  (void)table;
  return 0;
#endif
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

Result<ElfInfo> ReadElfInfo(int fd) {
  InitLibelf();
  ElfPtr elf(elf_begin(fd, ELF_C_READ_MMAP, nullptr));
  if (!elf.get() || elf_kind(elf.get()) != ELF_K_ELF)
    return Result<ElfInfo>::Error("not an ELF file: " + ElfError());
  GElf_Ehdr ehdr;
  if (!gelf_getehdr(elf.get(), &ehdr)) return Result<ElfInfo>::Error("bad ELF header: " + ElfError());
  ElfInfo info;
  info.is_shared = ehdr.e_type == ET_DYN;
  std::size_t phnum = 0;
  if (elf_getphdrnum(elf.get(), &phnum) != 0) return Result<ElfInfo>::Error("bad program headers");
  for (std::size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (!gelf_getphdr(elf.get(), static_cast<int>(i), &ph)) continue;
    if (ph.p_type == PT_LOAD) {
      info.loads.push_back({ph.p_offset, ph.p_vaddr, ph.p_filesz, ph.p_memsz, (ph.p_flags & PF_X) != 0});
    } else if (ph.p_type == PT_NOTE && info.gnu_build_id.empty()) {
      Elf_Data* data =
          elf_getdata_rawchunk(elf.get(), static_cast<off_t>(ph.p_offset), ph.p_filesz, ELF_T_NHDR);
      if (data) info.gnu_build_id = BuildIdFromNotes(data);
    }
  }
  if (info.gnu_build_id.empty()) {  // files without PT_NOTE still may have the section
    if (std::optional<ElfSection> notes = FindElfSection(elf.get(), ".note.gnu.build-id")) {
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

Result<ElfSymbolsReport> AddElfSymbols(int fd, SymbolTable& table) {
  InitLibelf();
  auto source = std::make_shared<MappedElf>(fd);
  if (!source->elf() || elf_kind(source->elf()) != ELF_K_ELF)
    return Result<ElfSymbolsReport>::Error("not an ELF file: " + ElfError());
  ElfSymbolsReport r;
  r.from_symtab = AddFunctionSymbols(source->elf(), SHT_SYMTAB, table);
  r.from_dynsym = AddFunctionSymbols(source->elf(), SHT_DYNSYM, table);
  if (r.from_symtab == 0) r.from_debugdata = AddDebugDataSymbols(source->elf(), table);
  table.KeepAlive(std::move(source));
  return r;
}

}  // namespace kiln::agent
