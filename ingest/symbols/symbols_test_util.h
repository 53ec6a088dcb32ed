// Helpers for the kiln_symbols tests: the ELF files built by
// testdata/build_test_binaries.sh, temporary folders, and binutils as the
// oracle (nm for function ranges, addr2line -f -i -C for chains).
#pragma once

#include <elf.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "storage/symbol_table.h"

namespace kiln::symbols::testing {

// Path of a built test binary ("c_g_pie", ...).
std::string TestBin(const std::string& name);

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout
};
CommandResult RunCommand(const std::string& command);

// A fresh folder under /tmp, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

void CopyFileTo(const std::string& from, const std::string& to);  // makes parent folders
// For 64-bit little-endian ELF bytes (the test binaries): section header
// i's bytes, and the index of the first section called `name` (0: none).
Elf64_Shdr* Shdr(std::string& bytes, size_t i);
size_t SectionIndex(std::string& bytes, const char* name);
std::string ReadFileBytes(const std::string& path);
void WriteFileBytes(const std::string& path, const std::string& bytes);

struct FunctionRange {
  std::string name;  // demangled (nm -C)
  uint64_t start = 0;
  uint64_t size = 0;
};
// Defined code symbols with a size, from `nm -S -C --defined-only`.
std::vector<FunctionRange> NmFunctions(const std::string& path);
// Every byte address inside those functions.
std::vector<uint64_t> EveryAddressIn(const std::vector<FunctionRange>& functions);

// One text block per address, a line "function @ file:line" per frame,
// innermost first; "??" / "?" for what is unknown, as addr2line prints.
std::string FormatChain(const std::vector<storage::SymbolizedFrame>& chain);

struct OracleComparison {
  size_t compared = 0;
  size_t mismatches = 0;
  size_t discriminators = 0;  // addr2line suffixes we strip, see the .cpp
  // Addresses where addr2line names the file of a local ELF symbol from the
  // STT_FILE symbol before it ("fib @ sample.c:?") and a SymbolTable, whose
  // ELF symbols carry no file, says "fib @ ??:?". Counted, not mismatches;
  // the names seen are in stt_files.
  size_t stt_file_names = 0;
  std::set<std::string> stt_files;
  // Addresses where frames differ only in names, each difference either one
  // of the renames given to CompareWithAddr2line (our name -> addr2line's)
  // or, when `symbols` are given, a DWARF name without a linkage name (no
  // parameter list) for which addr2line printed the ELF symbol at the
  // address. See "a real program" in elf_symbols_test.cpp for why.
  size_t renamed = 0;
  size_t inline_chains = 0;  // addresses whose chain has 2+ frames
  size_t max_depth = 0;
  std::string report;  // the first few mismatches, for the failure message
  // Every mismatching address with addr2line's text for it.
  std::vector<std::pair<uint64_t, std::string>> mismatched;
};
// Runs `addr2line -a -f -i -C -e oracle_file` once over `addresses` and
// compares every chain with table.Lookup.
OracleComparison CompareWithAddr2line(const std::string& oracle_file, const storage::SymbolTable& table,
                                      const std::vector<uint64_t>& addresses,
                                      const std::map<std::string, std::string>& renames = {},
                                      const std::vector<FunctionRange>* symbols = nullptr);

// A second oracle, llvm-symbolizer (package llvm), for the addresses where
// binutils and kiln disagree: frames (name, "file:line") innermost first.
// Empty map when KILN_LLVM_SYMBOLIZER is not configured.
std::map<uint64_t, std::vector<std::pair<std::string, std::string>>> LlvmSymbolize(
    const std::string& file, const std::vector<uint64_t>& addresses);
bool HaveLlvmSymbolizer();

}  // namespace kiln::symbols::testing
