#pragma once
// What kiln-agent must know of a CPython version to read its frames, and the
// pure parts of reading them (tested without a process):
//   - PythonLayout: byte offsets of the interpreter's structures, from a
//     table per minor version for 3.10-3.12, and from the interpreter's own
//     _Py_DebugOffsets (the start of section .PyRuntime) for 3.13 and later,
//     checked before use: the layout is trusted only where the interpreter
//     describes itself;
//   - PythonLine: the line of an instruction from a code object's line table
//     (3.10's PEP 626 pairs, 3.11+'s PEP 657 location table);
//   - PythonString: a str object's characters as UTF-8.

#include <linux/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "bpf/python_abi.h"
#include "result.h"

namespace kiln::agent {

inline constexpr std::uint16_t kPyNoField = 0xffff;

struct PythonLayout {
  int minor = 0;  // 3.minor
  kiln_py_layout bpf{};
  // The thread list, walked by user space to find each thread's state.
  std::uint16_t runtime_interpreters_head = kPyNoField;  // _PyRuntimeState.interpreters.head
  std::uint16_t interp_next = kPyNoField;
  std::uint16_t interp_threads_head = kPyNoField;
  std::uint16_t tstate_next = kPyNoField;
  // Code objects.
  std::uint16_t object_type = 8;  // PyObject.ob_type
  std::uint16_t code_filename = kPyNoField;
  std::uint16_t code_name = kPyNoField;
  std::uint16_t code_qualname = kPyNoField;  // 3.11+
  std::uint16_t code_firstlineno = kPyNoField;
  std::uint16_t code_linetable = kPyNoField;
  // str objects (compact): the header's size before the characters.
  std::uint16_t unicode_length = 16;
  std::uint16_t unicode_state = 32;
  std::uint16_t unicode_ascii_size = 48;    // sizeof(PyASCIIObject)
  std::uint16_t unicode_compact_size = 72;  // sizeof(PyCompactUnicodeObject)
  // bytes objects.
  std::uint16_t bytes_size = 16;  // ob_size
  std::uint16_t bytes_data = 32;  // ob_sval
};

// The layout of 3.minor from kiln-agent's own table (3.10-3.12), or an error
// naming the version.
[[nodiscard]] Result<PythonLayout> PythonLayoutFromTable(int minor);

// The layout from the _Py_DebugOffsets at the start of `section` (the
// .PyRuntime section's bytes), for the 3.minor its file name says. Refused,
// with the reason, when the cookie, version, free-threading flag or any
// offset or size is not what a readable interpreter of that version has.
[[nodiscard]] Result<PythonLayout> PythonLayoutFromDebugOffsets(std::string_view section, int minor);

// "3.11" from a file name the way distributions and pyenv name CPython:
// python3.11, libpython3.11.so.1.0, libpython3.13t.so; nullopt for other
// files. `free_threaded` says "t".
struct PythonFileName {
  int major = 0, minor = 0;
  bool free_threaded = false;
};
std::optional<PythonFileName> ParsePythonFileName(std::string_view basename);

// The line of the instruction `index` (in 2-byte code units) from a code
// object's line table; nullopt when the table gives none.
std::optional<int> PythonLine(int minor, std::string_view linetable, int first_line, std::uint32_t index);

// A str object's characters (kind 1, 2 or 4 bytes each) as UTF-8.
std::string PythonString(std::string_view data, int kind);

}  // namespace kiln::agent
