// The one way a test starts a helper process (kiln, kiln-agent, perf,
// workloads, Xvfb, debuginfod). Test-only; call from the thread that runs
// the test (doctest's main thread).
//
// Why one place: a helper must never outlive its test or hold ctest's pipes.
// ctest waits for every writer of a test's stdout to close it, so a leaked
// Xvfb that inherited the pipe once hung a run for its whole timeout. Here
// every child
//   - gets stdin from /dev/null and only the descriptors it is given (all
//     others are closed before exec, so no pipe of the test leaks into it);
//   - is killed (SIGKILL) when the test process dies, however it dies:
//     exit(), _Exit(77), a failed REQUIRE, a crash or ctest's timeout kill
//     (Linux PR_SET_PDEATHSIG; the signal follows the death of the thread
//     that forked, hence "the test's thread").
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace kiln::testing {

// Where a child's stdout or stderr goes.
struct ChildOutput {
  static ChildOutput Inherit() { return {}; }                   // the test's own stream
  static ChildOutput File(std::string path) { return {std::move(path), -1}; }  // truncated
  static ChildOutput Null() { return {"/dev/null", -1}; }
  static ChildOutput Fd(int fd) { return {"", fd}; }             // e.g. a pipe's write end
  std::string path;                                              // "" and fd < 0: inherit
  int fd = -1;
};

// fork + execvp(argv[0]) with the rules above. Returns the pid (the
// caller waits for it: WaitChild, or kill + WaitChild). Throws
// std::runtime_error when fork fails; an exec failure is exit code 127.
pid_t SpawnChild(const std::vector<std::string>& argv, const ChildOutput& out = ChildOutput::Inherit(),
                 const ChildOutput& err = ChildOutput::Inherit());

// Waits for `pid`; returns its exit code, 128 + signal when killed, -1 on error.
int WaitChild(pid_t pid);

// Where execvp would find `name` on PATH (an empty entry is the current
// directory; no PATH means /usr/bin:/bin), or "" when it is not there:
// what a test checks before it runs a tool (go, Xvfb, dbus-daemon).
std::string FindOnPath(const std::string& name);

// SIGKILL and wait; for destructors. Does nothing for pid <= 0.
void KillChild(pid_t pid);

// A child killed (SIGKILL) and reaped at scope exit, so a failed REQUIRE
// between start and stop leaves nothing running for the next test case.
class ScopedChild {
 public:
  explicit ScopedChild(pid_t pid) : pid_(pid) {}
  ~ScopedChild() { KillChild(pid_); }
  ScopedChild(const ScopedChild&) = delete;
  ScopedChild& operator=(const ScopedChild&) = delete;
  pid_t pid() const { return pid_; }
  // Sends `signal`, waits, returns WaitChild's code; the child is gone after.
  int Stop(int signal);

 private:
  pid_t pid_;
};

}  // namespace kiln::testing
