#include "python_layout.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace kiln::agent {
namespace {

std::string Unhex(const std::string& hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return out;
}

// The interpreter is the oracle: for every function of a sample of its own
// standard library and of a script with odd line layouts, it prints the
// line table and, from co_lines(), the line of every instruction.
constexpr const char* kDumpScript = R"PY(
import dis, inspect, json, sys, types, textwrap, collections, argparse
src = '''
def f(a, b):
    x = (a +
         b)
    if x:

        return [i for i in range(x)
                if i % 2]
    try:
        pass
    except Exception:
        raise
    return None
def g():
    yield 1
    yield 2
'''
ns = {}
exec(compile(src, "odd.py", "exec"), ns)
codes = []
def walk(c):
    codes.append(c)
    for k in c.co_consts:
        if isinstance(k, types.CodeType): walk(k)
for fn in (ns["f"], ns["g"]): walk(fn.__code__)
for mod in (textwrap, collections, argparse):
    for name, obj in vars(mod).items():
        if inspect.isfunction(obj): walk(obj.__code__)
        if inspect.isclass(obj):
            for m in vars(obj).values():
                if inspect.isfunction(m): walk(m.__code__)
for c in codes[:400]:
    lines = {}
    for start, end, line in c.co_lines():
        for b in range(start, end, 2): lines[b // 2] = line
    print(c.co_firstlineno, c.co_linetable.hex(), len(c.co_code) // 2,
          ",".join("%d:%s" % (i, "-" if l is None else l) for i, l in sorted(lines.items())))
)PY";

struct Dumped {
  int first_line = 0;
  std::string table;
  std::uint32_t units = 0;
  std::vector<std::pair<std::uint32_t, std::optional<int>>> lines;
};

std::vector<Dumped> DumpWith(const std::string& python) {
  std::vector<Dumped> out;
  char path[] = "/tmp/kiln_py_dump_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return out;
  std::string script(kDumpScript);
  bool written = write(fd, script.data(), script.size()) == static_cast<ssize_t>(script.size());
  close(fd);
  std::string text;
  if (FILE* p = written ? popen((python + " " + path).c_str(), "r") : nullptr) {
    char buf[65536];
    for (std::size_t n; (n = fread(buf, 1, sizeof(buf), p)) > 0;) text.append(buf, n);
    pclose(p);
  }
  unlink(path);
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream in(line);
    Dumped d;
    std::string hex, pairs;
    in >> d.first_line >> hex >> d.units >> pairs;
    d.table = Unhex(hex);
    std::istringstream ps(pairs);
    for (std::string pair; std::getline(ps, pair, ',');) {
      auto colon = pair.find(':');
      if (colon == std::string::npos) continue;
      std::string l = pair.substr(colon + 1);
      d.lines.push_back({static_cast<std::uint32_t>(std::stoul(pair.substr(0, colon))),
                         l == "-" ? std::nullopt : std::optional<int>(std::stoi(l))});
    }
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace

TEST_CASE("the line of every instruction equals what the interpreter's co_lines() says (python3.11)") {
  const std::string python = "/usr/bin/python3.11";
  REQUIRE_MESSAGE(access(python.c_str(), X_OK) == 0, python << " is needed (Debian 12's python3)");
  std::vector<Dumped> codes = DumpWith(python);
  REQUIRE(codes.size() > 100);
  std::size_t checked = 0, wrong = 0;
  for (const Dumped& d : codes) {
    for (const auto& [index, line] : d.lines) {
      ++checked;
      std::optional<int> ours = PythonLine(11, d.table, d.first_line, index);
      if (ours != line && ++wrong <= 5)
        MESSAGE("first line " << d.first_line << " index " << index << ": ours "
                              << (ours ? std::to_string(*ours) : "none") << ", python "
                              << (line ? std::to_string(*line) : "none"));
    }
  }
  MESSAGE(codes.size() << " code objects, " << checked << " instructions compared");
  CHECK(checked > 10000);
  CHECK(wrong == 0);
}

TEST_CASE("a truncated or garbage line table gives no line, not a crash") {
  std::string table = "\xf8\x02";  // a long-form entry cut short
  CHECK_FALSE(PythonLine(11, table, 10, 1000).has_value());
  CHECK_FALSE(PythonLine(11, std::string("\x01\x02\x03", 3), 10, 0).has_value());  // no entry start bit
  CHECK_FALSE(PythonLine(11, "", 10, 0).has_value());
  CHECK_FALSE(PythonLine(10, std::string("\x10", 1), 10, 0).has_value());
  CHECK_FALSE(PythonLine(11, "\x80", 10, KILN_PY_NO_INDEX).has_value());
  CHECK(PythonLine(10, "", 10, KILN_PY_NOT_STARTED) == 10);  // f_lasti -1: the def line
  // 3.10: 8 bytes on line 11, then 4 bytes with no line, then line 13.
  std::string t310("\x08\x01\x04\x80\x06\x02", 6);
  CHECK(PythonLine(10, t310, 10, 0) == 11);
  CHECK(PythonLine(10, t310, 10, 3) == 11);
  CHECK_FALSE(PythonLine(10, t310, 10, 4).has_value());
  CHECK(PythonLine(10, t310, 10, 6) == 13);
}

TEST_CASE("CPython's file names give the version; other files are not taken for it") {
  auto n = ParsePythonFileName("python3.11");
  REQUIRE(n.has_value());
  CHECK(n->minor == 11);
  CHECK_FALSE(n->free_threaded);
  n = ParsePythonFileName("libpython3.13t.so.1.0");
  REQUIRE(n.has_value());
  CHECK(n->minor == 13);
  CHECK(n->free_threaded);
  CHECK(ParsePythonFileName("libpython3.10.so")->minor == 10);
  CHECK(ParsePythonFileName("python3.15")->minor == 15);
  CHECK_FALSE(ParsePythonFileName("python3").has_value());
  CHECK_FALSE(ParsePythonFileName("python3.11-config").has_value());
  CHECK_FALSE(ParsePythonFileName("libpython3.11.a").has_value());
  CHECK_FALSE(ParsePythonFileName("mypython3.11").has_value());
}

TEST_CASE("str objects of every kind come out as UTF-8") {
  CHECK(PythonString("abc", 1) == "abc");
  CHECK(PythonString(std::string("\xe9", 1), 1) == "\xc3\xa9");                       // é, latin-1
  CHECK(PythonString(std::string("\xac\x20", 2), 2) == "\xe2\x82\xac");               // €, UCS-2
  CHECK(PythonString(std::string("\x00\xf6\x01\x00", 4), 4) == "\xf0\x9f\x98\x80");   // 😀, UCS-4
  CHECK(PythonString("abc", 3).empty());
}

// The _Py_DebugOffsets of Debian sid's python3.13 (3.13.18): the 72 words
// after the cookie, read from the start of its .PyRuntime section.
constexpr std::uint64_t kSid313[72] = {
    51188464, 0,   283408, 608, 632, 194984, 7272, 7264, 7344, 7400, 7656, 7640, 7648, 16, 7752, 0,  7768, 7760,
    312,      0,   8,      16,  72,  152,    160,  232,  32,   80,   8,    0,    56,   72,   70, 208, 112,  120,
    128,      136, 68,     52,  96,  104,    200,  16,   8,    416,  24,   88,   168,  32,   24, 16,  40,   24,
    16,       48,  32,     40,  24,  16,     32,   16,   24,   40,   16,   32,   64,   32,   16, 40,  240,  200};

std::string Sid313() {
  std::string s("xdebugpy", 8);
  s.append(reinterpret_cast<const char*>(kSid313), sizeof(kSid313));
  return s;
}

void SetWord(std::string& s, std::size_t byte, std::uint64_t v) { std::memcpy(s.data() + byte, &v, sizeof(v)); }

TEST_CASE("3.13's layout is read from the interpreter's own _Py_DebugOffsets") {
  auto l = PythonLayoutFromDebugOffsets(Sid313(), 13);
  REQUIRE_MESSAGE(l.ok(), l.error());
  CHECK(l->bpf.model == KILN_PY_MODEL_CSTACK);
  CHECK(l->runtime_interpreters_head == 632);
  CHECK(l->interp_threads_head == 7344);
  CHECK(l->bpf.tstate_frame == 72);
  CHECK(l->bpf.tstate_native_tid == 160);
  CHECK(l->bpf.frame_previous == 8);
  CHECK(l->bpf.frame_code == 0);
  CHECK(l->bpf.frame_instr == 56);
  CHECK(l->bpf.frame_entry == 70);
  CHECK(l->bpf.code_adaptive == 200);
  CHECK(l->code_qualname == 128);
  CHECK(l->code_firstlineno == 68);
  CHECK(l->unicode_ascii_size == 40);
}

TEST_CASE("a hostile or truncated _Py_DebugOffsets is refused, naming what does not hold up") {
  auto refused = [](const std::string& section, int minor) {
    auto l = PythonLayoutFromDebugOffsets(section, minor);
    return l.ok() ? std::string("accepted") : l.error();
  };
  CHECK(refused(Sid313().substr(0, 300), 13).find("shorter") != std::string::npos);
  CHECK(refused("", 13).find("cookie") != std::string::npos);
  std::string s = Sid313();
  s[0] = 'X';
  CHECK(refused(s, 13).find("cookie") != std::string::npos);
  CHECK(refused(Sid313(), 14).find("the file name another") != std::string::npos);
  s = Sid313();
  SetWord(s, 16, 1);  // free_threaded
  CHECK(refused(s, 13).find("free-threaded") != std::string::npos);
  s = Sid313();
  SetWord(s, 8, 0x030D00B1);  // 3.13.0b1: another layout
  CHECK(refused(s, 13).find("does not know") != std::string::npos);
  s = Sid313();
  SetWord(s, 224 + 8 * 5, 4000);  // frame.owner far past the frame's size
  CHECK(refused(s, 13).find("interpreter_frame.owner") != std::string::npos);
  s = Sid313();
  SetWord(s, 152 + 8 * 6, 163);  // native_thread_id misaligned
  CHECK(refused(s, 13).find("thread_state.native_thread_id") != std::string::npos);
  s = Sid313();
  SetWord(s, 224, 0);  // the frame's size 0
  CHECK(refused(s, 13).find("interpreter_frame") != std::string::npos);
  s = Sid313();
  SetWord(s, 272, ~0ULL);  // a code object of absurd size
  CHECK(refused(s, 13).find("code_object") != std::string::npos);
  s = Sid313();
  SetWord(s, 536 + 24, 1 << 20);  // PyASCIIObject of a megabyte
  CHECK(refused(s, 13).find("asciiobject_size") != std::string::npos);
}

TEST_CASE("3.11's layout comes from the table; versions without one are refused by name") {
  auto l = PythonLayoutFromTable(11);
  REQUIRE(l.ok());
  CHECK(l->bpf.model == KILN_PY_MODEL_IS_ENTRY);
  auto unknown = PythonLayoutFromTable(9);
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().find("3.9") != std::string::npos);
}

}  // namespace kiln::agent
