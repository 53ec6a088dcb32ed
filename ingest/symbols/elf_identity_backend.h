// The part of ReadElfIdentity each symbols backend implements
// (elf_identity_elfutils.cpp, elf_identity_llvm.cpp), and the shared pieces
// both use. Internal to ingest/symbols; same threading as elf_identity.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "ingest/symbols/elf_identity.h"

namespace kiln::symbols::internal {

// Every field of ElfIdentity but htlhash, which elf_identity.cpp adds.
// Errors as ReadElfIdentity's.
[[nodiscard]] absl::StatusOr<ElfIdentity> ReadIdentityFields(const std::string& path);
[[nodiscard]] absl::StatusOr<ElfIdentity> ReadIdentityFieldsFromBytes(std::string_view bytes,
                                                                      const std::string& name);

// Sets the has_* flags a section of this name and type implies.
void NoteSection(std::string_view name, uint32_t type, ElfIdentity* id);

// .gnu_debuglink's content into id->debuglink_name/crc; `file` names the
// ELF file in the error for a malformed one.
absl::Status ParseDebugLink(const std::string& file, std::string_view data, bool big_endian, ElfIdentity* id);

inline constexpr uint32_t kNoteGnuBuildId = 3;  // NT_GNU_BUILD_ID

// One section of an ELF file by name: its address and, `with_bytes`, its
// contents (NOBITS: none). NotFound when the file has no such section.
struct ElfSectionBytes {
  uint64_t address = 0;
  std::string bytes;
};
[[nodiscard]] absl::StatusOr<ElfSectionBytes> ReadElfSection(const std::string& path, std::string_view name,
                                                             bool with_bytes = true);

}  // namespace kiln::symbols::internal
