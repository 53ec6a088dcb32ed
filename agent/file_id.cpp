#include "file_id.h"

#include "ingest/symbols/elf_identity.h"

// The hash itself lives in kiln_elf_identity (ingest/symbols), shared with
// the viewer so both sides compute the same id from one implementation;
// this file only adapts it to the agent's Result type.
namespace kiln::agent {
namespace {

Result<std::string> FromStatusOr(absl::StatusOr<std::string> r) {
  if (!r.ok()) return Result<std::string>::Error(std::string(r.status().message()));
  return *std::move(r);
}

}  // namespace

std::string HexLower(std::span<const std::uint8_t> bytes) { return symbols::HexLower(bytes); }

std::string ComputeHtlHashOfBytes(std::span<const std::uint8_t> content) {
  return symbols::ComputeHtlHashOfBytes(content);
}

Result<std::string> ComputeHtlHash(int fd) { return FromStatusOr(symbols::ComputeHtlHash(fd)); }

Result<std::string> ComputeHtlHashOfPath(const std::string& path) {
  return FromStatusOr(symbols::ComputeHtlHashOfPath(path));
}

}  // namespace kiln::agent
