// Reading code objects and strings out of a process, against objects laid
// out in this test's own memory as CPython 3.11 lays them out (the tracker
// reads any process with process_vm_readv; its own is one): names, files and
// line tables come out; what is not a code object, cannot be read, or
// claims an absurd size gives no name rather than a crash or a huge read;
// a code object whose memory was reused for another gets the new name, and
// one freed before its sample was named keeps the name it was read with.
#include "python_tracker.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

namespace kiln::agent {
namespace {

struct alignas(16) Object {
  std::uint8_t bytes[256] = {};
  std::uint64_t address() const { return reinterpret_cast<std::uint64_t>(bytes); }
  template <typename T>
  void Set(std::size_t offset, T v) {
    std::memcpy(bytes + offset, &v, sizeof(v));
  }
};

// A compact ASCII str (3.11: PyASCIIObject of 48 bytes, characters after).
void MakeAscii(Object& o, const std::string& text, std::uint64_t claimed_length = 0) {
  o.Set<std::uint64_t>(16, claimed_length ? claimed_length : text.size());
  o.Set<std::uint32_t>(32, (1u << 2) | (1u << 5) | (1u << 6));  // kind 1, compact, ascii
  std::memcpy(o.bytes + 48, text.data(), text.size());
}

void MakeBytes(Object& o, const std::string& data, std::uint64_t claimed_size = 0) {
  o.Set<std::uint64_t>(16, claimed_size ? claimed_size : data.size());
  std::memcpy(o.bytes + 32, data.data(), data.size());
}

}  // namespace

TEST_CASE("code objects are read from a process's memory, and what is not one is refused") {
  auto layout = PythonLayoutFromTable(11);
  REQUIRE(layout.ok());
  const auto pid = static_cast<std::uint32_t>(getpid());
  static Object type, name, file, table, code;
  MakeAscii(name, "Shop.checkout");
  MakeAscii(file, "/srv/shop.py");
  const std::string lines("\x80\x00\xd8\x04", 4);
  MakeBytes(table, lines);
  code.Set<std::uint64_t>(8, type.address());
  code.Set<std::uint64_t>(128, name.address());  // co_qualname
  code.Set<std::uint64_t>(112, file.address());  // co_filename
  code.Set<std::int32_t>(72, 41);                // co_firstlineno
  code.Set<std::uint64_t>(136, table.address()); // co_linetable

  auto read = ReadPythonCode(pid, *layout, type.address(), code.address());
  REQUIRE(read.has_value());
  CHECK(read->function == "Shop.checkout");
  CHECK(read->file == "/srv/shop.py");
  CHECK(read->first_line == 41);
  CHECK(read->linetable == lines);

  // Not a code object of this interpreter, or no memory there.
  CHECK_FALSE(ReadPythonCode(pid, *layout, type.address() + 8, code.address()).has_value());
  CHECK_FALSE(ReadPythonCode(pid, *layout, type.address(), 0x10).has_value());

  // Absurd sizes: a name of 2^40 characters, a line table of 2^40 bytes, a
  // length that overflows when multiplied by the character size.
  static Object huge_name, huge_table, overflow_name;
  MakeAscii(huge_name, "x", 1ULL << 40);
  MakeBytes(huge_table, "", 1ULL << 40);
  overflow_name.Set<std::uint64_t>(16, 1ULL << 62);
  overflow_name.Set<std::uint32_t>(32, (4u << 2) | (1u << 5));  // kind 4, compact, not ascii
  code.Set<std::uint64_t>(128, huge_name.address());
  code.Set<std::uint64_t>(136, huge_table.address());
  read = ReadPythonCode(pid, *layout, type.address(), code.address());
  REQUIRE(read.has_value());
  CHECK(read->function.empty());
  CHECK(read->linetable.empty());
  CHECK(read->file == "/srv/shop.py");
  CHECK(ReadPythonString(pid, *layout, overflow_name.address()).empty());
  CHECK(ReadPythonString(pid, *layout, 0).empty());
}

TEST_CASE("a code object's memory reused for another gets the new name, not the cached one") {
  auto layout = PythonLayoutFromTable(11);
  REQUIRE(layout.ok());
  const auto pid = static_cast<std::uint32_t>(getpid());
  static Object type, first, second, file, code;
  MakeAscii(first, "first");
  MakeAscii(second, "second");
  MakeAscii(file, "/srv/a.py");
  code.Set<std::uint64_t>(8, type.address());
  code.Set<std::uint64_t>(128, first.address());
  code.Set<std::uint64_t>(112, file.address());
  auto before = ReadPythonCode(pid, *layout, type.address(), code.address());
  REQUIRE(before.has_value());
  CHECK(before->function == "first");
  // The same object again: the cached copy (its strings are not read again).
  MakeAscii(first, "FIRST");
  auto again = ReadPythonCode(pid, *layout, type.address(), code.address(), &*before);
  REQUIRE(again.has_value());
  CHECK(again->function == "first");
  // Freed and another code object made at the same address: new pointers.
  code.Set<std::uint64_t>(128, second.address());
  auto after = ReadPythonCode(pid, *layout, type.address(), code.address(), &*before);
  REQUIRE(after.has_value());
  CHECK(after->function == "second");
  CHECK_FALSE(after->gone);
}

TEST_CASE("a sample named after its code object was freed keeps the name it was read with") {
  // A process tearing down frees its code objects before it exits; samples
  // taken a moment earlier are named after that.
  auto layout = PythonLayoutFromTable(11);
  REQUIRE(layout.ok());
  const auto pid = static_cast<std::uint32_t>(getpid());
  static Object type, name, file, code;
  MakeAscii(name, "<module>");
  MakeAscii(file, "/srv/main.py");
  code.Set<std::uint64_t>(8, type.address());
  code.Set<std::uint64_t>(128, name.address());
  code.Set<std::uint64_t>(112, file.address());
  auto before = ReadPythonCode(pid, *layout, type.address(), code.address());
  REQUIRE(before.has_value());
  CHECK_FALSE(before->gone);
  // Freed, its memory reused for something else (no code object's type).
  code.Set<std::uint64_t>(8, 0x53a194d3d16938c1ULL);
  auto freed = ReadPythonCode(pid, *layout, type.address(), code.address(), &*before);
  REQUIRE(freed.has_value());
  CHECK(freed->function == "<module>");
  CHECK(freed->file == "/srv/main.py");
  CHECK(freed->gone);
  // Never read while it was there: nothing to name it with.
  CHECK_FALSE(ReadPythonCode(pid, *layout, type.address(), code.address()).has_value());
  // Unmapped (the process has exited): the earlier read.
  auto exited = ReadPythonCode(pid, *layout, type.address(), 0x10, &*before);
  REQUIRE(exited.has_value());
  CHECK(exited->function == "<module>");
  CHECK(exited->gone);
}

}  // namespace kiln::agent
