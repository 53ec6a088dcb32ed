// ELF header checks shared by both symbol backends (internal to
// ingest/symbols): plain arithmetic on header fields, so a broken file gets
// the same message naming the file and the field whichever library reads it
// (libelf or LLVMObject), and neither library's own terse message is shown.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kiln::symbols::internal {

// The few ELF constants the shared code needs. Spelled out here because
// macOS has no <elf.h>; the values are fixed by the ELF gABI.
inline constexpr unsigned char kElfClass32 = 1, kElfClass64 = 2;
inline constexpr unsigned char kElfDataLsb = 1, kElfDataMsb = 2;
inline constexpr size_t kElfIdentSize = 16;  // EI_NIDENT
inline constexpr size_t kElfIdentClass = 4, kElfIdentData = 5;
inline constexpr uint32_t kShtNull = 0, kShtSymtab = 2, kShtNote = 7, kShtNobits = 8, kShtDynsym = 11;
inline constexpr uint64_t kShfAlloc = 0x2, kShfExecInstr = 0x4, kShfCompressed = 0x800;
inline constexpr uint32_t kElfCompressZstd = 2;  // ELFCOMPRESS_ZSTD
inline constexpr uint32_t kPnXnum = 0xffff;      // PN_XNUM

// DWARF compresses a few times over (zlib or zstd); a compression header
// whose ch_size claims more than this many times its compressed bytes is
// garbage (or hostile) and is refused before anything is allocated for it.
// Both backends use it, so they refuse the same files with the same words.
inline constexpr uint64_t kMaxCompressionRatio = 256;

// "0x1f" for messages.
std::string Hex(uint64_t v);

absl::Status Invalid(const std::string& name, const std::string& what);

// open(2) errors as statuses: NotFound, PermissionDenied, else Unavailable.
[[nodiscard]] absl::StatusOr<int> OpenForReading(const std::string& path);

// For a file opened with OpenForReading: a regular, non-empty file whose
// e_ident and ELF header size pass CheckIdent. Returns its size.
[[nodiscard]] absl::StatusOr<uint64_t> CheckOpenedFile(const std::string& path, int fd);

// e_ident and the header size, before the ELF library sees the file: the
// libraries' own messages ("invalid ELF file data") do not say what is wrong.
absl::Status CheckIdent(const std::string& name, const char* p, size_t n, uint64_t file_size);

// The ELF header's fields the table checks need.
struct ElfHeaderFields {
  int elf_class = 64;  // 32 or 64
  uint64_t phoff = 0, shoff = 0;
  uint32_t phentsize = 0, phnum = 0, shentsize = 0, shnum = 0;
};
// The program header table and the section header table (as far as the
// header's own e_shnum says) lie inside the file and have the right entry size.
absl::Status CheckHeaderTables(const std::string& name, uint64_t file_size, const ElfHeaderFields& h);
// `shnum` section headers at `h.shoff` fit in the file.
absl::Status CheckSectionCount(const std::string& name, uint64_t file_size, const ElfHeaderFields& h,
                               uint64_t shnum);
absl::Status CheckSectionNameIndex(const std::string& name, uint64_t shstrndx, uint64_t shnum);
// Section `index`'s data lies inside the file. `section_name` is asked only
// when there is an error to report (the name table may be the broken one).
absl::Status CheckSectionData(const std::string& name, uint64_t file_size, size_t index, uint32_t type,
                              uint64_t offset, uint64_t size,
                              const std::function<std::string_view()>& section_name);

// Where section header `index` starts, for an index below a count that
// CheckSectionCount accepted.
uint64_t SectionHeaderOffset(const ElfHeaderFields& h, uint64_t index);

// The fields of a section header that move a section's data elsewhere.
struct SectionPlacement {
  uint64_t flags = 0, offset = 0, size = 0, addralign = 0;
};
// Writes `p` over section header `index` of `image` (ELF bytes whose
// section header table passed CheckHeaderTables and CheckSectionCount), in
// the file's class and byte order: how the elfutils backend points a
// section at data it decompressed itself. InvalidArgument, naming `name`
// and the section, when a value does not fit a 32-bit file's fields.
absl::Status RewriteSectionHeader(const std::string& name, std::string& image, const ElfHeaderFields& h,
                                  bool big_endian, uint64_t index, const SectionPlacement& p);

}  // namespace kiln::symbols::internal
