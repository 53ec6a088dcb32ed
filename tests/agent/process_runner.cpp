#include "process_runner.h"

#include "tests/child_process.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace kiln::agent::testing {

pid_t Spawn(const std::vector<std::string>& argv, const std::string& out_path, const std::string& err_path) {
  using kiln::testing::ChildOutput;
  return kiln::testing::SpawnChild(argv, out_path.empty() ? ChildOutput::Inherit() : ChildOutput::File(out_path),
                                   err_path.empty() ? ChildOutput::Inherit() : ChildOutput::File(err_path));
}

int WaitExit(pid_t pid) { return kiln::testing::WaitChild(pid); }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool WaitForText(const std::string& path, const std::string& needle, int timeout_ms) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < end) {
    if (ReadFile(path).find(needle) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

long long ValueAfter(const std::string& text, const std::string& key) {
  std::size_t at = text.find(key + "=");
  if (at == std::string::npos) return -1;
  return std::atoll(text.c_str() + at + key.size() + 1);
}

double DoubleAfter(const std::string& text, const std::string& key) {
  std::size_t at = text.find(key + "=");
  if (at == std::string::npos) return -1;
  return std::atof(text.c_str() + at + key.size() + 1);
}

std::string MakeTempDir(const std::string& prefix) {
  std::string templ = "/tmp/" + prefix + "XXXXXX";
  char* dir = mkdtemp(templ.data());
  return dir ? std::string(dir) : std::string("/tmp");
}

}  // namespace kiln::agent::testing
