#include "elf_file.h"
#include "tests/integration/elf_oracle.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "ingest/symbols/demangle.h"
#include "symbolizer.h"

using namespace kiln::agent;
using kiln::testing::Shell;

namespace kiln_elf_test {
// A C++ function with a mangled name, for the demangling path.
__attribute__((noinline)) int KnownFunction(int x) { return x * 3 + 1; }
}  // namespace kiln_elf_test

TEST_CASE("elf: build id and load segments of this test binary") {
  int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  auto info = ReadElfInfo(fd);
  REQUIRE(info.ok());
  CHECK_FALSE(info->loads.empty());
  // readelf is the oracle for the build id (binutils is there wherever g++ is).
  std::string readelf =
      Shell("readelf -n /proc/" + std::to_string(getpid()) + "/exe | sed -n 's/.*Build ID: //p' | head -1");
  if (!readelf.empty()) CHECK(info->gnu_build_id == readelf);

  // The byte at KnownFunction's file offset maps back to its address.
  auto table = SymbolTable();
  REQUIRE(AddElfSymbols(fd, table).ok());
  table.Finish();
  close(fd);
  CHECK(table.size() > 10);
  for (const ElfLoadSegment& s : info->loads) {
    if (!s.executable) continue;
    std::uint64_t middle = s.file_offset + s.file_size / 2;
    CHECK(info->FileOffsetToVaddr(middle) == middle - s.file_offset + s.vaddr);
  }
}

TEST_CASE("elf: symbols are found and demangled") {
  int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  SymbolTable table;
  REQUIRE(AddElfSymbols(fd, table).ok());
  table.Finish();
  close(fd);
  // Find KnownFunction's link-time address from the table itself by name.
  std::string nm = Shell("nm /proc/" + std::to_string(getpid()) +
                         "/exe | grep ' _ZN13kiln_elf_test13KnownFunctionEi$' | cut -d' ' -f1");
  REQUIRE_FALSE(nm.empty());
  std::uint64_t address = std::stoull(nm, nullptr, 16);
  std::string_view name = table.Lookup(address + 2);
  CHECK(name.find("KnownFunction") != std::string_view::npos);
  CHECK(kiln::symbols::Demangle(std::string(name)) == "kiln_elf_test::KnownFunction(int)");
  CHECK(kiln::symbols::Demangle("main") == "main");
  CHECK(kiln::symbols::Demangle("_Znot_really") == "_Znot_really");
  CHECK(kiln_elf_test::KnownFunction(1) == 4);
}

TEST_CASE("elf: symbol table edges") {
  SymbolTable t;
  t.Add(0x1000, 0x10, "a");
  t.Add(0x2000, 0, "b");  // unknown size: up to the next symbol
  t.Add(0x3000, 0x10, "c");
  t.Add(0x1000, 0, "a_alias");
  t.Finish();
  CHECK(t.Lookup(0xfff).empty());
  CHECK(t.Lookup(0x1000) == "a");
  CHECK(t.Lookup(0x100f) == "a");
  CHECK(t.Lookup(0x1010).empty());
  CHECK(t.Lookup(0x2fff) == "b");
  CHECK(t.Lookup(0x3010).empty());
}

TEST_CASE("elf: MiniDebugInfo (.gnu_debugdata) symbols of a stripped binary") {
  // Build one the way distributions do: keep the function symbols in an
  // xz-compressed ELF inside the stripped binary. Needs gcc and binutils.
  char tmpl[] = "/tmp/kiln-mdi-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  std::string dir = tmpl;
  std::string script = "cd " + dir +
                       " && printf 'int __attribute__((noinline)) hidden_fn(int x){return x*5;}\\n"
                       "int main(int c, char**v){(void)v; return hidden_fn(c);}\\n' > t.c"
                       " && gcc -O1 -o t t.c && objcopy --only-keep-debug t t.debug"
                       " && objcopy -S --remove-section .gdb_index --keep-symbol=hidden_fn t.debug mini.debug"
                       " && xz mini.debug && strip --strip-all t -o t.stripped"
                       " && objcopy --add-section .gnu_debugdata=mini.debug.xz t.stripped t.mdi"
                       " && nm t | grep ' hidden_fn$' | cut -d' ' -f1";
  std::string address_text = Shell(script + " 2>/dev/null");
  if (address_text.empty()) {
    MESSAGE("skipped: gcc/objcopy/xz/strip not available");
    std::system(("rm -rf " + dir).c_str());
    return;
  }
  int fd = open((dir + "/t.mdi").c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  SymbolTable table;
  auto report = AddElfSymbols(fd, table);
  close(fd);
  REQUIRE(report.ok());
  table.Finish();
  CHECK(report->from_symtab == 0);
  CHECK(report->from_debugdata >= 1);
  CHECK(table.Lookup(std::stoull(address_text, nullptr, 16) + 1) == "hidden_fn");
  std::system(("rm -rf " + dir).c_str());
}
