#include "ingest/symbols/symbols_test_util.h"

#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace kiln::symbols::testing {

std::string TestBin(const std::string& name) { return std::string(KILN_SYMBOLS_TESTBIN) + "/" + name; }

CommandResult RunCommand(const std::string& command) {
  CommandResult r;
  FILE* p = popen(command.c_str(), "r");
  if (!p) return r;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.output.append(buf, n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TempDir::TempDir() {
  char tmpl[] = "/tmp/kiln-symbols-XXXXXX";
  if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void CopyFileTo(const std::string& from, const std::string& to) {
  std::filesystem::create_directories(std::filesystem::path(to).parent_path());
  std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing);
}

std::string ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFileBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::vector<FunctionRange> NmFunctions(const std::string& path) {
  // "0000000000001139 0000000000000021 T name with spaces(int)"
  auto r = RunCommand(std::string(KILN_NM) + " -S -C --defined-only '" + path + "'");
  std::vector<FunctionRange> out;
  std::istringstream lines(r.output);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream f(line);
    std::string addr, size, type;
    if (!(f >> addr >> size >> type)) continue;
    if (type != "T" && type != "t" && type != "W" && type != "w" && type != "i") continue;
    std::string name;
    std::getline(f, name);
    if (!name.empty() && name[0] == ' ') name.erase(0, 1);
    FunctionRange fr{name, std::stoull(addr, nullptr, 16), std::stoull(size, nullptr, 16)};
    if (fr.size > 0) out.push_back(fr);
  }
  return out;
}

std::vector<uint64_t> EveryAddressIn(const std::vector<FunctionRange>& functions) {
  std::vector<uint64_t> out;
  for (const auto& f : functions)
    for (uint64_t a = f.start; a < f.start + f.size; ++a) out.push_back(a);
  // Aliases (a C1/C2 constructor pair, weak and strong names) share bytes.
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string FormatChain(const std::vector<storage::SymbolizedFrame>& chain) {
  std::string out;
  if (chain.empty()) return "?? @ ??:?\n";
  for (const auto& f : chain) {
    out += f.function.empty() ? "??" : std::string(f.function);
    out += " @ ";
    out += f.file.empty() ? "??" : std::string(f.file);
    out += ":";
    out += f.line == 0 ? "?" : std::to_string(f.line);
    out += "\n";
  }
  return out;
}

OracleComparison CompareWithAddr2line(const std::string& oracle_file, const storage::SymbolTable& table,
                                      const std::vector<uint64_t>& addresses,
                                      const std::map<std::string, std::string>& renames) {
  OracleComparison cmp;
  char tmpl[] = "/tmp/kiln-addr2line-XXXXXX";
  int fd = mkstemp(tmpl);
  if (fd < 0) throw std::runtime_error("mkstemp failed");
  close(fd);
  {
    std::ofstream list(tmpl);
    for (uint64_t a : addresses) list << std::hex << "0x" << a << "\n";
  }
  auto r = RunCommand(std::string(KILN_ADDR2LINE) + " -a -f -i -C -e '" + oracle_file + "' < " + tmpl);
  std::remove(tmpl);

  // Parse: "0x<address>" then pairs of lines (function, file:line).
  std::map<uint64_t, std::string> oracle;
  std::istringstream lines(r.output);
  std::string line, function;
  uint64_t current = 0;
  bool have_function = false;
  // addr2line appends " (discriminator N)" to a line number; a SymbolTable
  // keeps no discriminators (they only tell apart basic blocks on one line),
  // so the suffix is removed and counted rather than compared.
  static const std::regex kDiscriminator(R"( \(discriminator [0-9]+\)$)");
  while (std::getline(lines, line)) {
    if (line.rfind("0x", 0) == 0 && !have_function) {
      current = std::stoull(line, nullptr, 16);
      oracle[current];
      continue;
    }
    if (!have_function) {
      function = line;
      have_function = true;
      continue;
    }
    std::string where = line;
    if (std::regex_search(where, kDiscriminator)) {
      where = std::regex_replace(where, kDiscriminator, "");
      ++cmp.discriminators;
    }
    oracle[current] += function + " @ " + where + "\n";
    have_function = false;
  }

  std::set<std::string> kinds;
  for (uint64_t a : addresses) {
    std::vector<storage::SymbolizedFrame> chain;
    table.Lookup(a, &chain);
    std::string ours = FormatChain(chain);
    const std::string& theirs = oracle[a];
    ++cmp.compared;
    if (chain.size() > 1) ++cmp.inline_chains;
    cmp.max_depth = std::max(cmp.max_depth, chain.size());
    static const std::regex kSttFile(R"(^(.*) @ ([^/@]+):\?\n$)");
    std::smatch m;
    if (ours != theirs && chain.size() == 1 && chain[0].file.empty() && chain[0].line == 0 &&
        std::regex_match(theirs, m, kSttFile) && m[1].str() == std::string(chain[0].function)) {
      ++cmp.stt_file_names;
      cmp.stt_files.insert(m[2].str());
      continue;
    }
    if (ours != theirs && !chain.empty() && !renames.empty()) {
      // Frame by frame: equal, or our name renamed equals theirs.
      std::vector<storage::SymbolizedFrame> renamed = chain;
      for (auto& f : renamed) {
        auto it = renames.find(std::string(f.function));
        if (it != renames.end()) f.function = it->second;
      }
      std::string r = FormatChain(renamed);
      bool same = true;
      std::istringstream a(ours), b(r), c(theirs);
      std::string la, lb, lc;
      while (std::getline(c, lc)) {
        if (!std::getline(a, la) || !std::getline(b, lb) || (lc != la && lc != lb)) same = false;
      }
      if (std::getline(a, la)) same = false;
      std::smatch sm;
      bool stt = renamed.size() == 1 && renamed[0].file.empty() && renamed[0].line == 0 &&
                 std::regex_match(theirs, sm, kSttFile) && sm[1].str() == std::string(renamed[0].function);
      if (same || stt) {
        ++cmp.renamed;
        continue;
      }
    }
    if (ours != theirs) {
      ++cmp.mismatches;
      // One example per kind of difference (first lines), up to 12 kinds.
      std::string kind = ours.substr(0, ours.find('\n')) + " | " + theirs.substr(0, theirs.find('\n'));
      if (kinds.size() < 12 && kinds.insert(kind).second) {
        std::ostringstream s;
        s << "0x" << std::hex << a << ":\n  ours:\n" << ours << "  addr2line:\n" << theirs;
        cmp.report += s.str();
      }
    }
  }
  return cmp;
}

}  // namespace kiln::symbols::testing
