#pragma once
// CPython processes for the BPF walker's Python frames (bpf/python_abi.h):
//   - when the unwinder loads a process, each interpreter file it maps
//     (python3.X, libpython3.X.so) is recognised by name and symbols
//     (_PyEval_EvalFrameDefault, _PyRuntime), its layout taken from the
//     version's table or its own _Py_DebugOffsets (python_layout.h), and
//     py_procs says where its evaluation loop is;
//   - its threads' PyThreadState addresses are found by walking the
//     interpreter's thread list in the process's memory (process_vm_readv)
//     and put in py_threads; a sample from a thread not there yet asks for
//     a new walk (a thread started late), at most every kRescanAfter;
//   - the frames BPF records (code object, instruction) are named here:
//     co_qualname (co_name before 3.11), co_filename and the line from the
//     line table, cached per process and checked against the object each
//     time (a code object freed and its memory reused must not keep the old
//     name);
//   - a Python it cannot read (an unknown version, a free-threaded build, a
//     _Py_DebugOffsets that does not hold up) is reported once by file,
//     version and reason; its samples keep their native frames.
//
// Main thread only.

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "process_tracker.h"
#include "profile_batch.h"
#include "python_layout.h"

namespace kiln::agent {

struct PythonMapFds {
  int procs = -1;    // HASH pid -> kiln_py_proc
  int threads = -1;  // HASH thread identity -> PyThreadState address
};

struct PythonStats {
  std::size_t processes = 0;      // now in py_procs
  std::size_t threads = 0;        // now in py_threads
  std::uint64_t thread_walks = 0; // thread lists read
  std::uint64_t frames_named = 0;       // Python frames named (resolutions)
  std::uint64_t frames_unreadable = 0;  // not a code object (or gone), never read before
  std::uint64_t frames_named_gone = 0;  // of frames_named, from an earlier read (PythonCode::gone)
  // "FILE (3.X): reason" -> processes refused for it.
  std::map<std::string, std::size_t> refused;
  // "3.X" -> processes read.
  std::map<std::string, std::size_t> versions;
};

// A str object in process `pid` as UTF-8; "" when it is not a compact str
// or longer than 4 KiB (no name is).
std::string ReadPythonString(std::uint32_t pid, const PythonLayout& layout, std::uint64_t address);

// What a code object in process `pid` says, or nullopt when the memory at
// `address` cannot be read or is not a code object of the interpreter whose
// PyCode_Type is at `code_type` (absolute). Line tables over 1 MiB are not
// read (the frame keeps its name, without a line). With `cached`, a read of
// the same object (the same type, name, file and line table pointers)
// returns it without reading the strings again, and so does a read that
// finds no code object there any more (marked `gone`): samples are named a
// moment after they are taken, when a process may have exited or be tearing
// down (its code objects freed, their memory reused), and what the address
// last held is what the sample saw. A new code object at the address reads
// with another fingerprint and gets its own name.
struct PythonCode {
  std::array<std::uint64_t, 4> fingerprint{};  // type, name, file, line table pointers
  std::string function, file, linetable;
  int first_line = 0;
  bool gone = false;  // returned from `cached`: no code object there now
};
std::optional<PythonCode> ReadPythonCode(std::uint32_t pid, const PythonLayout& layout, std::uint64_t code_type,
                                         std::uint64_t address, const PythonCode* cached = nullptr);

class PythonTracker {
 public:
  static constexpr auto kRescanAfter = std::chrono::milliseconds(250);

  PythonTracker(ProcessTracker& processes, PythonMapFds fds);

  // The unwinder (re)loaded the process: find its interpreter.
  void LoadProcess(ProcessInfo& process);
  // A sample reached the evaluation loop in a thread py_threads lacks.
  void ThreadUnknown(ProcessInfo& process);
  // The walker found the process's frame chain looping (damaged or hostile
  // memory): its Python frames are no longer read, and it is reported.
  void ChainLoops(ProcessInfo& process);
  void ForgetProcess(std::uint32_t pid);
  // Forgets processes that are gone (their exit event may have been lost).
  void Sweep();
  bool IsPython(std::uint32_t pid) const { return procs_.count(pid) != 0; }

  // A Python frame entry of a sample (bit 63 set), as a frame of type
  // kPython: function, file and line when the code object can be read.
  Frame NameFrame(std::uint32_t pid, std::uint64_t entry);

  const PythonStats& stats() const { return stats_; }
  // What was found in each interpreter file, once per file ("python3.13
  // (3.13): layout from _Py_DebugOffsets, eval loop 2384 bytes + cold part
  // 76 KB"), since the last call.
  std::vector<std::string> TakeNotices() { return std::exchange(notices_, {}); }

 private:
  // What one interpreter file gives (cached by its identity).
  struct Interpreter {
    bool ok = false;
    std::string refusal;  // when !ok
    PythonLayout layout;
    std::uint64_t eval = 0, eval_size = 0, cold = 0, cold_size = 0;  // ELF vaddrs
    std::uint64_t runtime = 0, code_type = 0;
  };
  struct Proc {
    const Interpreter* interp = nullptr;
    std::uint64_t bias = 0;  // of the interpreter file's mapping
    std::unordered_set<std::uint64_t> tids;  // thread identities in py_threads (see python_abi.h)
    std::chrono::steady_clock::time_point walked_at{};
    std::unordered_map<std::uint64_t, PythonCode> code;
  };
  static constexpr std::size_t kMaxCodePerProcess = 65536;

  const Interpreter& InterpreterFor(const std::string& key, const std::string& open_path,
                                    const std::string& name, const std::string& build_id);
  void WalkThreads(std::uint32_t pid, Proc& p);
  void Refuse(const std::string& what);

  ProcessTracker& processes_;
  PythonMapFds fds_;
  std::unordered_map<std::string, std::unique_ptr<Interpreter>> interpreters_;
  std::unordered_map<std::uint32_t, Proc> procs_;
  std::unordered_set<std::uint32_t> refused_pids_;  // not read again until they exec or exit
  PythonStats stats_;
  std::vector<std::string> notices_;
};

}  // namespace kiln::agent
