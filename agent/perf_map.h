#pragma once
// Names of JIT-compiled code from perf maps: /tmp/perf-PID.map, one line per
// code object, "START SIZE NAME" (hex, hex, the rest of the line), appended
// as the runtime compiles: Node (--perf-basic-prof), Python 3.12+ (-X perf),
// a JVM (jcmd PID Compiler.perfmap), .NET (DOTNET_PerfMapEnabled=1).
//
// The file is the process's own: it is read through /proc/PID/root (a
// container's /tmp) under the pid the process has in its own namespace
// (the last NSpid of /proc/PID/status). It is read from where the last read
// stopped, when an address in anonymous code is not found in it and
// kRereadAfter has passed since that read, up to kMaxFileBytes (a
// long-running Node with --perf-basic-prof never stops appending) and
// kMaxTotalBytes for all processes together: code compiled past the bound
// stays unnamed, said once. A file that is not a perf map (most lines
// unreadable), not a regular file, or unreadable is refused for that process
// with the reason, once; bad lines in a good file are counted and skipped.
//
// Later lines win where ranges overlap: runtimes reuse freed code space.
//
// Main thread only.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kiln::agent {

enum class JitRuntime : std::uint8_t { kOther, kV8, kPython, kJvm, kDotnet };

// One code object's name, split into a frame's parts.
struct JitSymbol {
  std::string function;  // without the runtime's prefix and tier mark
  std::string file;      // the source file where the name gives one, else ""
  std::int64_t line = 0;
  JitRuntime runtime = JitRuntime::kOther;
};

// "JS:*leafWork /app/x.js:2:18" -> {leafWork, /app/x.js, 2, V8};
// "py::handler:/app/h.py" -> {handler, /app/h.py, 0, Python};
// "long app.Chain.leaf(long)" -> {app.Chain.leaf, JVM};
// "void [App] App.Chain::Leaf(int64)[Optimized]" -> {App.Chain::Leaf, .NET};
// anything else (V8 builtins, the JVM's interpreter and stubs) keeps its
// name whole. Pure.
JitSymbol ParseJitName(std::string_view name);

// One process's perf map as read so far: 24 bytes a code object plus its
// name's bytes.
class PerfMap {
 public:
  // Adds the complete lines of `text`; returns the bytes they took (up to
  // and with the last newline): the rest is a line still being written.
  std::size_t Add(std::string_view text);
  // The code object at `address`, or nothing.
  std::optional<JitSymbol> Find(std::uint64_t address);
  std::size_t ranges() {
    Normalize();
    return ranges_.size();
  }
  std::uint64_t good_lines() const { return good_lines_; }
  std::uint64_t bad_lines() const { return bad_lines_; }
  std::size_t MemoryBytes() const;

 private:
  struct Range {
    std::uint64_t start, end;
    std::uint32_t name;  // offset in names_ (each name ends in '\n')
    std::uint32_t seq;   // line number: the later line wins an overlap
  };
  // Folds pending_ into ranges_ (sorted, not overlapping).
  void Normalize();
  std::vector<Range> ranges_;
  std::vector<Range> pending_;  // added since the last Normalize, in file order
  std::string names_;
  std::uint32_t next_seq_ = 0;
  std::uint64_t good_lines_ = 0, bad_lines_ = 0;
};

struct PerfMapStats {
  std::uint64_t files_read = 0;  // processes whose perf map was found
  std::uint64_t bytes_read = 0;
  std::uint64_t bad_lines = 0;
  std::uint64_t refused = 0;     // files refused (not a perf map, not a regular file, unreadable)
  std::uint64_t over_limit = 0;  // files read up to kMaxFileBytes and no further
};

class PerfMaps {
 public:
  // A line costs its bytes and 24 more in memory: 8 MiB of Node's lines
  // (150,000 code objects; a large application's startup writes 3 MiB) is
  // about 11 MB, 16 MiB of them about 23 MB of the agent's 60 MB budget.
  static constexpr std::uint64_t kMaxFileBytes = 8ull << 20;
  static constexpr std::uint64_t kMaxTotalBytes = 16ull << 20;
  static constexpr auto kRereadAfter = std::chrono::milliseconds(100);

  // `proc_root` is "/proc" except in tests.
  explicit PerfMaps(std::string proc_root = "/proc") : proc_root_(std::move(proc_root)) {}

  // The JIT code at `address` of process `pid`, or nullptr (no perf map,
  // refused, or not in it).
  std::optional<JitSymbol> Lookup(std::uint32_t pid, std::uint64_t address);
  // The process exec'd or exited: its map is stale.
  void Forget(std::uint32_t pid);
  // What was refused or cut since the last call, one line each, for the
  // agent's report (each file once).
  std::vector<std::string> TakeNotices();
  const PerfMapStats& stats() const { return stats_; }
  std::size_t MemoryBytes() const;

 private:
  struct Process {
    std::string path;  // "" until the pid in its namespace is known
    std::uint64_t offset = 0;  // bytes consumed so far
    std::chrono::steady_clock::time_point read_at{};
    bool read_once = false;
    bool done = false;  // refused or over the bound: no more reads
    PerfMap map;
  };
  void Read(std::uint32_t pid, Process& p);
  void Refuse(Process& p, const std::string& why);

  std::string proc_root_;
  std::unordered_map<std::uint32_t, Process> processes_;
  std::vector<std::string> notices_;
  std::uint64_t bytes_held_ = 0;  // file bytes the maps of live processes were read from
  PerfMapStats stats_;
};

// The pid a process has in its innermost pid namespace: the last field of
// "NSpid:" in /proc/PID/status text; 0 when absent.
std::uint32_t InnermostPid(std::string_view status_text);

}  // namespace kiln::agent
