#include "e2e_checks.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <vector>

#include "process_runner.h"

namespace kiln::agent::testing {

int g_failures = 0;

void Check(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "  ok  " : "  FAIL", what.c_str());
  if (!ok) ++g_failures;
}

int Skip(const std::string& why) {
  std::printf("SKIP: %s\n", why.c_str());
  return 77;
}

int AgentPrerequisites() {
  if (geteuid() != 0) return Skip("needs root (BPF programs and perf events)");
  if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) return Skip("kernel has no BTF");
  return 0;
}

int Verdict(const std::string& dir) {
  if (g_failures == 0) {
    std::printf("PASS\n");
    std::filesystem::remove_all(dir);
    return 0;
  }
  std::printf("FAIL (%d failed checks); files kept in %s\n", g_failures, dir.c_str());
  return 1;
}

int AwaitAgentStart(int agent, const std::string& out_path, const std::string& err_path) {
  if (WaitForText(out_path, "sampling CPUs", 15000)) return 0;
  kill(agent, SIGKILL);
  WaitExit(agent);
  const std::string err = ReadFile(err_path);
  if (err.find("needs root") != std::string::npos || err.find("BTF") != std::string::npos ||
      err.find("refused") != std::string::npos || err.find("perf_event_open") != std::string::npos)
    return Skip("kiln-agent cannot sample here: " + err);
  std::printf("kiln-agent did not start:\n%s\n", err.c_str());
  return 1;
}

// `perf script` text -> "comm;root;...;leaf" -> count, for one pid.
std::map<std::string, std::int64_t> FoldPerfScript(const std::string& text, long long pid,
                                                   const std::string& comm_label, bool inline_lines) {
  std::map<std::string, std::int64_t> out;
  std::istringstream in(text);
  std::string line;
  bool in_sample = false, ours = false;
  std::vector<std::string> frames;
  std::string last_address;
  auto finish = [&] {
    if (in_sample && ours) {
      std::string folded = comm_label;
      for (auto it = frames.rbegin(); it != frames.rend(); ++it) folded += ";" + *it;
      out[folded]++;
    }
    in_sample = false;
    frames.clear();
    last_address.clear();
  };
  while (std::getline(in, line)) {
    if (line.empty()) {
      finish();
      continue;
    }
    if (line[0] != '\t' && line[0] != ' ') {
      finish();
      in_sample = true;
      std::size_t slash = line.find('/');
      std::size_t start = line.rfind(' ', slash);
      ours = slash != std::string::npos && std::atoll(line.c_str() + start + 1) == pid;
      continue;
    }
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    if (line[0] == ' ' && !in_sample) continue;
    // "\t    7f12 leaf_heavy (/path)": skip the address, keep the symbol.
    std::istringstream f(line);
    std::string address, symbol, dso;
    f >> address >> symbol;
    std::getline(f, dso);
    // perf prints a frame's inline expansion as extra lines with the same
    // address, innermost first, the real function last; the agent reports
    // real frames only, so keep one frame per address, named as the last.
    bool same_frame = inline_lines && address == last_address;
    last_address = address;
    if (symbol.find('+') != std::string::npos) symbol = symbol.substr(0, symbol.find('+'));
    if (dso.find("kernel.kallsyms") != std::string::npos) symbol += "_[k]";
    if (same_frame && !frames.empty())
      frames.back() = symbol;
    else
      frames.push_back(symbol);
  }
  finish();
  return out;
}

// "a;b;c 12" lines -> map.
std::map<std::string, std::int64_t> ParseFolded(const std::string& text) {
  std::map<std::string, std::int64_t> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    out[line.substr(0, space)] += std::atoll(line.c_str() + space + 1);
  }
  return out;
}

std::int64_t EventsWith(const std::map<std::string, std::int64_t>& folded, const std::string& prefix,
                        const std::string& needle) {
  std::int64_t n = 0;
  for (const auto& [stack, count] : folded)
    if (stack.rfind(prefix + ";", 0) == 0 && stack.find(needle) != std::string::npos) n += count;
  return n;
}

void PrintTop(const std::map<std::string, std::int64_t>& folded, const std::string& prefix, int limit) {
  std::vector<std::pair<std::int64_t, std::string>> rows;
  for (const auto& [s, n] : folded)
    if (s.rfind(prefix, 0) == 0) rows.push_back({n, s});
  std::sort(rows.rbegin(), rows.rend());
  for (int i = 0; i < limit && i < static_cast<int>(rows.size()); ++i)
    std::printf("      %6lld %s\n", static_cast<long long>(rows[static_cast<std::size_t>(i)].first),
                rows[static_cast<std::size_t>(i)].second.c_str());
}

std::vector<std::string> SplitFolded(const std::string& stack) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= stack.size()) {
    std::size_t semi = stack.find(';', at);
    if (semi == std::string::npos) semi = stack.size();
    out.push_back(stack.substr(at, semi - at));
    at = semi + 1;
  }
  return out;
}

std::string Percent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f%%", 100 * share);
  return buf;
}

int UserFrames(const std::string& stack) {
  int user = 0;
  std::size_t at = stack.find(';');
  while (at != std::string::npos) {
    std::size_t end = stack.find(';', at + 1);
    std::string frame = stack.substr(at + 1, end == std::string::npos ? std::string::npos : end - at - 1);
    if (!frame.ends_with("_[k]")) ++user;
    at = end;
  }
  return user;
}

StackDepth MeasureDepth(const std::map<std::string, std::int64_t>& folded, const std::string& prefix,
                        const std::string& root_frame) {
  StackDepth d;
  std::vector<std::pair<int, std::int64_t>> depths;  // depth -> samples
  std::int64_t reaching = 0;
  for (const auto& [stack, n] : folded) {
    if (stack.rfind(prefix + ";", 0) != 0) continue;
    int user = UserFrames(stack);
    if (user == 0) continue;  // kernel-only samples have no user stack to judge
    d.samples += n;
    depths.push_back({user, n});
    if ((stack + ";").find(";" + root_frame + ";") != std::string::npos) reaching += n;
  }
  if (d.samples == 0) return d;
  d.reaching_root = double(reaching) / double(d.samples);
  std::sort(depths.begin(), depths.end());
  std::int64_t seen = 0;
  for (auto [depth, n] : depths) {
    seen += n;
    if (seen * 2 >= d.samples) {
      d.median_user_depth = depth;
      break;
    }
  }
  return d;
}

}  // namespace kiln::agent::testing
