// UnwindLoader against real BPF maps: when the free rows are enough in total
// but lie in pieces between tables in use, the loader moves the tables
// together, and every moved table still gives every pc the rule its file's
// CFI gives (read back from the maps as the walker reads them).
//
// Needs root (BPF maps); otherwise prints why and exits 77. The scenario,
// with the map sized from the files' own table sizes:
//   1. two processes run copies of `sleep` (s1, s2): rows [ld, libc, vdso, s1, s2];
//   2. the first exits: s1's table is unused;
//   3. a process runs a copy of python3.11 (X, far larger than s1) and is
//      sampled, as is the s2 process: X fits neither in the free rows at the
//      end nor in s1's, only in both, so s1 is evicted and s2 moved down;
//   4. X's process wakes for a moment as another copy (Y) runs: Y gets X's rows.

#include <bpf/bpf.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "e2e_checks.h"
#include "executable_cache.h"
#include "process_runner.h"
#include "process_tracker.h"
#include "unwind_loader.h"
#include "unwind_table.h"

using namespace kiln::agent;
using namespace kiln::agent::testing;

namespace {

// A copy of `from` that is a file of its own (files are known by head, tail
// and size: a few bytes more make another table).
std::string DistinctCopy(const std::string& from, const std::string& to) {
  std::filesystem::copy_file(from, to);
  FILE* f = std::fopen(to.c_str(), "ab");
  std::fputs(to.c_str(), f);
  std::fclose(f);
  std::filesystem::permissions(to, std::filesystem::perms::owner_all);
  return to;
}

// The file's table as the loader builds it.
struct Expected {
  std::vector<UnwindRow> rows;
  std::uint32_t words = 0, first_page = 0;
};
Expected ExpectedTable(const std::string& path) {
  Expected e;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  auto table = BuildUnwindTable(fd);
  close(fd);
  if (!table) return e;
  UnwindInfoTable infos;
  auto compact = CompactRows(table->rows, infos);
  if (!compact) return e;
  e.rows = std::move(table->rows);
  e.words = static_cast<std::uint32_t>(compact->words.size());
  e.first_page = compact->first_page;
  return e;
}

struct Maps {
  UnwindMapFds fds;
  explicit Maps(std::uint32_t rows) {
    fds.rows = bpf_map_create(BPF_MAP_TYPE_ARRAY, "t_rows", 4, 4, rows, nullptr);
    fds.infos = bpf_map_create(BPF_MAP_TYPE_ARRAY, "t_infos", 4, sizeof(kiln_unwind_info), KILN_UNWIND_INFOS, nullptr);
    fds.files = bpf_map_create(BPF_MAP_TYPE_ARRAY, "t_files", 4, sizeof(kiln_unwind_file), 256, nullptr);
    LIBBPF_OPTS(bpf_map_create_opts, lpm, .map_flags = BPF_F_NO_PREALLOC);
    fds.mappings = bpf_map_create(BPF_MAP_TYPE_LPM_TRIE, "t_maps", sizeof(kiln_mapping_key),
                                  sizeof(kiln_unwind_mapping), 4096, &lpm);
    fds.process_state = bpf_map_create(BPF_MAP_TYPE_HASH, "t_state", 4, 4, 64, nullptr);
    fds.row_capacity = rows;
    fds.file_capacity = 256;
  }
  ~Maps() {
    for (int fd : {fds.rows, fds.infos, fds.files, fds.mappings, fds.process_state})
      if (fd >= 0) close(fd);
  }
  bool ok() const { return fds.rows >= 0 && fds.infos >= 0 && fds.files >= 0 && fds.mappings >= 0 && fds.process_state >= 0; }
};

void WaitForBuilds(UnwindLoader& loader) {
  for (int i = 0; i < 1000 && (loader.Poll(), loader.builds_pending() > 0); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  loader.Poll();
}

// A loader over maps of `rows` rows, with the processes `a` and `b` loaded.
struct Loaded {
  Maps maps;
  ExecutableCache cache;
  ProcessTracker tracker{cache};
  UnwindLoader loader{tracker, maps.fds};
  Loaded(std::uint32_t rows, pid_t a, pid_t b) : maps(rows) {
    loader.LoadProcess(tracker.Get(static_cast<std::uint32_t>(a), "s1"));
    loader.LoadProcess(tracker.Get(static_cast<std::uint32_t>(b), "s2"));
    WaitForBuilds(loader);
  }
};

// The loaded table of the given size, read back from the maps; checks that
// its every row edge gets the rule the file's CFI gives.
void CheckLoaded(const Maps& maps, const Expected& want, const std::string& what) {
  std::vector<kiln_unwind_info> infos(KILN_UNWIND_INFOS);
  for (std::uint32_t i = 0; i < KILN_UNWIND_INFOS; ++i) bpf_map_lookup_elem(maps.fds.infos, &i, &infos[i]);
  for (std::uint32_t slot = 0; slot < 256; ++slot) {
    kiln_unwind_file file{};
    if (bpf_map_lookup_elem(maps.fds.files, &slot, &file) != 0 || file.row_count != want.words ||
        file.first_page != want.first_page)
      continue;
    CompactUnwindRows table{file.first_page, std::deque<std::uint32_t>(file.row_count)};
    for (std::uint32_t i = 0; i < file.row_count; ++i) {
      std::uint32_t key = file.first_row + i;
      bpf_map_lookup_elem(maps.fds.rows, &key, &table.words[i]);
    }
    std::size_t wrong = 0;
    for (const UnwindRow& r : want.rows) {
      for (std::uint64_t at : {std::uint64_t{r.pc}, std::uint64_t{r.pc} + 1}) {
        const UnwindRow* full = FindUnwindRow(want.rows, at);
        auto got = FindCompactRow(table, infos, at);
        bool none_want = !full || KILN_CFA_RULE_OF(full) == KILN_CFA_NONE;
        bool none_got = !got || KILN_CFA_RULE_OF(&*got) == KILN_CFA_NONE;
        if (none_want != none_got ||
            (!none_want && (got->rules != full->rules || got->cfa_offset != full->cfa_offset ||
                            got->fp_offset != full->fp_offset)))
          ++wrong;
      }
    }
    Check(wrong == 0, what + ": every row edge of the table in the maps (rows " + std::to_string(file.first_row) +
                          ".." + std::to_string(file.first_row + file.row_count) + ") has the file's rule (" +
                          std::to_string(wrong) + " wrong)");
    return;
  }
  Check(false, what + ": loaded (" + std::to_string(want.words) + " rows)");
}

}  // namespace

int main() {
  if (geteuid() != 0) return Skip("needs root (BPF maps)");
  if (access("/usr/bin/python3.11", X_OK) != 0) return Skip("python3.11 is not installed");
  const std::string dir = MakeTempDir("kiln-unwind-loader-");
  const std::string s1 = DistinctCopy("/usr/bin/sleep", dir + "/s1");
  const std::string s2 = DistinctCopy("/usr/bin/sleep", dir + "/s2");
  const std::string x = DistinctCopy("/usr/bin/python3.11", dir + "/x");
  const Expected want_s1 = ExpectedTable(s1), want_s2 = ExpectedTable(s2), want_x = ExpectedTable(x);
  Check(want_s1.words > 0 && want_x.words > 4 * want_s1.words, "python3.11's table is far larger than sleep's (" +
                                                                     std::to_string(want_x.words) + " and " +
                                                                     std::to_string(want_s1.words) + " rows)");

  const pid_t p1 = Spawn({s1, "60"}, dir + "/s1.out", dir + "/s1.err");
  const pid_t p2 = Spawn({s2, "60"}, dir + "/s2.out", dir + "/s2.err");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // exec'd and mapped

  // A dry run sizes the map: what the two sleep processes take (their
  // libraries and the vDSO included).
  const std::uint32_t base = static_cast<std::uint32_t>(Loaded(1u << 22, p1, p2).loader.stats().rows_in_use);
  // Free rows at the end: less than X needs, but with s1's, enough.
  const std::uint32_t capacity = base + want_x.words - want_s1.words / 2;
  Loaded run(capacity, p1, p2);
  if (!run.maps.ok()) return Skip("cannot create BPF maps here");
  const Maps& maps = run.maps;
  ProcessTracker& tracker = run.tracker;
  UnwindLoader& loader = run.loader;
  Check(loader.stats().rows_in_use == base, "the sleep processes take " + std::to_string(base) + " rows");

  kill(p1, SIGKILL);
  WaitExit(p1);
  loader.ForgetProcess(static_cast<std::uint32_t>(p1));

  const pid_t p3 = Spawn({x, "-c", "import time; time.sleep(60)"}, dir + "/x.out", dir + "/x.err");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ProcessInfo& px = tracker.Get(static_cast<std::uint32_t>(p3), "x");
  loader.LoadProcess(px);
  // Both processes run (sampled kReloadSamples times): no table of theirs
  // may give rows up.
  for (std::uint32_t i = 0; i < UnwindLoader::kReloadSamples; ++i) {
    loader.NoteSampled(tracker.Get(static_cast<std::uint32_t>(p2), "s2"), false);
    loader.NoteSampled(px, false);
  }
  WaitForBuilds(loader);

  const UnwindLoaderStats& st = loader.stats();
  std::printf("    capacity %u rows; %zu in use, %zu tables loaded, moved together %zu times, %zu evicted\n", capacity,
              st.rows_in_use, st.tables_loaded, st.defragmented, st.tables_evicted);
  for (const auto& [what, times] : st.refused) std::printf("    refused: %s (%zu)\n", what.c_str(), times);
  Check(st.defragmented == 1, "the tables were moved together once");
  Check(st.tables_evicted >= 1, "s1's unused table gave its rows up");
  bool x_refused = false;
  for (const auto& [what, times] : st.refused) x_refused |= what.rfind(x + ":", 0) == 0 || what.rfind("x:", 0) == 0;
  Check(!x_refused, "python3.11's copy was not refused");
  CheckLoaded(maps, want_x, "python3.11's copy");
  CheckLoaded(maps, want_s2, "s2 (moved)");

  // 4. Later X's process wakes for a moment (sampled once: a sleeper's
  //    timer) as another copy, Y, starts and runs. Y needs X's rows, and a
  //    moment's wake does not keep them (it did: Y was refused "full of
  //    tables in use" and walked with frame pointers for kHotWindow).
  std::this_thread::sleep_for(2 * UnwindLoader::kHotWindow + std::chrono::milliseconds(100));
  loader.NoteSampled(px, false);
  const std::string y = DistinctCopy("/usr/bin/python3.11", dir + "/y");
  const Expected want_y = ExpectedTable(y);
  const pid_t p4 = Spawn({y, "-c", "import time; time.sleep(60)"}, dir + "/y.out", dir + "/y.err");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ProcessInfo& py = tracker.Get(static_cast<std::uint32_t>(p4), "y");
  loader.LoadProcess(py);
  for (std::uint32_t i = 0; i < UnwindLoader::kReloadSamples; ++i) loader.NoteSampled(py, false);
  WaitForBuilds(loader);
  std::printf("    then: %zu in use, %zu tables loaded, %zu evicted while mapped\n", st.rows_in_use, st.tables_loaded,
              st.tables_evicted_idle);
  for (const auto& [what, times] : st.refused) std::printf("    refused: %s (%zu)\n", what.c_str(), times);
  bool y_refused = false;
  for (const auto& [what, times] : st.refused) y_refused |= what.rfind(y + ":", 0) == 0 || what.rfind("y:", 0) == 0;
  Check(!y_refused && st.tables_evicted_idle >= 1,
        "the running copy took the rows of the one that woke for a moment (not refused)");
  CheckLoaded(maps, want_y, "the running copy Y");

  for (pid_t p : {p2, p3, p4}) kill(p, SIGKILL);
  for (pid_t p : {p2, p3, p4}) WaitExit(p);
  return Verdict(dir);
}
