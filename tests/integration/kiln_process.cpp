#include "tests/integration/kiln_process.h"

#include "tests/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace kiln::testing {
namespace {

// Starts kiln with stdout/stderr on pipes; returns the pid.
int Spawn(const std::vector<std::string>& args, int* out_fd, int* err_fd) {
  int out[2], err[2];
  if (pipe(out) != 0 || pipe(err) != 0) throw std::runtime_error("pipe failed");
  std::vector<std::string> argv{KilnBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  const int pid = SpawnChild(argv, ChildOutput::Fd(out[1]), ChildOutput::Fd(err[1]));
  close(out[1]);
  close(err[1]);
  *out_fd = out[0];
  *err_fd = err[0];
  return pid;
}

void ReadAll(int fd, std::string* into) {
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) into->append(buf, static_cast<size_t>(n));
}

}  // namespace

long ResidentMiB(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/statm");
  long size = 0, resident = 0;
  in >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE) / (1 << 20);
}

std::string KilnBinary() {
  // Made absolute once, so a test may change the current folder (to give
  // kiln relative paths) and still find the binary.
  static const std::string binary = [] {
    const char* dir = std::getenv("KILN_BINARY_DIR");
#ifdef __APPLE__
    const char* kPath = "/app/kiln.app/Contents/MacOS/kiln";  // MACOSX_BUNDLE (app/CMakeLists.txt)
#else
    const char* kPath = "/app/kiln";
#endif
    return std::filesystem::absolute(std::string(dir ? dir : ".") + kPath).string();
  }();
  return binary;
}

CommandResult RunKiln(const std::vector<std::string>& args) {
  int out_fd, err_fd;
  int pid = Spawn(args, &out_fd, &err_fd);
  CommandResult r;
  // Drain both pipes without deadlocking on a full one.
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0) {
    if (poll(fds, 2, 60'000) <= 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      char buf[65536];
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
      }
    }
  }
  r.exit_code = WaitChild(pid);
  return r;
}

HeadlessKiln::HeadlessKiln(const std::string& data_dir, const std::vector<std::string>& extra_args,
                           const std::string& listen) {
  int err_fd;
  std::vector<std::string> args{"--headless", "--listen", listen, "--data-dir", data_dir};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  pid_ = Spawn(args, &out_fd_, &err_fd);
  close(err_fd);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  const std::string marker = "listening on 127.0.0.1:";
  while (port_ == 0 && std::chrono::steady_clock::now() < deadline) {
    pollfd p{out_fd_, POLLIN, 0};
    if (poll(&p, 1, 1000) <= 0) continue;
    char buf[1024];
    ssize_t n = read(out_fd_, buf, sizeof buf);
    if (n <= 0) break;
    output_.append(buf, static_cast<size_t>(n));
    if (size_t at = output_.find(marker); at != std::string::npos) {
      port_ = std::atoi(output_.c_str() + at + marker.size());
    }
  }
  if (port_ == 0) {
    Stop(SIGKILL);
    throw std::runtime_error("kiln --headless did not report its port; output: " + output_);
  }
}

HeadlessKiln::~HeadlessKiln() {
  if (pid_ > 0) Stop(SIGKILL);
}

int HeadlessKiln::Stop(int signal) {
  if (pid_ <= 0) return -1;
  kill(pid_, signal);
  ReadAll(out_fd_, &output_);
  close(out_fd_);
  const int code = WaitChild(pid_);
  pid_ = -1;
  return code;
}

}  // namespace kiln::testing
