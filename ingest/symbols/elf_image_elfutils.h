// ElfImage (elfutils backend): one ELF file opened with libelf and checked
// up front (elf_checks.h), so the readers after it can trust offsets and
// sizes. kiln's symbol readers and kiln-agent (its symbols, unwind tables
// and interpreter scans; Linux, so always this backend) open every ELF file
// through it.
//
// Checks: ELF magic, class and byte order, a complete ELF header, and that
// the program and section header tables and every section's data lie inside
// the file. libelf alone accepts some of these and then fails (or reads
// garbage) later; checking here gives one clear message naming the file.
// One thread at a time per image; distinct images are independent.
#pragma once

#include <gelf.h>
#include <libelf.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "ingest/symbols/elf_checks.h"

namespace kiln::symbols::internal {

// A section and its header.
struct ElfSection {
  Elf_Scn* scn = nullptr;
  GElf_Shdr shdr{};
};

// NT_GNU_BUILD_ID from a note section's or segment's data, lowercase hex;
// "" when it holds none.
std::string BuildIdFromNotes(Elf_Data* data);

// The first section called `name` that has bytes in the file (not
// SHT_NOBITS, as a separate debug file's .text is), in an image's Elf (or a
// section-reading helper's).
std::optional<ElfSection> FindSectionWithData(Elf* elf, std::string_view name);

// The pages of some sections of a file libelf mapped (ELF_C_READ_MMAP), to
// drop from the process's RSS now and then while a long read walks them:
// the mapping is private and never written, so a page needed again is read
// back from the page cache. Sections libelf holds in memory of its own (a
// file it could not map, decompressed sections, an image from bytes) have
// no such pages: dropping those would make them read as zeros, so they are
// left out (the address must lie in a mapping /proc/self/maps names an
// inode for).
class MappedSectionPages {
 public:
  MappedSectionPages(Elf* elf, std::initializer_list<const char*> sections);
  bool empty() const { return ranges_.empty(); }
  void Drop() const;  // MADV_DONTNEED

 private:
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> ranges_;  // whole pages inside each section
};

class ElfImage {
 public:
  // Maps the file read-only (ELF_C_READ_MMAP).
  [[nodiscard]] static absl::StatusOr<ElfImage> Open(const std::string& path);
  // The same through a descriptor the caller keeps (a file opened through
  // /proc/PID/root): the image holds its own duplicate.
  [[nodiscard]] static absl::StatusOr<ElfImage> FromFd(int fd, const std::string& name);
  // Over a private copy of `bytes`; `name` is used in messages.
  [[nodiscard]] static absl::StatusOr<ElfImage> FromBytes(std::string_view bytes, const std::string& name);
  // Over `bytes`, which the image keeps: for bytes built only to be read
  // here, so large ones are not copied a second time.
  [[nodiscard]] static absl::StatusOr<ElfImage> FromOwnedBytes(std::string bytes, const std::string& name);

  ElfImage(ElfImage&& other) noexcept;
  ElfImage& operator=(ElfImage&& other) noexcept;
  ElfImage(const ElfImage&) = delete;
  ElfImage& operator=(const ElfImage&) = delete;
  ~ElfImage();

  Elf* elf() const { return elf_; }
  int fd() const { return fd_; }  // -1 for images from bytes
  const std::string& name() const { return name_; }
  uint64_t size() const { return size_; }
  int elf_class() const { return elf_class_; }  // 32 or 64
  bool big_endian() const { return big_endian_; }
  // The ELF header's table fields, as Check accepted them.
  const ElfHeaderFields& header() const { return header_; }

  // Section name ("" when it has none or the name is out of range).
  std::string_view SectionName(const GElf_Shdr& shdr) const;
  // The first section called `name`, or nullptr.
  Elf_Scn* FindSection(std::string_view name, GElf_Shdr* shdr) const;
  // FindSectionWithData(elf(), name).
  std::optional<ElfSection> FindSectionWithData(std::string_view name) const;

 private:
  ElfImage() = default;
  static absl::StatusOr<ElfImage> FromOwnedFd(int fd, const std::string& name);
  absl::Status Check();
  void Release();

  std::string name_;
  int fd_ = -1;
  std::unique_ptr<std::string> bytes_;  // backing store for FromBytes (stable address)
  Elf* elf_ = nullptr;
  uint64_t size_ = 0;
  size_t shstrndx_ = 0;
  int elf_class_ = 0;
  bool big_endian_ = false;
  ElfHeaderFields header_;
};

}  // namespace kiln::symbols::internal
