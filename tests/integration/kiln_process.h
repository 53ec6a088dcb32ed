// Runs the real `kiln` binary as a child process for integration tests:
// start it headless on a loopback port, stop it with a signal or kill -9,
// and run one-shot commands (export, stats) capturing their output.
#pragma once

#include <string>
#include <vector>

#include "tests/temp_dir.h"

namespace kiln::testing {

// Path of the built kiln binary (from KILN_BINARY_DIR, set by ctest).
std::string KilnBinary();

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};
// Runs kiln with `args` to completion.
CommandResult RunKiln(const std::vector<std::string>& args);

// Resident memory of process `pid` in MiB (0 once it is gone).
long ResidentMiB(int pid);

class HeadlessKiln {
 public:
  // Starts `kiln --headless --listen LISTEN --data-dir DIR` and waits
  // until it prints the port it listens on (LISTEN: 127.0.0.1, any port
  // unless given).
  explicit HeadlessKiln(const std::string& data_dir, const std::vector<std::string>& extra_args = {},
                        const std::string& listen = "127.0.0.1:0");
  ~HeadlessKiln();  // kill -9 if still running
  int port() const { return port_; }
  int pid() const { return pid_; }
  std::string target() const { return "127.0.0.1:" + std::to_string(port_); }
  // Sends `signal` and waits; returns the exit code (or 128+signal).
  int Stop(int signal);
  // Everything it printed on stdout so far (after Stop: all of it).
  const std::string& output() const { return output_; }

 private:
  int pid_ = -1;
  int out_fd_ = -1;
  int port_ = 0;
  std::string output_;
};

}  // namespace kiln::testing
