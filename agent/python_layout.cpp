#include "python_layout.h"

#include <cstdio>
#include <cstring>
#include <regex>
#include <string>

namespace kiln::agent {
namespace {

PythonLayout Base(int minor) {
  PythonLayout l;
  l.minor = minor;
  std::memset(&l.bpf, 0xff, sizeof(l.bpf));
  l.bpf.owner_cstack = 0xff;
  l.bpf.code_tag_bits = 0;
  l.bpf.reserved = 0;
  return l;
}

}  // namespace

Result<PythonLayout> PythonLayoutFromTable(int minor) {
  PythonLayout l = Base(minor);
  // CPython 3.10-3.12, x86-64 release builds: offsetof() against each
  // version's internal headers, cross-checked with py-spy's bindings and
  // Pyroscope's and Parca's tables generated from the DWARF of every patch
  // release (no field moves within a minor version).
  switch (minor) {
    case 10:
      // One C call of the loop per frame; no native_thread_id yet: threads
      // are matched by thread_id, pthread_self() (the thread's fs base).
      l.bpf.model = KILN_PY_MODEL_ONE_FRAME;
      l.bpf.tstate_frame = 24;  // frame
      l.bpf.tstate_native_tid = 176;  // thread_id (pthread_t)
      l.bpf.frame_previous = 24;  // f_back
      l.bpf.frame_code = 32;
      l.bpf.frame_instr = 96;  // f_lasti, in code units
      l.runtime_interpreters_head = 32;
      l.interp_next = 0;
      l.interp_threads_head = 8;
      l.tstate_next = 8;
      l.code_filename = 104;
      l.code_name = 112;
      l.code_firstlineno = 40;
      l.code_linetable = 120;
      return l;
    case 11:
      l.bpf.model = KILN_PY_MODEL_IS_ENTRY;
      l.bpf.tstate_frame = 56;  // cframe
      l.bpf.cframe_frame = 8;   // _PyCFrame.current_frame
      l.bpf.tstate_native_tid = 160;
      l.bpf.frame_code = 32;
      l.bpf.frame_previous = 48;
      l.bpf.frame_instr = 56;  // prev_instr
      l.bpf.frame_entry = 68;  // is_entry
      l.bpf.code_adaptive = 184;
      l.runtime_interpreters_head = 40;
      l.interp_next = 0;
      l.interp_threads_head = 16;
      l.tstate_next = 8;
      l.code_filename = 112;
      l.code_name = 120;
      l.code_qualname = 128;
      l.code_firstlineno = 72;
      l.code_linetable = 136;
      return l;
    case 12:
      // Each C call of the loop pushes a shim frame owned by the C stack.
      l.bpf.model = KILN_PY_MODEL_CSTACK;
      l.bpf.owner_cstack = 3;
      l.bpf.tstate_frame = 56;  // cframe
      l.bpf.cframe_frame = 0;   // _PyCFrame.current_frame
      l.bpf.tstate_native_tid = 144;
      l.bpf.frame_code = 0;
      l.bpf.frame_previous = 8;
      l.bpf.frame_instr = 56;  // prev_instr
      l.bpf.frame_entry = 70;  // owner
      l.bpf.code_adaptive = 192;
      l.runtime_interpreters_head = 40;
      l.interp_next = 0;
      l.interp_threads_head = 72;
      l.tstate_next = 8;
      l.code_filename = 112;
      l.code_name = 120;
      l.code_qualname = 128;
      l.code_firstlineno = 68;
      l.code_linetable = 136;
      l.unicode_ascii_size = 40;
      l.unicode_compact_size = 56;
      return l;
    default:
      return Result<PythonLayout>::Error("CPython 3." + std::to_string(minor) +
                                         ": no layout known for this version");
  }
}

namespace {

// Where the groups and fields kiln-agent reads sit in _Py_DebugOffsets: a
// char[8] cookie, then uint64_t fields only (no padding), so field k is at
// 8 + 8k. The group layout changed in every minor version and within 3.15's
// betas (b4 added thread_state.last_profiled_frame_seq); a version whose
// layout is not here is refused rather than guessed.
struct DebugOffsetsShape {
  std::uint32_t min_version, max_version;  // PY_VERSION_HEX range (inclusive)
  std::uint32_t size;                      // sizeof(_Py_DebugOffsets)
  std::uint16_t runtime, interp, thread, frame, code, pyobject, bytes, unicode;
  std::uint16_t thread_native_tid;  // within thread_state
  std::uint8_t owner_boundary;      // owner of the frame between two C calls of the loop
  std::uint8_t executable_tag_bits;
};

// Offsets of each group's first field (its size) within the struct.
constexpr DebugOffsetsShape kShapes[] = {
    // 3.13.0rc2 and later 3.13 (the rc2 layout holds to 3.13.13).
    {0x030D00C2, 0x030DFFFF, 584, 24, 48, 152, 224, 272, 352, 512, 536, 48, 3, 0},
    // 3.14.0b2 and later 3.14.
    {0x030E00B2, 0x030EFFFF, 760, 24, 48, 176, 248, 312, 400, 592, 616, 48, 3, 3},
    // 3.15.0b1 - b3.
    {0x030F00B1, 0x030F00B3, 880, 24, 48, 176, 304, 368, 456, 680, 704, 64, 3, 3},
    // 3.15.0b4 and later (as main builds them).
    {0x030F00B4, 0x030FFFFF, 888, 24, 48, 176, 312, 376, 464, 688, 712, 72, 3, 3},
};

std::uint64_t U64(std::string_view s, std::size_t at) {
  std::uint64_t v = 0;
  std::memcpy(&v, s.data() + at, sizeof(v));
  return v;
}

}  // namespace

Result<PythonLayout> PythonLayoutFromDebugOffsets(std::string_view section, int minor) {
  using R = Result<PythonLayout>;
  const std::string name = "CPython 3." + std::to_string(minor);
  if (section.size() < 24 || section.substr(0, 8) != std::string_view("xdebugpy", 8))
    return R::Error(name + ": no _Py_DebugOffsets at the start of .PyRuntime (cookie missing)");
  const std::uint64_t version = U64(section, 8);
  if ((version >> 24) != 3 || ((version >> 16) & 0xff) != static_cast<std::uint64_t>(minor)) {
    char hex[32];
    std::snprintf(hex, sizeof(hex), "0x%08llx", static_cast<unsigned long long>(version));
    return R::Error(name + ": _Py_DebugOffsets says version " + hex + ", the file name another");
  }
  if (U64(section, 16) != 0) return R::Error(name + ": free-threaded build, not supported");
  const DebugOffsetsShape* shape = nullptr;
  for (const auto& s : kShapes)
    if (version >= s.min_version && version <= s.max_version) shape = &s;
  if (!shape) {
    char hex[32];
    std::snprintf(hex, sizeof(hex), "0x%08llx", static_cast<unsigned long long>(version));
    return R::Error(name + ": _Py_DebugOffsets of version " + hex + " has a layout kiln-agent does not know");
  }
  if (section.size() < shape->size) return R::Error(name + ": .PyRuntime is shorter than _Py_DebugOffsets");
  // Every offset read must lie inside its structure as the interpreter
  // gives its size, aligned, and the structures be of a plausible size:
  // a hostile or corrupt table is refused, not followed.
  std::string bad;
  auto field = [&](std::uint16_t group, int index, std::uint64_t width, const char* what) -> std::uint16_t {
    std::uint64_t size = U64(section, group), off = U64(section, group + 8u * index);
    // The runtime and interpreter states are hundreds of KiB; the fields
    // read are near their starts (and kept as 16-bit offsets).
    if (size == 0 || size > (1u << 24) || off + width > size || off + width > 65535 || off % width != 0) {
      if (bad.empty()) bad = what;
      return 0;
    }
    return static_cast<std::uint16_t>(off);
  };
  PythonLayout l = Base(minor);
  l.bpf.model = KILN_PY_MODEL_CSTACK;
  l.bpf.owner_cstack = shape->owner_boundary;
  l.bpf.code_tag_bits = shape->executable_tag_bits;
  l.runtime_interpreters_head = field(shape->runtime, 2, 8, "runtime_state.interpreters_head");
  l.interp_next = field(shape->interp, 2, 8, "interpreter_state.next");
  l.interp_threads_head = field(shape->interp, 3, 8, "interpreter_state.threads_head");
  l.tstate_next = field(shape->thread, 2, 8, "thread_state.next");
  l.bpf.tstate_frame = field(shape->thread, 4, 8, "thread_state.current_frame");
  l.bpf.tstate_native_tid = field(shape->thread, shape->thread_native_tid / 8, 8, "thread_state.native_thread_id");
  l.bpf.frame_previous = field(shape->frame, 1, 8, "interpreter_frame.previous");
  l.bpf.frame_code = field(shape->frame, 2, 8, "interpreter_frame.executable");
  l.bpf.frame_instr = field(shape->frame, 3, 8, "interpreter_frame.instr_ptr");
  l.bpf.frame_entry = field(shape->frame, 5, 1, "interpreter_frame.owner");
  l.code_filename = field(shape->code, 1, 8, "code_object.filename");
  l.code_name = field(shape->code, 2, 8, "code_object.name");
  l.code_qualname = field(shape->code, 3, 8, "code_object.qualname");
  l.code_linetable = field(shape->code, 4, 8, "code_object.linetable");
  l.code_firstlineno = field(shape->code, 5, 4, "code_object.firstlineno");
  l.bpf.code_adaptive = field(shape->code, 9, 2, "code_object.co_code_adaptive");
  l.object_type = field(shape->pyobject, 1, 8, "pyobject.ob_type");
  l.bytes_size = field(shape->bytes, 1, 8, "bytes_object.ob_size");
  l.bytes_data = field(shape->bytes, 2, 1, "bytes_object.ob_sval");
  l.unicode_state = field(shape->unicode, 1, 4, "unicode_object.state");
  l.unicode_length = field(shape->unicode, 2, 8, "unicode_object.length");
  const std::uint64_t ascii_size = U64(section, shape->unicode + 24u);
  if (ascii_size < 24 || ascii_size > 256) bad = bad.empty() ? "unicode_object.asciiobject_size" : bad;
  l.unicode_ascii_size = static_cast<std::uint16_t>(ascii_size);
  // The compact header adds utf8_length and utf8 (two words) to the ASCII one.
  l.unicode_compact_size = static_cast<std::uint16_t>(ascii_size + 16);
  if (!bad.empty()) return R::Error(name + ": _Py_DebugOffsets does not hold up (" + bad + ")");
  return l;
}

std::optional<PythonFileName> ParsePythonFileName(std::string_view basename) {
  static const std::regex re(R"(^(?:lib)?python(\d)\.(\d+)(t?)(?:d|m|dm)?(?:\.so(?:\.[0-9]+)*)?$)");
  std::cmatch m;
  if (!std::regex_match(basename.data(), basename.data() + basename.size(), m, re)) return std::nullopt;
  PythonFileName n;
  n.major = std::stoi(m[1].str());
  n.minor = std::stoi(m[2].str());
  n.free_threaded = m[3].length() > 0;
  return n;
}

namespace {

// 3.10 (PEP 626, Objects/lnotab_notes.txt): pairs of (bytes of code, signed
// line change); a change of -128 means "no line" for that range.
std::optional<int> Line310(std::string_view table, int first_line, std::uint32_t index) {
  std::uint64_t offset = std::uint64_t{index} * 2, start = 0;
  int line = first_line;
  for (std::size_t i = 0; i + 1 < table.size(); i += 2) {
    auto length = static_cast<std::uint8_t>(table[i]);
    auto delta = static_cast<std::int8_t>(table[i + 1]);
    bool none = delta == -128;
    if (!none) line += delta;
    std::uint64_t end = start + length;
    if (offset >= start && offset < end) return none ? std::nullopt : std::optional<int>(line);
    start = end;
  }
  return std::nullopt;
}

// 3.11+ (PEP 657, Objects/locations.md): entries of a first byte 1cccclll
// (code, length - 1 in code units) and the code's data in 6-bit varints.
class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}
  bool done() const { return at_ >= s_.size(); }
  int Byte() { return at_ < s_.size() ? static_cast<std::uint8_t>(s_[at_++]) : -1; }
  std::uint64_t Varint() {
    int b = Byte();
    if (b < 0) return 0;
    std::uint64_t v = b & 63;
    for (int shift = 6; (b & 64) && shift < 64; shift += 6) {
      b = Byte();
      if (b < 0) break;
      v |= static_cast<std::uint64_t>(b & 63) << shift;
    }
    return v;
  }
  std::int64_t Svarint() {
    std::uint64_t v = Varint();
    return (v & 1) ? -static_cast<std::int64_t>(v >> 1) : static_cast<std::int64_t>(v >> 1);
  }
  std::size_t at() const { return at_; }

 private:
  std::string_view s_;
  std::size_t at_ = 0;
};

std::optional<int> Line311(std::string_view table, int first_line, std::uint32_t index) {
  Reader r(table);
  std::int64_t line = first_line;
  std::uint64_t start = 0;
  while (!r.done()) {
    int first = r.Byte();
    if (!(first & 0x80)) return std::nullopt;  // not at an entry: a bad table
    int code = (first >> 3) & 15;
    std::uint64_t end = start + (first & 7) + 1;
    bool none = false;
    if (code == 15) {
      none = true;
    } else if (code == 14) {
      line += r.Svarint();
      r.Varint();  // end line
      r.Varint();  // column
      r.Varint();  // end column
    } else if (code == 13) {
      line += r.Svarint();
    } else if (code >= 10) {
      line += code - 10;
      r.Byte();
      r.Byte();
    } else {
      r.Byte();
    }
    if (index >= start && index < end) return none ? std::nullopt : std::optional<int>(static_cast<int>(line));
    start = end;
  }
  return std::nullopt;
}

void AppendUtf8(std::string& out, std::uint32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xc0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 63));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xe0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 63));
    out += static_cast<char>(0x80 | (c & 63));
  } else if (c < 0x110000) {
    out += static_cast<char>(0xf0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 63));
    out += static_cast<char>(0x80 | ((c >> 6) & 63));
    out += static_cast<char>(0x80 | (c & 63));
  } else {
    out += "\xef\xbf\xbd";  // U+FFFD for what is not a character
  }
}

}  // namespace

std::optional<int> PythonLine(int minor, std::string_view linetable, int first_line, std::uint32_t index) {
  if (index == KILN_PY_NOT_STARTED) return first_line;  // as frame.f_lineno says then
  if (index >= KILN_PY_NOT_STARTED) return std::nullopt;
  return minor <= 10 ? Line310(linetable, first_line, index) : Line311(linetable, first_line, index);
}

std::string PythonString(std::string_view data, int kind) {
  std::string out;
  if (kind != 1 && kind != 2 && kind != 4) return out;
  out.reserve(data.size() / kind);
  for (std::size_t i = 0; i + kind <= data.size(); i += kind) {
    std::uint32_t c = 0;
    std::memcpy(&c, data.data() + i, kind);  // little-endian hosts (x86-64, arm64)
    AppendUtf8(out, c);
  }
  return out;
}

}  // namespace kiln::agent
