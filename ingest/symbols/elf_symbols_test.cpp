// ReadSymbols against binutils: for every byte of every function in the test
// binaries, SymbolTable::Lookup must give what `addr2line -f -i -C` prints.
#include "ingest/symbols/elf_symbols.h"

#include <doctest/doctest.h>
#include <elfutils/version.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>

#include "ingest/symbols/elf_identity.h"
#include "ingest/symbols/symbols_test_util.h"

using namespace kiln::symbols;
using namespace kiln::symbols::testing;

namespace {

SymbolReadResult ReadOk(const std::vector<std::string>& files) {
  auto r = ReadSymbols(files);
  INFO(files.front());
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  return *std::move(r);
}

OracleComparison ExpectMatchesAddr2line(const std::string& oracle_file,
                                        const kiln::storage::SymbolTable& table,
                                        size_t* inline_chains = nullptr, size_t* max_depth = nullptr,
                                        bool symtab_only = false,
                                        const std::map<std::string, std::string>& outer_renames = {}) {
  auto functions = NmFunctions(oracle_file);
  REQUIRE(functions.size() >= 4);
  auto addresses = EveryAddressIn(functions);
  auto cmp = CompareWithAddr2line(oracle_file, table, addresses, outer_renames);
  INFO(oracle_file << ": " << cmp.mismatches << " of " << cmp.compared << " addresses differ\n"
                   << cmp.report);
  CHECK(cmp.compared == addresses.size());
  CHECK(cmp.mismatches == 0);
  if (!symtab_only) CHECK(cmp.stt_file_names == 0);
  if (outer_renames.empty()) CHECK(cmp.renamed == 0);
  if (inline_chains) *inline_chains = cmp.inline_chains;
  if (max_depth) *max_depth = cmp.max_depth;
  return cmp;
}

}  // namespace

TEST_CASE("DWARF of a C program matches addr2line: PIE, non-PIE, zlib-compressed sections") {
  for (const char* name : {"c_g_pie", "c_g_nopie", "c_gz"}) {
    CAPTURE(name);
    auto r = ReadOk({TestBin(name)});
    CHECK(r.source_path == TestBin(name));
    CHECK(r.dwarf_functions >= 4);
    CHECK(r.line_rows > 10);
    CHECK(r.symtab_symbols >= 4);
    CHECK(r.description.find("DWARF: ") == 0);
    ExpectMatchesAddr2line(TestBin(name), r.table);
  }
}

TEST_CASE("C++ inline chains (namespaces, template, always_inline) match addr2line") {
  for (const char* name : {"cpp_inline", "cpp_inline_nopie"}) {
    CAPTURE(name);
    auto r = ReadOk({TestBin(name)});
    CHECK(r.inlined_calls > 0);
    CHECK(r.table.has_inline_info());
    CHECK(r.description.find("inline chains") != std::string::npos);
    size_t chains = 0, depth = 0;
    // One known difference, in main only. GCC moves main's unlikely path to
    // "main.cold" just below main; main's DWARF (DW_AT_name "main", no
    // linkage name) covers both parts through DW_AT_ranges, and the C
    // function atoi is inlined into it. For a DWARF function without a
    // linkage name binutils (bfd/dwarf2.c) prints the name of the ELF symbol
    // at the address instead (atoi -> "main", main -> "main.cold") and, in
    // one run, keeps the first such name for the rest of the function; at
    // main.cold's first byte it falls back to the symbol table alone
    // ("main.cold @ inline_sample.cpp:?"). kiln keeps the DWARF names.
    auto cmp = ExpectMatchesAddr2line(TestBin(name), r.table, &chains, &depth, false,
                                      {{"main", "main.cold"}, {"atoi", "main"}});
    size_t main_bytes = 0;
    for (const auto& f : NmFunctions(TestBin(name)))
      if (f.name == "main" || f.name == "main.cold") main_bytes += f.size;
    CHECK(cmp.renamed > 0);
    CHECK(cmp.renamed <= main_bytes);
    // Scale inside Accumulate inside DrawOne inside DrawAll.
    CHECK(chains > 10);
    CHECK(depth >= 3);
  }
}

TEST_CASE("a binary without -g: symbol table names, no lines, as addr2line") {
  auto r = ReadOk({TestBin("c_nodebug")});
  CHECK(r.dwarf_functions == 0);
  CHECK(r.line_rows == 0);
  CHECK(r.symtab_symbols >= 4);
  CHECK(r.description.find("symtab: ") == 0);
  auto cmp = ExpectMatchesAddr2line(TestBin("c_nodebug"), r.table, nullptr, nullptr, /*symtab_only=*/true);
  // Without DWARF, addr2line names the file of local (static) functions from
  // the STT_FILE symbol before them: fib in sample.c, the crt helpers in
  // crtstuff.c. A SymbolTable keeps no file for ELF symbols.
  CHECK(cmp.stt_file_names > 0);
  CHECK(cmp.stt_files.count("sample.c") == 1);
  for (const auto& f : cmp.stt_files) CHECK((f == "sample.c" || f == "crtstuff.c"));
}

TEST_CASE("stripped binary plus its separate debug file equals the unstripped binary") {
  auto r = ReadOk({TestBin("c_stripped.debug"), TestBin("c_stripped")});
  CHECK(r.source_path == TestBin("c_stripped.debug"));
  // Oracle: addr2line on the binary before it was stripped.
  ExpectMatchesAddr2line(TestBin("c_g_pie"), r.table);
  auto unstripped = ReadOk({TestBin("c_g_pie")});
  for (uint64_t a : EveryAddressIn(NmFunctions(TestBin("c_g_pie")))) {
    std::vector<kiln::storage::SymbolizedFrame> x, y;
    r.table.Lookup(a, &x);
    unstripped.table.Lookup(a, &y);
    REQUIRE(x == y);
  }
  // The stripped binary alone still has .dynsym, but none of these functions.
  auto alone = ReadSymbols({TestBin("c_stripped")});
  if (alone.ok()) CHECK(alone->dwarf_functions == 0);
}

TEST_CASE("MiniDebugInfo gives every function's name and no lines") {
  auto r = ReadOk({TestBin("c_minidebug")});
  CHECK(r.minidebug_symbols >= 4);
  CHECK(r.dwarf_functions == 0);
  CHECK(r.description.find("MiniDebugInfo: ") != std::string::npos);
  // Oracle: nm on the binary before it was stripped, byte by byte.
  size_t checked = 0;
  for (const auto& f : NmFunctions(TestBin("c_g_pie"))) {
    for (uint64_t a = f.start; a < f.start + f.size; ++a) {
      std::vector<kiln::storage::SymbolizedFrame> chain;
      REQUIRE_MESSAGE(r.table.Lookup(a, &chain), f.name << " +" << (a - f.start));
      REQUIRE(chain.size() == 1);
      CHECK(chain[0].function == f.name);
      CHECK(chain[0].file.empty());
      CHECK(chain[0].line == 0);
      ++checked;
    }
  }
  CHECK(checked > 100);
}

TEST_CASE("zstd-compressed debug sections: read, or a clear status with elfutils < 0.189") {
  TempDir dir;
  std::string zstd = dir / "c_zstd";
  auto made = RunCommand(std::string(KILN_OBJCOPY) + " --compress-debug-sections=zstd '" +
                         TestBin("c_g_pie") + "' '" + zstd + "' 2>&1");
  if (made.exit_code != 0) {
    MESSAGE("objcopy cannot write zstd sections here: " << made.output);
    return;
  }
  auto r = ReadSymbols({zstd});
#if _ELFUTILS_VERSION < 189
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(r.status().message().find(zstd) != std::string::npos);
  CHECK(r.status().message().find("zstd-compressed debug sections need elfutils >= 0.189") !=
        std::string::npos);
  // With the binary's own symbol table as a second file, the symbols remain.
  auto with_symtab = ReadSymbols({zstd, TestBin("c_nodebug")});
  (void)with_symtab;  // different build ids: see the next case
#else
  REQUIRE(r.ok());
  ExpectMatchesAddr2line(TestBin("c_g_pie"), r->table);
#endif
}

TEST_CASE("files of different builds are refused, naming both") {
  auto r = ReadSymbols({TestBin("c_g_pie"), TestBin("cpp_inline")});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(r.status().message().find("build id") != std::string::npos);
  CHECK(r.status().message().find("cpp_inline") != std::string::npos);
}

TEST_CASE("progress rises to 1 and cancel stops the read") {
  std::vector<double> seen;
  SymbolReadOptions options;
  options.progress = [&](double f) { seen.push_back(f); };
  auto r = ReadSymbols({TestBin("cpp_inline")}, options);
  REQUIRE(r.ok());
  REQUIRE(!seen.empty());
  CHECK(seen.back() == 1.0);
  for (size_t i = 1; i < seen.size(); ++i) CHECK(seen[i] >= seen[i - 1]);

  std::atomic<bool> cancel{true};
  options.cancel = &cancel;
  auto c = ReadSymbols({TestBin("cpp_inline")}, options);
  REQUIRE_FALSE(c.ok());
  CHECK(c.status().code() == absl::StatusCode::kCancelled);
}

TEST_CASE("no symbols at all is NotFound naming the file; a missing file names it") {
  TempDir dir;
  std::string bare = dir / "bare";
  REQUIRE(RunCommand("strip --strip-all --remove-section=.dynsym -o '" + bare + "' '" + TestBin("c_g_pie") +
                     "' 2>/dev/null")
              .exit_code == 0);
  auto r = ReadSymbols({bare});
  if (!r.ok()) {
    CHECK(r.status().message().find(bare) != std::string::npos);
  } else {
    CHECK(r->dwarf_functions == 0);  // .dynsym could not be removed: it still names a few
  }
  auto missing = ReadSymbols({dir / "nope"});
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
  CHECK(missing.status().message().find(dir / "nope") != std::string::npos);
}

TEST_CASE("Demangle agrees with c++filt -i for C++ and Rust legacy; Rust v0 stays mangled") {
  const char* names[] = {
      "_ZN8geometry6detail5ScaleEii",
      "_ZNK8geometry5Shape9PerimeterEi",
      "_ZN8geometry10AccumulateIiEET_RKSt6vectorIS1_SaIS1_EEi",
      "_ZN4core3fmt9Formatter3pad17h0123456789abcdefE",
      "_ZN50_$LT$alloc..vec..Vec$LT$T$GT$$u20$as$u20$core..fmt..Debug$GT$3fmt17h5f6c4a8b9d0e1f23E",
      "_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h1a2b3c4d5e6f7a8bE",
      "_Z3foov.cold",
      "main",
  };
  for (const char* n : names) {
    CAPTURE(n);
    // -i: no verbose output, so Rust hashes are dropped as addr2line -C does.
    auto filt = RunCommand(std::string(KILN_CXXFILT) + " -i '" + n + "'");
    std::string expected = filt.output;
    while (!expected.empty() && expected.back() == '\n') expected.pop_back();
    CHECK(Demangle(n) == expected);
  }
  // binutils knows v0; without a packaged v0 demangler we keep the name.
  CHECK(Demangle("_RNvCs1234_7mycrate3foo") == "_RNvCs1234_7mycrate3foo");
}
