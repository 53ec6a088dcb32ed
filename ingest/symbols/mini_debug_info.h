// MiniDebugInfo (.gnu_debugdata: an xz-compressed ELF holding a .symtab, as
// Fedora and others ship) decompressed, for kiln's symbolizer and
// kiln-agent's alike (one decoder, one bound).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace kiln::symbols::internal {

// The most a .gnu_debugdata may decompress to: more is refused, not read.
inline constexpr size_t kMaxMiniDebugInfoBytes = 512u << 20;

// .gnu_debugdata is a complete .xz stream whose decompressed size is not
// stored up front, so it is decoded in steps into a growing buffer
// (bounded). `name` is the ELF file's, for messages.
[[nodiscard]] absl::StatusOr<std::string> XzDecode(const uint8_t* in, size_t in_size, const std::string& name);

}  // namespace kiln::symbols::internal
