// ElfIdentity: what names an executable across hosts (htlhash, GNU build id)
// and what kind of symbols it carries, read from the ELF headers only.
//
// Cheap (two reads for the hash, then section headers; no DWARF), so the
// Executables view can show it for every dropped file. Thread-safe: no shared
// state. Errors name the file and what is wrong with it ("x: section 7
// (.debug_info) data at 0x... + 0x... extends past the end of the file").
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kiln::symbols {

struct ElfIdentity {
  std::string path;
  uint64_t file_size = 0;
  // The OpenTelemetry eBPF profiler's file id: see ComputeHtlHash below.
  std::string htlhash;
  // NT_GNU_BUILD_ID in lowercase hex; "" when the file has none.
  std::string gnu_build_id;
  int elf_class = 0;     // 32 or 64
  uint16_t machine = 0;  // e_machine (EM_X86_64, EM_AARCH64, ...)
  uint16_t type = 0;     // e_type (ET_EXEC, ET_DYN, ET_REL, ET_CORE)
  // .gnu_debuglink: the separate debug file's base name and CRC-32 of it.
  std::string debuglink_name;  // "" when absent
  uint32_t debuglink_crc = 0;
  bool has_symtab = false;
  bool has_dynsym = false;
  bool has_debug_info = false;     // .debug_info or .zdebug_info
  bool has_gnu_debugdata = false;  // MiniDebugInfo (xz-compressed ELF)
};

// Reads the identity of the ELF file at `path`. Not-an-ELF, truncated files,
// an unknown class/byte order and section headers or section data outside
// the file are errors (InvalidArgument; NotFound for a missing file).
[[nodiscard]] absl::StatusOr<ElfIdentity> ReadElfIdentity(const std::string& path);

// The same over a file's whole content in memory; `name` is used in errors.
// For fuzzing and for files that arrive as bytes.
[[nodiscard]] absl::StatusOr<ElfIdentity> ReadElfIdentityFromBytes(std::string_view bytes,
                                                                   const std::string& name);

// htlhash ("process.executable.build_id.htlhash"): the first 16 bytes of
// SHA-256 over
//   first min(size, 4096) bytes | last min(size, 4096) bytes | size (u64 BE)
// as 32 lowercase hex digits. Two reads, so cheap for huge binaries, and it
// works for stripped files without a build id. The fd variant uses pread and
// leaves the file offset alone.
[[nodiscard]] absl::StatusOr<std::string> ComputeHtlHash(int fd);
[[nodiscard]] absl::StatusOr<std::string> ComputeHtlHashOfPath(const std::string& path);
std::string ComputeHtlHashOfBytes(std::span<const uint8_t> content);

std::string HexLower(std::span<const uint8_t> bytes);

// "x86-64", "AArch64", ... or "machine 1234" for the rest.
std::string ElfMachineName(uint16_t machine);

}  // namespace kiln::symbols
