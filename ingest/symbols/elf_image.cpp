#include "ingest/symbols/elf_image.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace kiln::symbols::internal {
namespace {

void InitLibelf() {
  static std::once_flag once;
  std::call_once(once, [] { elf_version(EV_CURRENT); });
}

absl::Status Invalid(const std::string& name, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(name, ": ", what));
}

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

// e_ident and the header size, before libelf sees the file: its own
// message for these ("invalid ELF file data") does not say what is wrong.
absl::Status CheckIdent(const std::string& name, const char* p, size_t n, uint64_t file_size) {
  if (n < SELFMAG || std::memcmp(p, ELFMAG, SELFMAG) != 0) {
    if (n >= 7 && std::memcmp(p, "!<arch>", 7) == 0)
      return Invalid(name, "an ar archive (static library), not an ELF file");
    return Invalid(name, absl::StrCat("not an ELF file (starts with ", FirstBytes(p, n),
                                      ", ELF files start with 7f 45 4c 46)"));
  }
  if (n < EI_NIDENT)
    return Invalid(name, absl::StrCat("truncated: ", file_size, " bytes, shorter than e_ident"));
  auto cls = static_cast<unsigned char>(p[EI_CLASS]);
  if (cls != ELFCLASS32 && cls != ELFCLASS64)
    return Invalid(name, absl::StrCat("unknown ELF class ", cls,
                                      " in e_ident[EI_CLASS] (1 = 32-bit and 2 = 64-bit are valid)"));
  auto data = static_cast<unsigned char>(p[EI_DATA]);
  if (data != ELFDATA2LSB && data != ELFDATA2MSB)
    return Invalid(name,
                   absl::StrCat("unknown byte order ", data,
                                " in e_ident[EI_DATA] (1 = little-endian and 2 = big-endian are valid)"));
  uint64_t ehdr_size = cls == ELFCLASS32 ? sizeof(Elf32_Ehdr) : sizeof(Elf64_Ehdr);
  if (file_size < ehdr_size)
    return Invalid(name, absl::StrCat("truncated: ", file_size, " bytes, the ", cls == ELFCLASS32 ? 32 : 64,
                                      "-bit ELF header needs ", ehdr_size));
  return absl::OkStatus();
}

}  // namespace

std::string Hex(uint64_t v) { return absl::StrFormat("0x%x", v); }

absl::StatusOr<ElfImage> ElfImage::Open(const std::string& path) {
  InitLibelf();
  ElfImage image;
  image.name_ = path;
  image.fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (image.fd_ < 0) {
    int err = errno;
    std::string msg = absl::StrCat(path, ": ", std::strerror(err));
    if (err == ENOENT) return absl::NotFoundError(msg);
    if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(msg);
    return absl::UnavailableError(msg);
  }
  struct stat st {};
  if (fstat(image.fd_, &st) != 0)
    return absl::UnavailableError(absl::StrCat(path, ": ", std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) return Invalid(path, "not a regular file");
  image.size_ = static_cast<uint64_t>(st.st_size);
  if (image.size_ == 0) return Invalid(path, "empty file, not an ELF file");
  char head[EI_NIDENT];
  ssize_t got = pread(image.fd_, head, sizeof(head), 0);
  if (got < 0) return absl::UnavailableError(absl::StrCat(path, ": ", std::strerror(errno)));
  if (absl::Status s = CheckIdent(path, head, static_cast<size_t>(got), image.size_); !s.ok()) return s;
  image.elf_ = elf_begin(image.fd_, ELF_C_READ_MMAP, nullptr);
  if (!image.elf_) return Invalid(path, absl::StrCat("libelf cannot open it: ", elf_errmsg(-1)));
  if (absl::Status s = image.Check(); !s.ok()) return s;
  return image;
}

absl::StatusOr<ElfImage> ElfImage::FromBytes(std::string_view bytes, const std::string& name) {
  InitLibelf();
  ElfImage image;
  image.name_ = name;
  image.bytes_ = std::make_unique<std::string>(bytes);
  image.size_ = bytes.size();
  if (image.size_ == 0) return Invalid(name, "empty, not an ELF file");
  if (absl::Status s = CheckIdent(name, bytes.data(), bytes.size(), bytes.size()); !s.ok()) return s;
  image.elf_ = elf_memory(image.bytes_->data(), image.bytes_->size());
  if (!image.elf_) return Invalid(name, absl::StrCat("libelf cannot open it: ", elf_errmsg(-1)));
  if (absl::Status s = image.Check(); !s.ok()) return s;
  return image;
}

absl::Status ElfImage::Check() {
  size_t raw_size = 0;
  const char* raw = elf_rawfile(elf_, &raw_size);
  if (!raw || raw_size < 4 || std::memcmp(raw, ELFMAG, SELFMAG) != 0) {
    if (elf_kind(elf_) == ELF_K_AR) return Invalid(name_, "an ar archive (static library), not an ELF file");
    return Invalid(name_, absl::StrCat("not an ELF file (starts with ", raw ? FirstBytes(raw, raw_size) : "",
                                       ", ELF files start with 7f 45 4c 46)"));
  }
  if (raw_size < EI_NIDENT)
    return Invalid(name_, absl::StrCat("truncated: ", raw_size, " bytes, shorter than e_ident"));
  unsigned char cls = static_cast<unsigned char>(raw[EI_CLASS]);
  if (cls != ELFCLASS32 && cls != ELFCLASS64)
    return Invalid(name_, absl::StrCat("unknown ELF class ", cls,
                                       " in e_ident[EI_CLASS] (1 = 32-bit and 2 = 64-bit are valid)"));
  elf_class_ = cls == ELFCLASS32 ? 32 : 64;
  unsigned char data = static_cast<unsigned char>(raw[EI_DATA]);
  if (data != ELFDATA2LSB && data != ELFDATA2MSB)
    return Invalid(name_,
                   absl::StrCat("unknown byte order ", data,
                                " in e_ident[EI_DATA] (1 = little-endian and 2 = big-endian are valid)"));
  big_endian_ = data == ELFDATA2MSB;
  uint64_t ehdr_size = cls == ELFCLASS32 ? sizeof(Elf32_Ehdr) : sizeof(Elf64_Ehdr);
  uint64_t shdr_size = cls == ELFCLASS32 ? sizeof(Elf32_Shdr) : sizeof(Elf64_Shdr);
  uint64_t phdr_size = cls == ELFCLASS32 ? sizeof(Elf32_Phdr) : sizeof(Elf64_Phdr);
  if (size_ < ehdr_size)
    return Invalid(name_, absl::StrCat("truncated: ", size_, " bytes, the ", elf_class_,
                                       "-bit ELF header needs ", ehdr_size));
  GElf_Ehdr ehdr;
  if (!gelf_getehdr(elf_, &ehdr)) return Invalid(name_, absl::StrCat("bad ELF header: ", elf_errmsg(-1)));

  if (ehdr.e_phoff != 0 && ehdr.e_phnum > 0) {
    if (ehdr.e_phentsize != phdr_size)
      return Invalid(name_, absl::StrCat("e_phentsize ", ehdr.e_phentsize, " is not ", phdr_size, " for a ",
                                         elf_class_, "-bit file"));
    if (ehdr.e_phnum != PN_XNUM && !Inside(ehdr.e_phoff, uint64_t{ehdr.e_phnum} * phdr_size, size_))
      return Invalid(
          name_, absl::StrCat("program header table at ", Hex(ehdr.e_phoff), " (", ehdr.e_phnum,
                              " entries of ", phdr_size, " bytes) extends past the end of the file (", size_,
                              " bytes); truncated?"));
  }
  if (ehdr.e_shoff != 0) {
    if (ehdr.e_shentsize != shdr_size)
      return Invalid(name_, absl::StrCat("e_shentsize ", ehdr.e_shentsize, " is not ", shdr_size, " for a ",
                                         elf_class_, "-bit file"));
    if (!Inside(ehdr.e_shoff, shdr_size, size_))
      return Invalid(name_, absl::StrCat("section header table offset e_shoff ", Hex(ehdr.e_shoff),
                                         " is past the end of the file (", size_, " bytes); truncated?"));
  }
  // libelf quietly counts only the section headers that fit in the file, so
  // the header's own count is checked first (0 means "in section 0").
  size_t shnum = ehdr.e_shnum;
  if (ehdr.e_shoff != 0 && shnum > 0 && !Inside(ehdr.e_shoff, shnum * shdr_size, size_))
    return Invalid(
        name_,
        absl::StrCat("section header table at ", Hex(ehdr.e_shoff), " (", shnum, " entries of ", shdr_size,
                     " bytes) extends past the end of the file (", size_, " bytes); truncated?"));
  if (elf_getshdrnum(elf_, &shnum) != 0)
    return Invalid(name_, absl::StrCat("bad section count: ", elf_errmsg(-1)));
  if (shnum > 0 && !Inside(ehdr.e_shoff, shnum * shdr_size, size_))
    return Invalid(
        name_,
        absl::StrCat("section header table at ", Hex(ehdr.e_shoff), " (", shnum, " entries of ", shdr_size,
                     " bytes) extends past the end of the file (", size_, " bytes); truncated?"));
  if (shnum > 0 && elf_getshdrstrndx(elf_, &shstrndx_) != 0)
    return Invalid(name_, absl::StrCat("bad section name table index: ", elf_errmsg(-1)));
  if (shnum > 0 && shstrndx_ >= shnum)
    return Invalid(name_, absl::StrCat("section name table index ", shstrndx_,
                                       " is not below the section count ", shnum));
  for (size_t i = 1; i < shnum; ++i) {
    Elf_Scn* scn = elf_getscn(elf_, i);
    GElf_Shdr shdr;
    if (!scn || !gelf_getshdr(scn, &shdr))
      return Invalid(name_, absl::StrCat("section ", i, ": unreadable header: ", elf_errmsg(-1)));
    if (shdr.sh_type == SHT_NOBITS || shdr.sh_type == SHT_NULL || shdr.sh_size == 0) continue;
    if (!Inside(shdr.sh_offset, shdr.sh_size, size_)) {
      // The name table itself may be the broken one, so only trust it after it passed.
      std::string_view sname = i == shstrndx_ ? std::string_view() : SectionName(shdr);
      return Invalid(name_, absl::StrCat("section ", i, sname.empty() ? "" : " (", std::string(sname),
                                         sname.empty() ? "" : ")", " data at ", Hex(shdr.sh_offset), " + ",
                                         Hex(shdr.sh_size), " extends past the end of the file (", size_,
                                         " bytes); truncated or garbage section header?"));
    }
  }
  return absl::OkStatus();
}

std::string_view ElfImage::SectionName(const GElf_Shdr& shdr) const {
  const char* n = elf_strptr(elf_, shstrndx_, shdr.sh_name);
  return n ? std::string_view(n) : std::string_view();
}

Elf_Scn* ElfImage::FindSection(std::string_view name, GElf_Shdr* shdr) const {
  for (Elf_Scn* scn = elf_nextscn(elf_, nullptr); scn; scn = elf_nextscn(elf_, scn)) {
    if (gelf_getshdr(scn, shdr) && SectionName(*shdr) == name) return scn;
  }
  return nullptr;
}

ElfImage::ElfImage(ElfImage&& other) noexcept { *this = std::move(other); }

ElfImage& ElfImage::operator=(ElfImage&& other) noexcept {
  if (this == &other) return *this;
  Release();
  name_ = std::move(other.name_);
  fd_ = std::exchange(other.fd_, -1);
  bytes_ = std::move(other.bytes_);
  elf_ = std::exchange(other.elf_, nullptr);
  size_ = other.size_;
  shstrndx_ = other.shstrndx_;
  elf_class_ = other.elf_class_;
  big_endian_ = other.big_endian_;
  return *this;
}

ElfImage::~ElfImage() { Release(); }

void ElfImage::Release() {
  if (elf_) elf_end(elf_);
  elf_ = nullptr;
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

}  // namespace kiln::symbols::internal
