// ReadElfIdentity against readelf and coreutils.
#include "ingest/symbols/elf_identity.h"

#include <doctest/doctest.h>
#include <elf.h>

#include <regex>

#include "ingest/symbols/debug_files.h"
#include "ingest/symbols/symbols_test_util.h"

using namespace kiln::symbols;
using namespace kiln::symbols::testing;

namespace {

std::string ReadelfBuildId(const std::string& path) {
  auto r = RunCommand("readelf -n '" + path + "' 2>/dev/null");
  std::smatch m;
  static const std::regex kBuildId("Build ID: ([0-9a-f]+)");
  return std::regex_search(r.output, m, kBuildId) ? m[1].str() : "";
}

std::string Sha256Htl(const std::string& path) {
  // The definition: head, tail, size as 8 big-endian bytes; 32 hex digits.
  auto r = RunCommand(
      "f='" + path +
      "'; s=$(stat -c %s \"$f\"); ( head -c 4096 \"$f\"; tail -c 4096 \"$f\"; "
      "printf \"$(printf '\\\\%03o' $(( (s>>56)&255 )) $(( (s>>48)&255 )) $(( (s>>40)&255 )) "
      "$(( (s>>32)&255 )) $(( (s>>24)&255 )) $(( (s>>16)&255 )) $(( (s>>8)&255 )) $(( s&255 )))\" ) "
      "| sha256sum | cut -c1-32");
  std::string out = r.output;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

TEST_CASE("identity of the test binaries agrees with readelf and sha256sum") {
  for (const char* name :
       {"c_g_pie", "c_g_nopie", "c_nodebug", "c_stripped", "c_stripped.debug", "c_minidebug", "cpp_inline"}) {
    CAPTURE(name);
    auto id = ReadElfIdentity(TestBin(name));
    REQUIRE_MESSAGE(id.ok(), id.status().ToString());
    CHECK(id->path == TestBin(name));
    CHECK(id->htlhash.size() == 32);
    CHECK(id->htlhash == Sha256Htl(TestBin(name)));
    CHECK(id->gnu_build_id == ReadelfBuildId(TestBin(name)));
    CHECK(id->gnu_build_id.size() == 40);
    CHECK(id->elf_class == 64);
#if defined(__x86_64__)
    CHECK(id->machine == EM_X86_64);
    CHECK(ElfMachineName(id->machine) == "x86-64");
#endif
  }
  auto pie = *ReadElfIdentity(TestBin("c_g_pie"));
  CHECK(pie.type == ET_DYN);
  CHECK(pie.has_symtab);
  CHECK(pie.has_dynsym);
  CHECK(pie.has_debug_info);
  CHECK_FALSE(pie.has_gnu_debugdata);
  CHECK(pie.debuglink_name.empty());
  CHECK(ReadElfIdentity(TestBin("c_g_nopie"))->type == ET_EXEC);
  CHECK_FALSE(ReadElfIdentity(TestBin("c_nodebug"))->has_debug_info);

  auto stripped = *ReadElfIdentity(TestBin("c_stripped"));
  CHECK_FALSE(stripped.has_symtab);
  CHECK_FALSE(stripped.has_debug_info);
  CHECK(stripped.gnu_build_id == pie.gnu_build_id);
  CHECK(stripped.debuglink_name == "c_stripped.debug");
  CHECK(stripped.debuglink_crc == *FileCrc32(TestBin("c_stripped.debug")));

  auto debug = *ReadElfIdentity(TestBin("c_stripped.debug"));
  CHECK(debug.has_debug_info);
  CHECK(debug.has_symtab);

  auto mini = *ReadElfIdentity(TestBin("c_minidebug"));
  CHECK(mini.has_gnu_debugdata);
  CHECK_FALSE(mini.has_symtab);
}

TEST_CASE("identity from bytes equals identity from the file") {
  std::string bytes = ReadFileBytes(TestBin("cpp_inline"));
  auto a = ReadElfIdentityFromBytes(bytes, "cpp_inline bytes");
  auto b = ReadElfIdentity(TestBin("cpp_inline"));
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->htlhash == b->htlhash);
  CHECK(a->gnu_build_id == b->gnu_build_id);
  CHECK(a->path == "cpp_inline bytes");
}

TEST_CASE("htlhash of a missing file names the file") {
  auto r = ComputeHtlHashOfPath("/nonexistent/kiln");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == absl::StatusCode::kNotFound);
  CHECK(r.status().message().find("/nonexistent/kiln") != std::string::npos);
}
