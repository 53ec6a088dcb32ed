// FindDebugFiles: where the separate debug file of a binary is, the way gdb
// looks: by GNU build id under each debug root, then by .gnu_debuglink next
// to the binary, in its .debug/ folder and under each debug root.
//
// Reads only small headers (and CRCs of debuglink candidates); safe from any
// thread. Paths returned are existing files checked against the binary.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ingest/symbols/elf_identity.h"

namespace kiln::symbols {

enum class DebugFileSource {
  kBuildId,            // <root>/.build-id/xx/rest.debug
  kDebugLinkBeside,    // <bindir>/<debuglink>
  kDebugLinkDotDebug,  // <bindir>/.debug/<debuglink>
  kDebugLinkUnderRoot  // <root>/<bindir>/<debuglink>
};
// "build id", "debuglink next to the binary", ...: for the Executables view.
const char* DebugFileSourceName(DebugFileSource source);

struct DebugFileCandidate {
  std::string path;
  DebugFileSource source;
};

struct DebugFileSearchOptions {
  // gdb's debug-file-directory; tests point it at a temporary folder.
  std::vector<std::string> debug_roots = {"/usr/lib/debug"};
};

struct DebugFileSearch {
  // Best first: build id matches, then debuglinks whose CRC-32 matches.
  std::vector<DebugFileCandidate> found;
  // Files that exist at a looked-up place but belong to another build, each
  // naming the file and why ("...: CRC 0x1234 differs from debuglink's 0x5678").
  std::vector<std::string> rejected;
};

// For a binary whose identity was read already. Its path is used for the
// debuglink places; an identity with only gnu_build_id set (the binary is on
// another host) searches the build-id trees alone.
DebugFileSearch FindDebugFiles(const ElfIdentity& binary, const DebugFileSearchOptions& options = {});

// Reads the binary's identity first; fails as ReadElfIdentity does.
[[nodiscard]] absl::StatusOr<DebugFileSearch> FindDebugFilesFor(const std::string& binary_path,
                                                                const DebugFileSearchOptions& options = {});

// CRC-32 of a whole file as .gnu_debuglink stores it (zlib's polynomial).
[[nodiscard]] absl::StatusOr<uint32_t> FileCrc32(const std::string& path);

}  // namespace kiln::symbols
