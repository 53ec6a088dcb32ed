#include "ingest/symbols/elf_image_elfutils.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ingest/symbols/elf_checks.h"
#include "ingest/symbols/elf_identity.h"
#include "ingest/symbols/elf_identity_backend.h"

namespace kiln::symbols::internal {
namespace {

void InitLibelf() {
  static std::once_flag once;
  std::call_once(once, [] { elf_version(EV_CURRENT); });
}

}  // namespace

absl::StatusOr<ElfImage> ElfImage::Open(const std::string& path) {
  auto fd = OpenForReading(path);
  if (!fd.ok()) return fd.status();
  return FromOwnedFd(*fd, path);
}

absl::StatusOr<ElfImage> ElfImage::FromFd(int fd, const std::string& name) {
  const int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (own < 0) return absl::ResourceExhaustedError(absl::StrCat(name, ": cannot duplicate its descriptor: ", strerror(errno)));
  return FromOwnedFd(own, name);
}

absl::StatusOr<ElfImage> ElfImage::FromOwnedFd(int fd, const std::string& name) {
  InitLibelf();
  ElfImage image;
  image.name_ = name;
  image.fd_ = fd;
  auto size = CheckOpenedFile(name, image.fd_);
  if (!size.ok()) return size.status();
  image.size_ = *size;
  image.elf_ = elf_begin(image.fd_, ELF_C_READ_MMAP, nullptr);
  if (!image.elf_) return Invalid(name, absl::StrCat("libelf cannot open it: ", elf_errmsg(-1)));
  if (absl::Status s = image.Check(); !s.ok()) return s;
  return image;
}

absl::StatusOr<ElfImage> ElfImage::FromBytes(std::string_view bytes, const std::string& name) {
  return FromOwnedBytes(std::string(bytes), name);
}

absl::StatusOr<ElfImage> ElfImage::FromOwnedBytes(std::string bytes, const std::string& name) {
  InitLibelf();
  ElfImage image;
  image.name_ = name;
  image.size_ = bytes.size();
  if (image.size_ == 0) return Invalid(name, "empty, not an ELF file");
  if (absl::Status s = CheckIdent(name, bytes.data(), bytes.size(), bytes.size()); !s.ok()) return s;
  image.bytes_ = std::make_unique<std::string>(std::move(bytes));
  image.elf_ = elf_memory(image.bytes_->data(), image.bytes_->size());
  if (!image.elf_) return Invalid(name, absl::StrCat("libelf cannot open it: ", elf_errmsg(-1)));
  if (absl::Status s = image.Check(); !s.ok()) return s;
  return image;
}

absl::Status ElfImage::Check() {
  size_t raw_size = 0;
  const char* raw = elf_rawfile(elf_, &raw_size);
  if (elf_kind(elf_) == ELF_K_AR) return Invalid(name_, "an ar archive (static library), not an ELF file");
  if (absl::Status s = CheckIdent(name_, raw ? raw : "", raw ? raw_size : 0, size_); !s.ok()) return s;
  elf_class_ = raw[EI_CLASS] == ELFCLASS32 ? 32 : 64;
  big_endian_ = raw[EI_DATA] == ELFDATA2MSB;
  GElf_Ehdr ehdr;
  if (!gelf_getehdr(elf_, &ehdr)) return Invalid(name_, absl::StrCat("bad ELF header: ", elf_errmsg(-1)));
  header_ = {elf_class_,   ehdr.e_phoff,     ehdr.e_shoff, ehdr.e_phentsize,
             ehdr.e_phnum, ehdr.e_shentsize, ehdr.e_shnum};
  const ElfHeaderFields& fields = header_;
  if (absl::Status s = CheckHeaderTables(name_, size_, fields); !s.ok()) return s;
  size_t shnum = 0;
  if (elf_getshdrnum(elf_, &shnum) != 0)
    return Invalid(name_, absl::StrCat("bad section count: ", elf_errmsg(-1)));
  if (absl::Status s = CheckSectionCount(name_, size_, fields, shnum); !s.ok()) return s;
  if (shnum > 0 && elf_getshdrstrndx(elf_, &shstrndx_) != 0)
    return Invalid(name_, absl::StrCat("bad section name table index: ", elf_errmsg(-1)));
  if (absl::Status s = CheckSectionNameIndex(name_, shstrndx_, shnum); !s.ok()) return s;
  for (size_t i = 1; i < shnum; ++i) {
    Elf_Scn* scn = elf_getscn(elf_, i);
    GElf_Shdr shdr;
    if (!scn || !gelf_getshdr(scn, &shdr))
      return Invalid(name_, absl::StrCat("section ", i, ": unreadable header: ", elf_errmsg(-1)));
    absl::Status s = CheckSectionData(name_, size_, i, shdr.sh_type, shdr.sh_offset, shdr.sh_size, [&] {
      return i == shstrndx_ ? std::string_view() : SectionName(shdr);
    });
    if (!s.ok()) return s;
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

std::optional<ElfSection> ElfImage::FindSectionWithData(std::string_view name) const {
  return internal::FindSectionWithData(elf_, name);
}

namespace {

// This process's mappings of files (/proc/self/maps lines with an inode).
std::vector<std::pair<std::uintptr_t, std::uintptr_t>> FileMappings() {
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> out;
  std::FILE* maps = std::fopen("/proc/self/maps", "re");
  if (!maps) return out;
  char line[512];
  while (std::fgets(line, sizeof(line), maps)) {
    unsigned long lo = 0, hi = 0, inode = 0;
    if (std::sscanf(line, "%lx-%lx %*s %*s %*s %lu", &lo, &hi, &inode) == 3 && inode != 0) out.emplace_back(lo, hi);
  }
  std::fclose(maps);
  return out;
}

}  // namespace

MappedSectionPages::MappedSectionPages(Elf* elf, std::initializer_list<const char*> sections) {
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  std::optional<std::vector<std::pair<std::uintptr_t, std::uintptr_t>>> files;  // read once, if needed
  auto in_file_mapping = [&](const void* p) {
    if (!files) files = FileMappings();
    const auto at = reinterpret_cast<std::uintptr_t>(p);
    return std::any_of(files->begin(), files->end(), [at](const auto& m) { return at >= m.first && at < m.second; });
  };
  for (const char* name : sections) {
    std::optional<ElfSection> sec = FindSectionWithData(elf, name);
    // Raw: a compressed section's bytes in the file, not libelf's copy.
    Elf_Data* data = sec ? elf_rawdata(sec->scn, nullptr) : nullptr;
    if (!data || !data->d_buf || data->d_size == 0 || !in_file_mapping(data->d_buf)) continue;
    auto begin = reinterpret_cast<std::uintptr_t>(data->d_buf);
    std::uintptr_t end = begin + data->d_size;
    begin = (begin + page - 1) & ~(page - 1);  // whole pages inside the section only
    end &= ~(page - 1);
    if (end > begin) ranges_.emplace_back(begin, end);
  }
}

void MappedSectionPages::Drop() const {
  for (auto [begin, end] : ranges_) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

std::optional<ElfSection> FindSectionWithData(Elf* elf, std::string_view name) {
  size_t shstrndx = 0;
  if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0) return std::nullopt;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    ElfSection s;
    s.scn = scn;
    if (!gelf_getshdr(scn, &s.shdr) || s.shdr.sh_type == SHT_NOBITS) continue;
    const char* n = elf_strptr(elf, shstrndx, s.shdr.sh_name);
    if (n && name == n) return s;
  }
  return std::nullopt;
}

std::string BuildIdFromNotes(Elf_Data* data) {
  if (!data || !data->d_buf) return {};
  size_t offset = 0, name_off = 0, desc_off = 0;
  GElf_Nhdr nhdr;
  while ((offset = gelf_getnote(data, offset, &nhdr, &name_off, &desc_off)) > 0) {
    if (nhdr.n_type == kNoteGnuBuildId && nhdr.n_namesz == 4 && nhdr.n_descsz > 0 &&
        std::memcmp(static_cast<const char*>(data->d_buf) + name_off, "GNU", 4) == 0) {
      return HexLower(std::span(static_cast<const uint8_t*>(data->d_buf) + desc_off, nhdr.n_descsz));
    }
  }
  return {};
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
  header_ = other.header_;
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
