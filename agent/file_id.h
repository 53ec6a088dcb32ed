#pragma once
// Identity of an executable file as OTLP profiles name it.
//
// htlhash ("process.executable.build_id.htlhash", the OpenTelemetry eBPF
// profiler's file id): the first 16 bytes of SHA-256 over
//   first min(size, 4096) bytes | last min(size, 4096) bytes | size (u64 BE)
// printed as 32 lowercase hex digits. It needs only two reads, so it is cheap
// even for huge binaries, and it works for stripped files without a build id.
//
// Thread-safe (no shared state).

#include <cstdint>
#include <span>
#include <string>

#include "result.h"

namespace kiln::agent {

// From an open file descriptor (pread, does not move the file offset).
[[nodiscard]] Result<std::string> ComputeHtlHash(int fd);
[[nodiscard]] Result<std::string> ComputeHtlHashOfPath(const std::string& path);

// The same over bytes in memory: the whole file content.
std::string ComputeHtlHashOfBytes(std::span<const std::uint8_t> content);

std::string HexLower(std::span<const std::uint8_t> bytes);

}  // namespace kiln::agent
