#include "perf_map.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

namespace kiln::agent {

namespace {

bool ParseHex(std::string_view s, std::uint64_t* out) {
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);  // the JVM writes 0x
  if (s.empty() || s.size() > 16) return false;
  std::uint64_t v = 0;
  for (char c : s) {
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return false;
    v = v << 4 | static_cast<std::uint64_t>(d);
  }
  *out = v;
  return true;
}

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// V8's code kinds (CodeEventListener tags as --perf-basic-prof writes them,
// old and new); the first few name JavaScript functions.
constexpr std::array<std::string_view, 6> kV8Functions = {"JS", "LazyCompile", "Function", "Script", "Eval",
                                                          "InterpretedFunction"};
constexpr std::array<std::string_view, 7> kV8Other = {"Builtin", "BytecodeHandler", "Stub",   "RegExp",
                                                      "Handler", "Callback",        "Baseline"};

bool JavaIdentifierChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$' ||
         static_cast<unsigned char>(c) >= 0x80;
}

// HotSpot (jcmd PID Compiler.perfmap, -XX:+DumpPerfMapAtExit) names a
// compiled method "RETURN_TYPE PACKAGE.CLASS.METHOD(ARGUMENT TYPES)":
// "long Chain.leafWork(long)", "void java.lang.Object.<init>()". Its other
// code blobs ("Interpreter", "StubRoutines (1)") are not methods. As
// async-profiler and the OpenTelemetry profiler do, the frame is
// "PACKAGE.CLASS.METHOD": the return type and argument list are dropped, so
// overloads share a frame.
std::optional<JitSymbol> ParseJvmName(std::string_view name) {
  if (name.empty() || name.back() != ')') return std::nullopt;
  const std::size_t open = name.find('(');
  const std::size_t space = name.rfind(' ', open);
  if (open == std::string_view::npos || space == std::string_view::npos || space == 0) return std::nullopt;
  const std::string_view type = name.substr(0, space);
  const std::string_view method = name.substr(space + 1, open - space - 1);
  const std::size_t dot = method.rfind('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == method.size()) return std::nullopt;
  // The return type is one Java type: a name, maybe qualified, maybe an array.
  const bool type_ok = std::all_of(type.begin(), type.end(), [](char c) {
    return JavaIdentifierChar(c) || c == '.' || c == '[' || c == ']';
  });
  const std::string_view simple = method.substr(dot + 1);
  const bool method_ok = std::all_of(method.begin(), method.begin() + static_cast<std::ptrdiff_t>(dot),
                                     [](char c) { return JavaIdentifierChar(c) || c == '.'; }) &&
                         (simple == "<init>" || simple == "<clinit>" ||
                          std::all_of(simple.begin(), simple.end(), JavaIdentifierChar));
  if (!type_ok || !method_ok) return std::nullopt;
  JitSymbol s;
  s.runtime = JitRuntime::kJvm;
  s.function = std::string(method);
  return s;
}

// .NET (DOTNET_PerfMapEnabled=1) names a method
// "RETURN_TYPE [ASSEMBLY] NAMESPACE.CLASS::METHOD(ARGUMENTS)[TIER]":
// "void [System.Private.CoreLib] System.Threading.Thread::StartCallback()[Optimized]".
// The frame is "NAMESPACE.CLASS::METHOD"; the tier (Tier0, Tier1,
// Optimized, PreJIT, ...) changes as the method is recompiled and is not
// part of its identity.
std::optional<JitSymbol> ParseDotnetName(std::string_view name) {
  if (name.empty() || name.back() != ']') return std::nullopt;
  const std::size_t tier = name.rfind('[');
  if (tier == std::string_view::npos || tier == 0 || name[tier - 1] != ')') return std::nullopt;
  const std::string_view signature = name.substr(0, tier);
  const std::size_t assembly_end = signature.find("] ");
  const std::size_t assembly_start = signature.find('[');
  if (assembly_start == std::string_view::npos || assembly_end == std::string_view::npos ||
      assembly_end < assembly_start)
    return std::nullopt;
  std::string_view method = signature.substr(assembly_end + 2);
  method = method.substr(0, method.find('('));
  if (method.find("::") == std::string_view::npos) return std::nullopt;
  JitSymbol s;
  s.runtime = JitRuntime::kDotnet;
  s.function = std::string(method);
  return s;
}

}  // namespace

JitSymbol ParseJitName(std::string_view name) {
  JitSymbol s;
  if (name.rfind("py::", 0) == 0) {
    // CPython's -X perf: "py::QUALNAME:FILENAME" (a qualname has no ':').
    s.runtime = JitRuntime::kPython;
    std::string_view rest = name.substr(4);
    std::size_t colon = rest.find(':');
    s.function = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) s.file = std::string(rest.substr(colon + 1));
    return s;
  }
  if (std::optional<JitSymbol> jvm = ParseJvmName(name)) return *jvm;
  if (std::optional<JitSymbol> dotnet = ParseDotnetName(name)) return *dotnet;
  const std::size_t colon = name.find(':');
  const std::string_view kind = colon == std::string_view::npos ? std::string_view() : name.substr(0, colon);
  if (std::find(kV8Other.begin(), kV8Other.end(), kind) != kV8Other.end()) {
    s.runtime = JitRuntime::kV8;
    s.function = std::string(name);
    return s;
  }
  if (std::find(kV8Functions.begin(), kV8Functions.end(), kind) == kV8Functions.end()) {
    s.function = std::string(name);
    return s;
  }
  // "JS:*name /path/file.js:LINE:COLUMN": the tier mark (~ interpreted,
  // ^ baseline, + Maglev, * TurboFan) is not part of the name.
  s.runtime = JitRuntime::kV8;
  std::string_view rest = name.substr(colon + 1);
  if (!rest.empty() && std::strchr("~^+*-", rest[0]) != nullptr) rest.remove_prefix(1);
  std::string_view function = rest;
  if (std::size_t space = rest.rfind(' '); space != std::string_view::npos) {
    std::string_view location = rest.substr(space + 1);
    // FILE:LINE or FILE:LINE:COLUMN.
    std::size_t c1 = location.rfind(':');
    if (c1 != std::string_view::npos && AllDigits(location.substr(c1 + 1))) {
      std::string_view head = location.substr(0, c1);
      std::string_view line = location.substr(c1 + 1);
      if (std::size_t c2 = head.rfind(':'); c2 != std::string_view::npos && AllDigits(head.substr(c2 + 1))) {
        line = head.substr(c2 + 1);
        head = head.substr(0, c2);
      }
      if (!head.empty()) {
        function = rest.substr(0, space);
        s.file = std::string(head);
        s.line = std::stoll(std::string(line.substr(0, 12)));
      }
    }
  }
  s.function = function.empty() ? "(anonymous)" : std::string(function);
  return s;
}

std::size_t PerfMap::Add(std::string_view text) {
  std::size_t consumed = 0;
  while (consumed < text.size()) {
    const std::size_t nl = text.find('\n', consumed);
    if (nl == std::string_view::npos) break;
    std::string_view line = text.substr(consumed, nl - consumed);
    consumed = nl + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const std::size_t s1 = line.find(' ');
    const std::size_t s2 = s1 == std::string_view::npos ? s1 : line.find(' ', s1 + 1);
    std::uint64_t start = 0, size = 0;
    if (s2 == std::string_view::npos || s2 + 1 >= line.size() || !ParseHex(line.substr(0, s1), &start) ||
        !ParseHex(line.substr(s1 + 1, s2 - s1 - 1), &size) || start + size < start) {
      ++bad_lines_;
      continue;
    }
    ++good_lines_;
    if (size == 0) continue;
    pending_.push_back(Range{start, start + size, static_cast<std::uint32_t>(names_.size()), next_seq_++});
    names_.append(line.substr(s2 + 1));
    names_.push_back('\n');
  }
  return consumed;
}

void PerfMap::Normalize() {
  if (pending_.empty()) return;
  // Every range, older ones first (by seq); then a sweep over the sorted
  // boundaries with the newest range that covers each piece on top.
  std::vector<Range> all;
  all.reserve(ranges_.size() + pending_.size());
  all.insert(all.end(), ranges_.begin(), ranges_.end());
  all.insert(all.end(), pending_.begin(), pending_.end());
  pending_.clear();
  pending_.shrink_to_fit();
  std::sort(all.begin(), all.end(), [](const Range& a, const Range& b) { return a.start < b.start; });
  std::vector<std::uint64_t> points;
  points.reserve(all.size() * 2);
  for (const Range& r : all) {
    points.push_back(r.start);
    points.push_back(r.end);
  }
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  auto older = [](const Range* a, const Range* b) { return a->seq < b->seq; };
  std::vector<const Range*> active;  // a max-heap by seq
  std::vector<Range> out;
  std::size_t next = 0;
  for (std::size_t i = 0; i + 1 < points.size(); ++i) {
    const std::uint64_t p = points[i], q = points[i + 1];
    while (next < all.size() && all[next].start <= p) {
      active.push_back(&all[next++]);
      std::push_heap(active.begin(), active.end(), older);
    }
    while (!active.empty() && active.front()->end <= p) {
      std::pop_heap(active.begin(), active.end(), older);
      active.pop_back();
    }
    if (active.empty()) continue;
    const Range* top = active.front();
    if (!out.empty() && out.back().end == p && out.back().seq == top->seq) {
      out.back().end = q;
    } else {
      out.push_back(Range{p, q, top->name, top->seq});
    }
  }
  ranges_ = std::move(out);
}

std::optional<JitSymbol> PerfMap::Find(std::uint64_t address) {
  Normalize();
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), address,
                             [](std::uint64_t a, const Range& r) { return a < r.start; });
  if (it == ranges_.begin()) return std::nullopt;
  --it;
  if (address >= it->end) return std::nullopt;
  std::string_view name(names_);
  name = name.substr(it->name);
  return ParseJitName(name.substr(0, name.find('\n')));
}

std::size_t PerfMap::MemoryBytes() const {
  return ranges_.capacity() * sizeof(Range) + pending_.capacity() * sizeof(Range) + names_.capacity();
}

std::uint32_t InnermostPid(std::string_view status_text) {
  std::size_t at = status_text.find("\nNSpid:");
  if (at == std::string_view::npos) return 0;
  std::string_view line = status_text.substr(at + 7);
  line = line.substr(0, line.find('\n'));
  std::uint32_t last = 0;
  std::istringstream in{std::string(line)};
  for (std::uint32_t v; in >> v;) last = v;
  return last;
}

void PerfMaps::Refuse(Process& p, const std::string& why) {
  ++stats_.refused;
  bytes_held_ -= std::min(bytes_held_, p.offset);
  p.offset = 0;
  notices_.push_back("perf map " + p.path + " refused: " + why);
  p.done = true;
  p.map = PerfMap();
}

void PerfMaps::Read(std::uint32_t pid, Process& p) {
  p.read_at = std::chrono::steady_clock::now();
  if (p.path.empty()) {
    std::ifstream status(proc_root_ + "/" + std::to_string(pid) + "/status");
    std::stringstream text;
    text << "\n" << status.rdbuf();
    std::uint32_t ns_pid = InnermostPid(text.str());
    if (ns_pid == 0) ns_pid = pid;  // kernels before 4.1 have no NSpid
    p.path = proc_root_ + "/" + std::to_string(pid) + "/root/tmp/perf-" + std::to_string(ns_pid) + ".map";
  }
  // Not blocking on a FIFO, not following a link the process put there.
  const int fd = open(p.path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT && errno != ENOTDIR) Refuse(p, std::strerror(errno));
    return;  // no perf map (yet): its JIT code stays unnamed
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    Refuse(p, "not a regular file");
    return;
  }
  if (!p.read_once) ++stats_.files_read;
  p.read_once = true;
  const std::uint64_t size = static_cast<std::uint64_t>(st.st_size);
  // Within this file's bound and what all files may hold together.
  const std::uint64_t room = kMaxTotalBytes - std::min(kMaxTotalBytes, bytes_held_);
  const std::uint64_t end = std::min({size, kMaxFileBytes, p.offset + room});
  // In chunks: a first read of a big file must not hold it whole.
  constexpr std::size_t kChunk = 1u << 20;
  std::string buf;
  while (p.offset < end && !p.done) {
    buf.resize(static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, end - p.offset)));
    const ssize_t got = pread(fd, buf.data(), buf.size(), static_cast<off_t>(p.offset));
    if (got <= 0) break;
    buf.resize(static_cast<std::size_t>(got));
    stats_.bytes_read += buf.size();
    const std::uint64_t bad_before = p.map.bad_lines();
    const std::size_t consumed = p.map.Add(buf);
    p.offset += consumed;
    bytes_held_ += consumed;
    stats_.bad_lines += p.map.bad_lines() - bad_before;
    if (p.map.bad_lines() >= 16 && p.map.bad_lines() > p.map.good_lines()) {
      Refuse(p, "not a perf map (" + std::to_string(p.map.bad_lines()) + " of " +
                    std::to_string(p.map.bad_lines() + p.map.good_lines()) + " lines are not START SIZE NAME)");
    } else if (consumed == 0) {
      if (buf.size() == kChunk) Refuse(p, "not a perf map (no line end in 1 MiB)");
      break;  // a line still being written
    }
  }
  close(fd);
  if (!p.done && end < size && p.offset + kChunk >= end) {
    ++stats_.over_limit;
    notices_.push_back("perf map " + p.path + " is larger than kiln-agent reads (" +
                       std::to_string(kMaxFileBytes >> 20) + " MiB a file, " + std::to_string(kMaxTotalBytes >> 20) +
                       " MiB all together): JIT code compiled after that is not named");
    p.done = true;
  }
}

std::optional<JitSymbol> PerfMaps::Lookup(std::uint32_t pid, std::uint64_t address) {
  Process& p = processes_[pid];
  if (std::optional<JitSymbol> s = p.map.Find(address)) return s;
  if (p.done || (p.read_at != std::chrono::steady_clock::time_point{} &&
                 std::chrono::steady_clock::now() - p.read_at < kRereadAfter))
    return std::nullopt;
  Read(pid, p);
  return p.map.Find(address);
}

void PerfMaps::Forget(std::uint32_t pid) {
  auto it = processes_.find(pid);
  if (it == processes_.end()) return;
  bytes_held_ -= std::min(bytes_held_, it->second.offset);
  processes_.erase(it);
}

std::vector<std::string> PerfMaps::TakeNotices() {
  std::vector<std::string> out;
  out.swap(notices_);
  return out;
}

std::size_t PerfMaps::MemoryBytes() const {
  std::size_t bytes = 0;
  for (const auto& [pid, p] : processes_) bytes += sizeof(p) + p.path.size() + p.map.MemoryBytes();
  return bytes;
}

}  // namespace kiln::agent
