// FindDebugFiles in a temporary debug root laid out as gdb expects.
#include "ingest/symbols/debug_files.h"

#include <doctest/doctest.h>

#include <filesystem>

#include "ingest/symbols/elf_symbols.h"
#include "ingest/symbols/symbols_test_util.h"

using namespace kiln::symbols;
using namespace kiln::symbols::testing;

TEST_CASE("debug file found by build id under a debug root, and it symbolizes the stripped binary") {
  TempDir dir;
  std::string bin = dir / "bin/c_stripped";
  CopyFileTo(TestBin("c_stripped"), bin);
  auto id = ReadElfIdentity(bin);
  REQUIRE(id.ok());
  std::string debug = dir / ("debug/.build-id/" + id->gnu_build_id.substr(0, 2) + "/" +
                             id->gnu_build_id.substr(2) + ".debug");
  CopyFileTo(TestBin("c_stripped.debug"), debug);

  // Without the root configured there is nothing next to the binary.
  CHECK(FindDebugFiles(*id, {.debug_roots = {dir / "empty"}}).found.empty());

  auto search = FindDebugFiles(*id, {.debug_roots = {dir / "empty", dir / "debug"}});
  REQUIRE(search.found.size() == 1);
  CHECK(search.found[0].path == debug);
  CHECK(search.found[0].source == DebugFileSource::kBuildId);
  CHECK(std::string(DebugFileSourceName(search.found[0].source)) == "build id");

  auto r = ReadSymbols({search.found[0].path, bin});
  REQUIRE(r.ok());
  CHECK(r->source_path == debug);
  auto cmp =
      CompareWithAddr2line(TestBin("c_g_pie"), r->table, EveryAddressIn(NmFunctions(TestBin("c_g_pie"))));
  INFO(cmp.report);
  CHECK(cmp.mismatches == 0);
}

TEST_CASE("debug file found by .gnu_debuglink: beside the binary, in .debug/, under the root; CRC checked") {
  TempDir dir;
  std::string bin = dir / "bin/c_stripped";
  CopyFileTo(TestBin("c_stripped"), bin);
  auto id = ReadElfIdentity(bin);
  REQUIRE(id.ok());
  std::string real_bindir = std::filesystem::canonical(dir / "bin").string();
  DebugFileSearchOptions options{.debug_roots = {dir / "root"}};

  CopyFileTo(TestBin("c_stripped.debug"), dir / "bin/c_stripped.debug");
  CopyFileTo(TestBin("c_stripped.debug"), dir / "bin/.debug/c_stripped.debug");
  CopyFileTo(TestBin("c_stripped.debug"), dir / "root" + real_bindir + "/c_stripped.debug");
  auto search = FindDebugFiles(*id, options);
  REQUIRE(search.found.size() == 3);
  CHECK(search.found[0].source == DebugFileSource::kDebugLinkBeside);
  CHECK(search.found[0].path == real_bindir + "/c_stripped.debug");
  CHECK(search.found[1].source == DebugFileSource::kDebugLinkDotDebug);
  CHECK(search.found[2].source == DebugFileSource::kDebugLinkUnderRoot);
  CHECK(search.rejected.empty());

  // A file of the right name but other content: its CRC gives it away.
  CopyFileTo(TestBin("c_nodebug"), dir / "bin/c_stripped.debug");
  search = FindDebugFiles(*id, options);
  REQUIRE(search.found.size() == 2);
  CHECK(search.found[0].source == DebugFileSource::kDebugLinkDotDebug);
  REQUIRE(search.rejected.size() == 1);
  CHECK(search.rejected[0].find("c_stripped.debug: CRC 0x") != std::string::npos);
  CHECK(search.rejected[0].find("differs from the debuglink's") != std::string::npos);

  auto r = ReadSymbols({search.found[0].path, bin});
  REQUIRE(r.ok());
  CHECK(r->dwarf_functions > 0);
}

TEST_CASE("a build-id path holding another build's file is rejected") {
  TempDir dir;
  CopyFileTo(TestBin("c_stripped"), dir / "bin/c_stripped");  // no debuglink target beside it
  auto id = ReadElfIdentity(dir / "bin/c_stripped");
  REQUIRE(id.ok());
  std::string wrong =
      dir / (".build-id/" + id->gnu_build_id.substr(0, 2) + "/" + id->gnu_build_id.substr(2) + ".debug");
  CopyFileTo(TestBin("cpp_inline"), wrong);
  auto search = FindDebugFiles(*id, {.debug_roots = {dir.path()}});
  CHECK(search.found.empty());
  REQUIRE(search.rejected.size() == 1);
  CHECK(search.rejected[0].find("is not the binary's") != std::string::npos);
}

TEST_CASE("FindDebugFilesFor a file that is not ELF fails naming it") {
  TempDir dir;
  WriteFileBytes(dir / "text", "hello, not an ELF file\n");
  auto r = FindDebugFilesFor(dir / "text");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find(dir / "text") != std::string::npos);
  CHECK(r.status().message().find("not an ELF file") != std::string::npos);
}
