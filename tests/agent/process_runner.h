#pragma once
// Starting and stopping the programs the agent tests run (kiln-agent, perf,
// workloads, kiln) with stdout and stderr going to files. Test-only.

#include <sys/types.h>

#include <string>
#include <vector>

namespace kiln::agent::testing {

// tests/child_process.h's SpawnChild (dies with the test); stdout to
// `out_path`, stderr to `err_path` ("" = inherit).
pid_t Spawn(const std::vector<std::string>& argv, const std::string& out_path,
            const std::string& err_path = "");
// Waits for exit; returns the exit code, or 128+signal.
int WaitExit(pid_t pid);
std::string ReadFile(const std::string& path);
// Polls `path` until it contains `needle` or `timeout_ms` passes.
bool WaitForText(const std::string& path, const std::string& needle, int timeout_ms);
// The integer after "key=" in `text`, or -1.
long long ValueAfter(const std::string& text, const std::string& key);
double DoubleAfter(const std::string& text, const std::string& key);
std::string MakeTempDir(const std::string& prefix);

}  // namespace kiln::agent::testing
