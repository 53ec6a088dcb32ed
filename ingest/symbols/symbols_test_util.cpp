#include "ingest/symbols/symbols_test_util.h"

#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
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

Elf64_Shdr* Shdr(std::string& bytes, size_t i) {
  auto* ehdr = reinterpret_cast<Elf64_Ehdr*>(bytes.data());
  return reinterpret_cast<Elf64_Shdr*>(bytes.data() + ehdr->e_shoff + i * sizeof(Elf64_Shdr));
}

size_t SectionIndex(std::string& bytes, const char* name) {
  auto* ehdr = reinterpret_cast<Elf64_Ehdr*>(bytes.data());
  const Elf64_Shdr* strtab = Shdr(bytes, ehdr->e_shstrndx);
  for (size_t i = 1; i < ehdr->e_shnum; ++i)
    if (std::strcmp(bytes.data() + strtab->sh_offset + Shdr(bytes, i)->sh_name, name) == 0) return i;
  return 0;
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
                                      const std::map<std::string, std::string>& renames,
                                      const std::vector<FunctionRange>* symbols) {
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
    if (ours != theirs && !chain.empty() && (!renames.empty() || symbols)) {
      // Frame by frame: equal, or our name renamed equals theirs, or our
      // name is a bare DWARF name and theirs is the ELF symbol's here.
      std::vector<storage::SymbolizedFrame> renamed = chain;
      for (auto& f : renamed) {
        auto it = renames.find(std::string(f.function));
        if (it != renames.end()) f.function = it->second;
      }
      std::set<std::string> by_symbol;  // aliases: several names at one address
      if (symbols) {
        for (const auto& f : *symbols)
          if (a >= f.start && a < f.start + f.size) by_symbol.insert(f.name);
      }
      std::string r = FormatChain(renamed);
      bool same = true;
      std::istringstream sa(ours), sb(r), sc(theirs);
      std::string la, lb, lc;
      while (std::getline(sc, lc)) {
        if (!std::getline(sa, la) || !std::getline(sb, lb)) {
          same = false;
          break;
        }
        if (lc == la || lc == lb) continue;
        // "name @ file:line": same place, bare name vs the symbol's name.
        size_t pa = la.find(" @ "), pc = lc.find(" @ ");
        // A bare DW_AT_name has no parameter list ("ReadOk", "operator()").
        std::string name = pa == std::string::npos ? "" : la.substr(0, pa);
        bool bare = !name.empty() && (name.find('(') == std::string::npos || name.rfind("operator", 0) == 0);
        if (!(bare && pc != std::string::npos && by_symbol.count(lc.substr(0, pc)) &&
              la.substr(pa) == lc.substr(pc)))
          same = false;
      }
      if (std::getline(sa, la)) same = false;
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
      cmp.mismatched.emplace_back(a, theirs);
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

bool HaveLlvmSymbolizer() { return std::string(KILN_LLVM_SYMBOLIZER).size() > 0; }

std::map<uint64_t, std::vector<std::pair<std::string, std::string>>> LlvmSymbolize(
    const std::string& file, const std::vector<uint64_t>& addresses) {
  std::map<uint64_t, std::vector<std::pair<std::string, std::string>>> out;
  if (!HaveLlvmSymbolizer() || addresses.empty()) return out;
  char tmpl[] = "/tmp/kiln-llvm-symbolizer-XXXXXX";
  int fd = mkstemp(tmpl);
  if (fd < 0) return out;
  close(fd);
  {
    std::ofstream list(tmpl);
    for (uint64_t a : addresses) list << std::hex << "0x" << a << "\n";
  }
  // Default (LLVM) style: per address, "name" and "file:line:column" lines
  // per frame, then an empty line; addresses come back in order.
  auto r = RunCommand(std::string(KILN_LLVM_SYMBOLIZER) + " --obj='" + file +
                      "' --inlining --functions=linkage --demangle < " + tmpl);
  std::remove(tmpl);
  std::istringstream lines(r.output);
  std::string name, where;
  size_t i = 0;
  while (i < addresses.size() && std::getline(lines, name)) {
    if (name.empty()) {
      ++i;
      continue;
    }
    if (!std::getline(lines, where)) break;
    size_t col = where.rfind(':');
    if (col != std::string::npos) where.resize(col);  // drop the column
    out[addresses[i]].emplace_back(name, where);
  }
  return out;
}

}  // namespace kiln::symbols::testing
