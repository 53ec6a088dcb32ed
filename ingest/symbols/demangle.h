// Demangle: symbol names as `addr2line -C` prints them. Shared by kiln's
// symbolizer and kiln-agent (both name frames the same way).
// Pure; thread-safe.
#pragma once

#include <string>

namespace kiln::symbols {

// Demangles as `addr2line -C` prints: Itanium C++ and Rust legacy (`_ZN...E`
// with the `::h<hash>` suffix dropped and `$LT$`-style escapes decoded, as
// rustfilt prints them; also when a C++-only demangler, perf's for one,
// already made the path and left the escapes and hash).
// Rust v0 (`_R...`) names are demangled when the build found LLVM (its
// LLVMDemangle, whichever symbols backend) and returned unchanged otherwise,
// since Debian packages no other C/C++ v0 demangler besides libiberty (not
// used here). Anything else is returned unchanged.
std::string Demangle(const std::string& name);

// Whether this build demangles Rust v0 names (it found LLVM).
bool DemanglesRustV0();

}  // namespace kiln::symbols
