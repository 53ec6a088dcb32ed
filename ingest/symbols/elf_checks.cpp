#include "ingest/symbols/elf_checks.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace kiln::symbols::internal {
namespace {

std::string FirstBytes(const char* p, size_t n) {
  std::string out;
  for (size_t i = 0; i < n && i < 4; ++i)
    absl::StrAppend(&out, i ? " " : "", absl::StrFormat("%02x", p[i] & 0xff));
  return out;
}

// True when [offset, offset + size) fits in a file of `file_size` bytes.
bool Inside(uint64_t offset, uint64_t size, uint64_t file_size) {
  return offset <= file_size && size <= file_size - offset;
}

uint64_t ShdrSize(int elf_class) { return elf_class == 32 ? 40 : 64; }  // sizeof(Elf32/64_Shdr)

}  // namespace

std::string Hex(uint64_t v) { return absl::StrFormat("0x%x", v); }

absl::Status Invalid(const std::string& name, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(name, ": ", what));
}

absl::StatusOr<int> OpenForReading(const std::string& path) {
  // O_NONBLOCK: a FIFO (a path a sender named, say) opens at once instead
  // of waiting for a writer, and CheckOpenedFile then refuses it. Reads of
  // regular files ignore the flag.
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd >= 0) return fd;
  int err = errno;
  std::string msg = absl::StrCat(path, ": ", std::strerror(err));
  if (err == ENOENT) return absl::NotFoundError(msg);
  if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(msg);
  return absl::UnavailableError(msg);
}

absl::StatusOr<uint64_t> CheckOpenedFile(const std::string& path, int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return absl::UnavailableError(absl::StrCat(path, ": ", std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) return Invalid(path, "not a regular file");
  auto size = static_cast<uint64_t>(st.st_size);
  if (size == 0) return Invalid(path, "empty file, not an ELF file");
  // Past any executable or debug file (the largest seen: a few GiB):
  // nothing a sender names makes kiln map more.
  constexpr uint64_t kMaxElfFileBytes = uint64_t{16} << 30;
  if (size > kMaxElfFileBytes) {
    return Invalid(path, absl::StrCat("larger than 16 GiB (", size, " bytes), not read"));
  }
  char head[kElfIdentSize];
  ssize_t got = pread(fd, head, sizeof(head), 0);
  if (got < 0) return absl::UnavailableError(absl::StrCat(path, ": ", std::strerror(errno)));
  if (absl::Status s = CheckIdent(path, head, static_cast<size_t>(got), size); !s.ok()) return s;
  return size;
}

absl::Status CheckIdent(const std::string& name, const char* p, size_t n, uint64_t file_size) {
  if (n < 4 || std::memcmp(p,
                           "\x7f"
                           "ELF",
                           4) != 0) {
    if (n >= 7 && std::memcmp(p, "!<arch>", 7) == 0)
      return Invalid(name, "an ar archive (static library), not an ELF file");
    return Invalid(name, absl::StrCat("not an ELF file (starts with ", FirstBytes(p, n),
                                      ", ELF files start with 7f 45 4c 46)"));
  }
  if (n < kElfIdentSize)
    return Invalid(name, absl::StrCat("truncated: ", file_size, " bytes, shorter than e_ident"));
  auto cls = static_cast<unsigned char>(p[kElfIdentClass]);
  if (cls != kElfClass32 && cls != kElfClass64)
    return Invalid(name, absl::StrCat("unknown ELF class ", cls,
                                      " in e_ident[EI_CLASS] (1 = 32-bit and 2 = 64-bit are valid)"));
  auto data = static_cast<unsigned char>(p[kElfIdentData]);
  if (data != kElfDataLsb && data != kElfDataMsb)
    return Invalid(name,
                   absl::StrCat("unknown byte order ", data,
                                " in e_ident[EI_DATA] (1 = little-endian and 2 = big-endian are valid)"));
  uint64_t ehdr_size = cls == kElfClass32 ? 52 : 64;  // sizeof(Elf32/64_Ehdr)
  if (file_size < ehdr_size)
    return Invalid(name, absl::StrCat("truncated: ", file_size, " bytes, the ", cls == kElfClass32 ? 32 : 64,
                                      "-bit ELF header needs ", ehdr_size));
  return absl::OkStatus();
}

absl::Status CheckHeaderTables(const std::string& name, uint64_t file_size, const ElfHeaderFields& h) {
  uint64_t shdr_size = ShdrSize(h.elf_class);
  uint64_t phdr_size = h.elf_class == 32 ? 32 : 56;  // sizeof(Elf32/64_Phdr)
  if (h.phoff != 0 && h.phnum > 0) {
    if (h.phentsize != phdr_size)
      return Invalid(name, absl::StrCat("e_phentsize ", h.phentsize, " is not ", phdr_size, " for a ",
                                        h.elf_class, "-bit file"));
    if (h.phnum != kPnXnum && !Inside(h.phoff, uint64_t{h.phnum} * phdr_size, file_size))
      return Invalid(
          name,
          absl::StrCat("program header table at ", Hex(h.phoff), " (", h.phnum, " entries of ", phdr_size,
                       " bytes) extends past the end of the file (", file_size, " bytes); truncated?"));
  }
  if (h.shoff != 0) {
    if (h.shentsize != shdr_size)
      return Invalid(name, absl::StrCat("e_shentsize ", h.shentsize, " is not ", shdr_size, " for a ",
                                        h.elf_class, "-bit file"));
    if (!Inside(h.shoff, shdr_size, file_size))
      return Invalid(name, absl::StrCat("section header table offset e_shoff ", Hex(h.shoff),
                                        " is past the end of the file (", file_size, " bytes); truncated?"));
  }
  // The libraries may quietly count only the section headers that fit in
  // the file, so the header's own count is checked first (0 means "in
  // section 0").
  return CheckSectionCount(name, file_size, h, h.shnum);
}

absl::Status CheckSectionCount(const std::string& name, uint64_t file_size, const ElfHeaderFields& h,
                               uint64_t shnum) {
  uint64_t shdr_size = ShdrSize(h.elf_class);
  if (h.shoff != 0 && shnum > 0 &&
      (shnum > file_size / shdr_size || !Inside(h.shoff, shnum * shdr_size, file_size)))
    return Invalid(
        name, absl::StrCat("section header table at ", Hex(h.shoff), " (", shnum, " entries of ", shdr_size,
                           " bytes) extends past the end of the file (", file_size, " bytes); truncated?"));
  return absl::OkStatus();
}

absl::Status CheckSectionNameIndex(const std::string& name, uint64_t shstrndx, uint64_t shnum) {
  if (shnum > 0 && shstrndx >= shnum)
    return Invalid(
        name, absl::StrCat("section name table index ", shstrndx, " is not below the section count ", shnum));
  return absl::OkStatus();
}

absl::Status CheckSectionData(const std::string& name, uint64_t file_size, size_t index, uint32_t type,
                              uint64_t offset, uint64_t size,
                              const std::function<std::string_view()>& section_name) {
  if (type == kShtNobits || type == kShtNull || size == 0 || Inside(offset, size, file_size))
    return absl::OkStatus();
  std::string sname(section_name());
  return Invalid(
      name, absl::StrCat("section ", index, sname.empty() ? "" : " (", sname, sname.empty() ? "" : ")",
                         " data at ", Hex(offset), " + ", Hex(size), " extends past the end of the file (",
                         file_size, " bytes); truncated or garbage section header?"));
}

uint64_t SectionHeaderOffset(const ElfHeaderFields& h, uint64_t index) {
  return h.shoff + index * ShdrSize(h.elf_class);
}

absl::Status RewriteSectionHeader(const std::string& name, std::string& image, const ElfHeaderFields& h,
                                  bool big_endian, uint64_t index, const SectionPlacement& p) {
  // The fields written, as byte offsets into a section header (gABI):
  //
  //            name type flags addr offset size link info addralign entsize
  //   Elf32_Shdr  0    4     8   12     16   20   24   28        32      36  (all 4 bytes)
  //   Elf64_Shdr  0    4     8   16     24   32   40   44        48      56  (flags, addr,
  //                                                 offset, size, addralign, entsize: 8 bytes)
  bool is32 = h.elf_class == 32;
  uint64_t width = is32 ? 4 : 8;
  struct Field {
    const char* what;
    uint64_t at, value;
  };
  const Field fields[] = {{"sh_flags", 8, p.flags},
                          {"sh_offset", is32 ? 16u : 24u, p.offset},
                          {"sh_size", is32 ? 20u : 32u, p.size},
                          {"sh_addralign", is32 ? 32u : 48u, p.addralign}};
  uint64_t header = SectionHeaderOffset(h, index);
  if (!Inside(header, ShdrSize(h.elf_class), image.size()))
    return Invalid(name, absl::StrCat("section ", index, ": header at ", Hex(header), " is past the end"));
  for (const Field& f : fields) {
    if (is32 && f.value > 0xffffffffu)
      return Invalid(name, absl::StrCat("section ", index, ": ", f.what, " ", Hex(f.value),
                                        " does not fit a 32-bit ELF file"));
    for (uint64_t k = 0; k < width; ++k) {
      uint64_t shift = 8 * (big_endian ? width - 1 - k : k);
      image[header + f.at + k] = static_cast<char>(f.value >> shift);
    }
  }
  return absl::OkStatus();
}

}  // namespace kiln::symbols::internal
