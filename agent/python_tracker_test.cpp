// Reading code objects and strings out of a process, against objects laid
// out in this test's own memory as CPython 3.11 lays them out (the tracker
// reads any process with process_vm_readv; its own is one): names, files and
// line tables come out; what is not a code object, cannot be read, or
// claims an absurd size gives no name rather than a crash or a huge read;
// a code object whose memory was reused for another gets the new name.
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
}

}  // namespace kiln::agent
