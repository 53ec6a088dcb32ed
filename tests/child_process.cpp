#include "tests/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#ifdef __linux__
#include <sys/prctl.h>
#include <sys/syscall.h>
#endif

namespace kiln::testing {
namespace {

// In the child, between fork and exec: only async-signal-safe calls.
void Redirect(const ChildOutput& to, int target) {
  if (to.fd >= 0) {
    dup2(to.fd, target);
  } else if (!to.path.empty()) {
    const int fd = open(to.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) _exit(126);
    dup2(fd, target);
    if (fd != target) close(fd);
  }
}

void CloseFrom(int first) {
#if defined(__linux__) && defined(SYS_close_range)
  if (syscall(SYS_close_range, first, ~0U, 0) == 0) return;
#endif
  const long max = sysconf(_SC_OPEN_MAX);
  for (int fd = first; fd < (max > 0 ? max : 1024); ++fd) close(fd);
}

}  // namespace

pid_t SpawnChild(const std::vector<std::string>& argv, const ChildOutput& out, const ChildOutput& err) {
  if (argv.empty()) throw std::runtime_error("SpawnChild: empty argv");
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // What the test printed so far comes before what the child prints on a
  // shared stream.
  std::fflush(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed for " + argv[0]);
  if (pid > 0) return pid;
#ifdef __linux__
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(125);  // the test died before prctl took effect
#else
  (void)parent;
#endif
  const int null_in = open("/dev/null", O_RDONLY);
  if (null_in >= 0 && null_in != 0) {
    dup2(null_in, 0);
    close(null_in);
  }
  Redirect(out, 1);
  Redirect(err, 2);
  CloseFrom(3);
  execvp(args[0], args.data());
  _exit(127);
}

int WaitChild(pid_t pid) {
  int status = 0;
  pid_t got;
  do {
    got = waitpid(pid, &status, 0);
  } while (got < 0 && errno == EINTR);
  if (got != pid) return -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

void KillChild(pid_t pid) {
  if (pid <= 0) return;
  kill(pid, SIGKILL);
  WaitChild(pid);
}

int ScopedChild::Stop(int signal) {
  if (pid_ <= 0) return -1;
  kill(pid_, signal);
  const int code = WaitChild(pid_);
  pid_ = -1;
  return code;
}

std::string FindOnPath(const std::string& name) {
  const char* env = std::getenv("PATH");
  const std::string path = env != nullptr ? env : "/usr/bin:/bin";
  for (size_t start = 0; start <= path.size();) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    const std::string dir = path.substr(start, end - start);
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

}  // namespace kiln::testing
