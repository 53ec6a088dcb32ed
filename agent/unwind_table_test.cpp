// Unwind tables checked against an independent CFI interpreter: binutils'
// `readelf --debug-dump=frames-interp` prints, for every FDE, the rule rows
// it computes (CFA, saved registers). Every such row must be what our table
// says at that address.
#include "unwind_table.h"
#include "unwind_loader.h"
#include "tests/integration/elf_oracle.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

using namespace kiln::agent;
using kiln::testing::Shell;

namespace {

std::string Hex(std::uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

struct OracleRow {
  std::uint64_t loc;
  std::string cfa, rbp, ra;
};
struct OracleFde {
  std::uint64_t lo, hi;
  std::vector<OracleRow> rows;
};

// Parses readelf -wF. An FDE without instructions prints no rows: its CIE's
// initial row applies from the FDE's start.
std::vector<OracleFde> ReadelfFrames(const std::string& path) {
  std::istringstream in(Shell("readelf --debug-dump=frames-interp '" + path + "' 2>/dev/null"));
  std::vector<OracleFde> fdes;
  std::map<std::string, OracleRow> cie_initial;
  std::string line, current_cie, fde_cie;
  std::vector<std::string> columns;
  bool in_fde = false, in_cie = false;
  auto row_from = [&](const std::string& text) {
    // Cells are words, except "r10 (r10)" (held in another register).
    std::istringstream ls(text);
    std::vector<std::string> cells;
    for (std::string w; ls >> w;) {
      if (w[0] == '(' && !cells.empty())
        cells.back() += " " + w;
      else
        cells.push_back(w);
    }
    OracleRow r;
    r.loc = std::stoull(cells.at(0), nullptr, 16);
    r.cfa = cells.at(1);
    for (std::size_t c = 2; c < columns.size() && c < cells.size(); ++c) {
      if (columns[c] == "rbp") r.rbp = cells[c];
      if (columns[c] == "ra") r.ra = cells[c];
    }
    return r;
  };
  while (std::getline(in, line)) {
    if (line.find(" CIE ") != std::string::npos) {
      current_cie = line.substr(0, 8);
      in_cie = true;
      in_fde = false;
      continue;
    }
    if (auto at = line.find(" FDE cie="); at != std::string::npos) {
      auto pc = line.find("pc=");
      OracleFde f;
      f.lo = std::stoull(line.substr(pc + 3, 16), nullptr, 16);
      f.hi = std::stoull(line.substr(pc + 21, 16), nullptr, 16);
      fde_cie = line.substr(at + 9, 8);
      fdes.push_back(f);
      in_fde = true;
      in_cie = false;
      columns.clear();
      continue;
    }
    if (line.rfind("   LOC", 0) == 0) {
      std::istringstream ls(line);
      columns.clear();
      for (std::string w; ls >> w;) columns.push_back(w);
      continue;
    }
    bool row_line = line.size() > 17 && line[16] == ' ' &&
                    std::all_of(line.begin(), line.begin() + 16, [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
    if (row_line) {
      if (in_cie) cie_initial[current_cie] = row_from(line);
      if (in_fde) fdes.back().rows.push_back(row_from(line));
    }
    if (line.empty() && in_fde && !fdes.empty() && fdes.back().rows.empty() && cie_initial.count(fde_cie)) {
      OracleRow r = cie_initial[fde_cie];
      r.loc = fdes.back().lo;
      fdes.back().rows.push_back(r);
    }
  }
  return fdes;
}

UnwindTable Build(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE_MESSAGE(fd >= 0, path);
  auto t = BuildUnwindTable(fd);
  close(fd);
  REQUIRE_MESSAGE(t.ok(), path << ": " << t.error());
  return std::move(t).value();
}

// What readelf's columns say, in our rule words. Returns "" when it matches.
std::string Compare(const OracleRow& want, const UnwindRow& got) {
  std::ostringstream why;
  bool outermost = want.ra == "u";
  if (outermost) {
    if (KILN_CFA_RULE_OF(&got) != KILN_CFA_OUTERMOST) why << "ra undefined but rule " << int(KILN_CFA_RULE_OF(&got));
    return why.str();
  }
  bool ra_on_stack = want.ra == "c-8";
  if (!ra_on_stack && want.cfa != "exp") {
    // The return address held in another register: not something we walk.
    if (KILN_CFA_RULE_OF(&got) != KILN_CFA_UNSUPPORTED) why << "ra " << want.ra << " must be unsupported";
  } else if (want.cfa.rfind("rsp+", 0) == 0 || want.cfa.rfind("rbp+", 0) == 0) {
    int want_rule = want.cfa[1] == 's' ? KILN_CFA_SP : KILN_CFA_FP;
    int off = std::stoi(want.cfa.substr(4));
    if (KILN_CFA_RULE_OF(&got) != want_rule || got.cfa_offset * 8 != off) why << "cfa " << want.cfa;
    if (want.ra != "c-8") why << " ra " << want.ra << " must be unsupported";
    if (want.rbp.empty() || want.rbp == "u" || want.rbp == "s") {
      if (KILN_FP_RULE_OF(&got) != KILN_REG_SAME) why << " rbp same";
    } else if (want.rbp.rfind("c-", 0) == 0 || want.rbp.rfind("c+", 0) == 0) {
      if (KILN_FP_RULE_OF(&got) != KILN_REG_AT_CFA || got.fp_offset * 8 != std::stoi(want.rbp.substr(1)))
        why << " rbp " << want.rbp;
    } else if (KILN_FP_RULE_OF(&got) != KILN_REG_UNKNOWN) {
      why << " rbp " << want.rbp << " must be unknown";
    }
  } else if (want.cfa == "exp") {
    if (KILN_CFA_RULE_OF(&got) != KILN_CFA_PLT && KILN_CFA_RULE_OF(&got) != KILN_CFA_SP_DEREF && KILN_CFA_RULE_OF(&got) != KILN_CFA_UNSUPPORTED)
      why << "cfa exp";
  } else if (KILN_CFA_RULE_OF(&got) != KILN_CFA_UNSUPPORTED) {
    why << "cfa " << want.cfa << " (another register) must be unsupported";
  }
  return why.str();
}

void CheckAgainstReadelf(const std::string& path, std::size_t min_fdes = 10) {
  CAPTURE(path);
  std::vector<OracleFde> fdes = ReadelfFrames(path);
  REQUIRE_MESSAGE(fdes.size() >= min_fdes, "readelf printed no FDEs for " << path << " (binutils installed?)");
  UnwindTable table = Build(path);
  std::size_t checked = 0, mismatches = 0;
  for (const OracleFde& f : fdes) {
    for (std::size_t i = 0; i < f.rows.size(); ++i) {
      const OracleRow& want = f.rows[i];
      std::uint64_t end = i + 1 < f.rows.size() ? f.rows[i + 1].loc : f.hi;
      // The first and the last byte the row covers.
      for (std::uint64_t at : {want.loc, end - 1}) {
        const UnwindRow* got = FindUnwindRow(table.rows, at);
        REQUIRE_MESSAGE(got != nullptr, Hex(at) << " is before our first row");
        std::string why = Compare(want, *got);
        ++checked;
        if (!why.empty() && ++mismatches <= 10)
          FAIL_CHECK(Hex(at) << ": readelf says " << want.cfa << " rbp=" << want.rbp
                              << " ra=" << want.ra << ", we say " << FormatUnwindRow(*got) << " (" << why << ")");
      }
    }
  }
  CHECK(mismatches == 0);
  MESSAGE(path << ": " << checked << " row boundaries agree with readelf, " << table.rows.size() << " rows");
  // Outside every FDE there is no CFI.
  std::uint64_t last = 0;
  for (const OracleFde& f : fdes) last = std::max(last, f.hi);
  const UnwindRow* past = FindUnwindRow(table.rows, last + 0x1000);
  REQUIRE(past != nullptr);
  CHECK(KILN_CFA_RULE_OF(past) == KILN_CFA_NONE);
}

// The path of a library this test has mapped ("/libc.so.6").
std::string MappedLibraryPath(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    auto slash = line.find('/');
    if (slash != std::string::npos && line.find(name) != std::string::npos) return line.substr(slash);
  }
  return "";
}

std::string LibcPath() { return MappedLibraryPath("/libc.so.6"); }

std::string CopyOf(const std::string& path) {
  char tmpl[] = "/tmp/kiln-unwind-XXXXXX";
  int fd = mkstemp(tmpl);
  REQUIRE(fd >= 0);
  close(fd);
  std::ifstream in(path, std::ios::binary);
  std::ofstream out(tmpl, std::ios::binary);
  out << in.rdbuf();
  return tmpl;
}

}  // namespace

TEST_CASE("unwind tables agree with readelf's CFI interpreter row by row") {
  CheckAgainstReadelf(LibcPath());
  CheckAgainstReadelf(KILN_NOFP_WORKLOAD_PATH);
  CheckAgainstReadelf(KILN_NOFP_LIBRARY_PATH);
}

TEST_CASE("special rows: lazy PLT, glibc's signal trampoline, _start") {
  UnwindTable libc = Build(LibcPath());
  std::size_t plt = 0, signal = 0;
  for (const UnwindRow& r : libc.rows) {
    plt += KILN_CFA_RULE_OF(&r) == KILN_CFA_PLT;
    if (KILN_CFA_RULE_OF(&r) == KILN_CFA_SP_DEREF) {
      ++signal;
      // struct ucontext on x86-64: uc_mcontext at 40, rbp/rsp/rip at gregs
      // 10, 15, 16 (rip right after rsp, which the row format relies on).
      CHECK(r.cfa_offset * 8 == 160);
      CHECK(KILN_FP_RULE_OF(&r) == KILN_REG_AT_SP);
      CHECK(r.fp_offset * 8 == 120);
    }
  }
  CHECK(plt >= 1);
  CHECK(signal == 1);
  UnwindTable exe = Build(KILN_NOFP_WORKLOAD_PATH);
  CHECK(exe.stats.outermost_rows >= 1);  // _start
}

TEST_CASE(".debug_frame alone is enough (code built without unwind tables)") {
  UnwindTable t = Build(KILN_DEBUG_FRAME_LIBRARY_PATH);
  CHECK(t.stats.rows_from_debug_frame > 0);
  CheckAgainstReadelf(KILN_DEBUG_FRAME_LIBRARY_PATH, 5);
}

TEST_CASE("damaged and hostile CFI is refused for that file, with the reason") {
  SUBCASE("not ELF") {
    std::string path = CopyOf(KILN_NOFP_LIBRARY_PATH);
    {
      std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
      f.write("JUNK", 4);
    }
    int fd = open(path.c_str(), O_RDONLY);
    auto t = BuildUnwindTable(fd);
    close(fd);
    unlink(path.c_str());
    REQUIRE_FALSE(t.ok());
    CHECK(t.error().find("not an ELF file (starts with 4a 55 4e 4b") != std::string::npos);
  }
  SUBCASE("a table larger than the limit") {
    int fd = open(LibcPath().c_str(), O_RDONLY);
    auto t = BuildUnwindTable(fd, -1, UnwindTableLimits{.max_rows = 1000});
    close(fd);
    REQUIRE_FALSE(t.ok());
    CHECK(t.error().find("more than 1000 CFI rows") != std::string::npos);
    // The loader's own words for it, and the build stops there.
    fd = open(LibcPath().c_str(), O_RDONLY);
    auto named = BuildUnwindTable(fd, -1, UnwindTableLimits{.max_rows = 1000, .too_many_rows = "larger than the map"});
    close(fd);
    REQUIRE_FALSE(named.ok());
    CHECK(named.error() == "larger than the map");
  }
  SUBCASE("every byte of .eh_frame and .eh_frame_hdr overwritten, one at a time in strides") {
    // Corrupt each region with several patterns; the builder must return a
    // table or an error, never crash or hang.
    std::string path = CopyOf(KILN_NOFP_LIBRARY_PATH);
    std::string out = Shell("readelf -SW '" + path + "' | awk '$2 ~ /^.eh_frame/ {print $5, $6}'");
    std::istringstream ranges(out);
    std::vector<std::pair<long, long>> spans;
    for (std::string off, size; ranges >> off >> size;) spans.push_back({std::stol(off, nullptr, 16), std::stol(size, nullptr, 16)});
    REQUIRE(spans.size() == 2);
    std::ifstream in(path, std::ios::binary);
    std::string original((std::istreambuf_iterator<char>(in)), {});
    std::size_t refused = 0, built = 0;
    for (auto [off, size] : spans) {
      for (long at = off; at < off + size; at += 3) {
        for (unsigned char v : {0x00, 0xff, 0x7f}) {
          std::string damaged = original;
          damaged[at] = static_cast<char>(v);
          auto t = BuildUnwindTableFromMemory(damaged.data(), damaged.size());
          (t.ok() ? built : refused)++;
          if (t.ok()) REQUIRE(KILN_CFA_RULE_OF(&t->rows.back()) == KILN_CFA_NONE);
        }
      }
    }
    unlink(path.c_str());
    MESSAGE(built << " damaged copies built a table, " << refused << " were refused");
    CHECK(refused > 0);
  }
}

TEST_CASE("CoverRange: aligned LPM blocks that cover a mapping exactly") {
  struct Case {
    std::uint64_t start, end;
  };
  for (Case c : {Case{0x7f0000001000, 0x7f0000003000}, Case{0x555555554000, 0x5555555a1000},
                 Case{0x1000, 0x2000}, Case{0x7ffff7fc1000, 0x7ffff7fc3000}, Case{0x400000, 0x8d5000}}) {
    auto blocks = CoverRange(c.start, c.end);
    std::uint64_t at = c.start;
    for (auto [bits, start] : blocks) {
      REQUIRE(bits >= 1);
      REQUIRE(bits <= 64);
      std::uint64_t size = bits == 64 ? 1 : 1ULL << (64 - bits);
      CHECK(start == at);                  // contiguous, in order
      CHECK((start & (size - 1)) == 0);    // aligned to its size, as a prefix must be
      at = start + size;
    }
    CHECK(at == c.end);  // nothing outside the mapping
    CHECK(blocks.size() <= 2 * 52);
  }
}

TEST_CASE("a separate debug file's .debug_frame is read with the stripped file") {
  const std::string original = KILN_DEBUG_FRAME_LIBRARY_PATH;
  char dir_template[] = "/tmp/kiln-debugfile-XXXXXX";
  REQUIRE(mkdtemp(dir_template) != nullptr);
  const std::string dir = dir_template;
  const std::string debug = dir + "/fixture.debug", stripped = dir + "/fixture.so";
  // binutils splits it the way distributions ship -dbgsym packages.
  REQUIRE(std::system(("objcopy --only-keep-debug '" + original + "' '" + debug + "'").c_str()) == 0);
  REQUIRE(std::system(("objcopy --strip-debug '" + original + "' '" + stripped + "'").c_str()) == 0);

  int fd = open(stripped.c_str(), O_RDONLY);
  auto alone = BuildUnwindTable(fd);
  CHECK_FALSE(alone.ok());  // no .eh_frame, and its .debug_frame went to the debug file
  int debug_fd = open(debug.c_str(), O_RDONLY);
  auto with_debug = BuildUnwindTable(fd, debug_fd);
  close(fd);
  close(debug_fd);
  REQUIRE_MESSAGE(with_debug.ok(), with_debug.error());
  UnwindTable whole = Build(original);
  CHECK(with_debug->stats.rows_from_debug_frame > 0);
  REQUIRE(with_debug->rows.size() == whole.rows.size());
  for (std::size_t i = 0; i < whole.rows.size(); ++i)
    CHECK(FormatUnwindRow(with_debug->rows[i]) == FormatUnwindRow(whole.rows[i]));
  std::filesystem::remove_all(dir);
}

namespace {

// Both lookups' answer as text: the full rows' (the oracle) and the
// compacted rows' (what the BPF walker reads). No row and a "none" row are
// the same answer: no CFI at that pc.
std::string RuleText(const kiln_unwind_info* info) {
  if (!info || KILN_CFA_RULE_OF(info) == KILN_CFA_NONE) return "none";
  UnwindRow row{0, info->cfa_offset, info->rules, info->fp_offset};
  return FormatUnwindRow(row);
}

std::size_t CheckCompactAgrees(const std::vector<UnwindRow>& rows, std::vector<std::uint64_t> probes) {
  UnwindInfoTable infos;
  auto compact = CompactRows(rows, infos);
  REQUIRE_MESSAGE(compact, compact.error());
  if (!rows.empty()) {
    probes.push_back(0);
    probes.push_back(std::uint64_t{rows.back().pc} + 0x20000);
    probes.push_back(std::uint64_t{1} << 40);
  }
  const std::vector<kiln_unwind_info> all_infos = infos.infos();
  std::size_t mismatches = 0;
  for (std::uint64_t at : probes) {
    const UnwindRow* full = FindUnwindRow(rows, at);
    kiln_unwind_info want{};
    if (full) want = kiln_unwind_info{full->cfa_offset, full->rules, full->fp_offset};
    std::optional<kiln_unwind_info> got = FindCompactRow(*compact, all_infos, at);
    std::string w = RuleText(full ? &want : nullptr), g = RuleText(got ? &*got : nullptr);
    if (w != g && ++mismatches <= 10) FAIL_CHECK(Hex(at) << ": full rows say " << w << ", compact rows say " << g);
  }
  CHECK(mismatches == 0);
  return compact->words.size();
}

}  // namespace

TEST_CASE("compacted rows (4 bytes, paged) give every pc the rule the full rows give") {
  SUBCASE("real files: every row's first byte, the byte before it and random pcs") {
    std::vector<std::string> files = {LibcPath(), KILN_NOFP_LIBRARY_PATH, "/proc/self/exe"};
    for (const std::string& path : files) {
      CAPTURE(path);
      UnwindTable table = Build(path);
      REQUIRE(table.rows.size() > 10);
      std::vector<std::uint64_t> probes;
      for (const UnwindRow& r : table.rows) {
        probes.push_back(r.pc);
        probes.push_back(r.pc - 1);
        probes.push_back(r.pc + 1);
      }
      std::uint64_t lo = table.rows.front().pc, hi = table.rows.back().pc;
      std::uint64_t x = 88172645463325252ull;  // xorshift: the same probes each run
      for (int i = 0; i < 100000; ++i) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        probes.push_back(lo + x % (hi - lo + 0x100));
      }
      std::size_t words = CheckCompactAgrees(table.rows, probes);
      MESSAGE(path << ": " << table.rows.size() << " rows, " << words * 4 << " bytes compacted (was "
                   << table.rows.size() * sizeof(UnwindRow) << ")");
      // A page index word per 64 KiB of code on top of 4 bytes a row.
      CHECK(words <= table.rows.size() + (hi - lo) / 65536 + 2);
    }
  }
  SUBCASE("rows across empty pages, at page edges, and two rows at one pc") {
    auto sp = [](std::uint32_t pc, int words) {
      return UnwindRow{pc, static_cast<__s16>(words), KILN_CFA_SP, 0};
    };
    std::vector<UnwindRow> rows = {sp(0x1fff0, 1), sp(0x1ffff, 2), sp(0x20000, 3),
                                   // pages 3..5 hold no row: 0x20000's holds them
                                   sp(0x60000, 4), sp(0x60000, 5), sp(0x6ffff, 6),
                                   UnwindRow{0x70010, 0, KILN_CFA_NONE, 0}};
    std::vector<std::uint64_t> probes;
    for (std::uint64_t at = 0x1ff00; at < 0x80000; at += 0x7) probes.push_back(at);
    for (std::uint64_t at : {0x1ffefull, 0x1fff0ull, 0x1fffeull, 0x1ffffull, 0x20000ull, 0x5ffffull, 0x60000ull,
                             0x6fffeull, 0x6ffffull, 0x70000ull, 0x7000full, 0x70010ull, 0x7ffffull, 0x80000ull})
      probes.push_back(at);
    CheckCompactAgrees(rows, probes);
    UnwindInfoTable infos;
    auto compact = CompactRows(rows, infos);
    REQUIRE(compact);
    CHECK(compact->first_page == 1);
    CHECK(compact->words.size() == 8 + 6);  // pages 1..7 and the end, then six rows (two at 0x60000 are one)
    auto at = [&](std::uint64_t pc) { return FindCompactRow(*compact, infos.infos(), pc); };
    REQUIRE(at(0x45678));
    CHECK(at(0x45678)->cfa_offset == 3);  // from a row three pages back
    REQUIRE(at(0x60000));
    CHECK(at(0x60000)->cfa_offset == 5);  // the later of two rows at one pc
    CHECK(!at(0x1ffef));                   // before the first row
    CHECK(!at(0x80000));                   // past the last page
  }
  SUBCASE("rules are shared between files, and a full rule table refuses the file that needs one more") {
    UnwindInfoTable infos(3);
    std::vector<UnwindRow> a = {UnwindRow{0x1000, 1, KILN_CFA_SP, 0}, UnwindRow{0x1010, 2, KILN_CFA_SP, 0},
                                UnwindRow{0x1020, 0, KILN_CFA_NONE, 0}};
    REQUIRE(CompactRows(a, infos));
    REQUIRE(CompactRows(a, infos));  // the same rules again: nothing new
    CHECK(infos.infos().size() == 3);
    std::vector<UnwindRow> b = {UnwindRow{0x1000, 7, KILN_CFA_SP, 0}, UnwindRow{0x1020, 0, KILN_CFA_NONE, 0}};
    auto refused = CompactRows(b, infos);
    REQUIRE(!refused);
    CHECK(refused.error() == "unwind_infos full (3 distinct rules)");
    std::vector<UnwindRow> backwards = {UnwindRow{0x2000, 1, KILN_CFA_SP, 0}, UnwindRow{0x1000, 1, KILN_CFA_SP, 0}};
    UnwindInfoTable fresh;
    auto bad = CompactRows(backwards, fresh);
    REQUIRE(!bad);
    CHECK(bad.error() == "unwind rows out of order");
  }
}

TEST_CASE("a table compacted while it is built equals the full rows compacted (what the agent loads)") {
  // libc, libstdc++ and the test binary: .eh_frame alone, compacted as
  // libdw reports rows (libstdc++'s 4,800 FDEs also see its mapped pages
  // dropped midway); the .debug_frame library: two sources merged first.
  SUBCASE("libc, libstdc++, a library without frame pointers, one with .debug_frame, this test")
  for (const std::string& path :
       {LibcPath(), MappedLibraryPath("/libstdc++.so.6"), std::string(KILN_NOFP_LIBRARY_PATH),
        std::string(KILN_DEBUG_FRAME_LIBRARY_PATH), std::string("/proc/self/exe")}) {
    CAPTURE(path);
    REQUIRE(!path.empty());
    UnwindTable full = Build(path);
    UnwindInfoTable want_infos;
    auto want = CompactRows(full.rows, want_infos);
    REQUIRE(want);
    UnwindInfoTable infos;
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    auto built = BuildUnwindTable(fd, -1, {}, &infos);
    close(fd);
    REQUIRE_MESSAGE(built, built.error());
    CHECK(built->rows.empty());
    CHECK(built->stats.rows == full.rows.size());
    CHECK(built->stats.unsupported_rows == full.stats.unsupported_rows);
    CHECK(built->compact.first_page == want->first_page);
    REQUIRE(built->compact.words.size() == want->words.size());
    CHECK(built->compact.words == want->words);
    CHECK(infos.size() == want_infos.size());
  }
  SUBCASE("a full rule table refuses the file, naming it") {
    UnwindInfoTable small(3);
    int fd = open(LibcPath().c_str(), O_RDONLY | O_CLOEXEC);
    auto refused = BuildUnwindTable(fd, -1, {}, &small);
    close(fd);
    REQUIRE(!refused);
    CHECK(refused.error() == "unwind_infos full (3 distinct rules)");
  }
}

TEST_CASE("RowSpace: first fit, freed runs merge, and packing makes one free run of rows left in pieces") {
  RowSpace space(100);
  auto a = space.Allocate(30), b = space.Allocate(20), c = space.Allocate(30), d = space.Allocate(20);
  REQUIRE((a && b && c && d));
  CHECK(*a == 0);
  CHECK(*b == 30);
  CHECK(*c == 50);
  CHECK(*d == 80);
  CHECK(!space.Allocate(1));  // full
  space.Free(*a, 30);
  space.Free(*c, 30);
  // 60 rows free, as two runs of 30 with tables in use between them: a
  // table of 40 fits in total but not in any run.
  CHECK(space.free_rows() == 60);
  CHECK(space.free_runs() == 2);
  CHECK(!space.Allocate(40));
  std::vector<std::uint32_t> to = space.Pack({{*b, 20}, {*d, 20}});
  CHECK(to == std::vector<std::uint32_t>{0, 20});
  CHECK(space.free_runs() == 1);
  auto e = space.Allocate(40);
  REQUIRE(e);
  CHECK(*e == 40);
  // Freed neighbours merge back into one run.
  space.Free(0, 20);
  space.Free(20, 20);
  CHECK(space.free_runs() == 2);  // [0, 40) and [80, 100)
  space.Free(*e, 40);
  CHECK(space.free_runs() == 1);
  CHECK(space.free_rows() == 100);
}
