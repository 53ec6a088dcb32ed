// unwind_dump FILE [rows]: builds FILE's unwind table as kiln-agent does and
// prints its size, the time it took and the peak RSS; with "rows", every
// row too. For agent_bench and for looking at what the walker will read.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>

#include "unwind_table.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: unwind_dump FILE [rows]\n");
    return 2;
  }
  int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    std::perror(argv[1]);
    return 1;
  }
  const bool rows = argc > 2 && std::strcmp(argv[2], "rows") == 0;
  // As the agent builds it: compacted while it is made (the peak RSS is the
  // agent's); with "rows", whole, to print.
  kiln::agent::UnwindInfoTable infos;
  auto t0 = std::chrono::steady_clock::now();
  auto table = kiln::agent::BuildUnwindTable(fd, -1, {}, rows ? nullptr : &infos);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  close(fd);
  if (!table) {
    std::printf("refused: %s\n", table.error().c_str());
    return 1;
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  if (rows) {
    auto compact = kiln::agent::CompactRows(table->rows, infos);
    if (!compact) {
      std::printf("refused: %s\n", compact.error().c_str());
      return 1;
    }
    table->compact = std::move(*compact);
  }
  std::printf("%zu rows (%.2f MB in BPF maps, %zu distinct rules) from %zu FDEs in %.3f s, peak RSS %.0f MB\n",
              table->stats.rows, table->compact.words.size() * 4 / 1e6, infos.size(), table->stats.fdes, seconds,
              ru.ru_maxrss / 1024.0);
  if (rows)
    for (const auto& row : table->rows) std::puts(kiln::agent::FormatUnwindRow(row).c_str());
  return 0;
}
