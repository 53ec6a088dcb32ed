// symbols_bench: how long ReadSymbols takes on a large binary with DWARF,
// how big the table is, and what one Lookup costs.
//
//   symbols_bench [FILE...]   (the files of one executable, debug file first)
//
// Without arguments it reads KILN_SYMBOLS_BENCH_DEFAULT (this build's kiln
// binary, RelWithDebInfo) when it exists, else itself. Prints figures only;
// no timing asserts (see CONTRIBUTING.md).
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "ingest/symbols/elf_identity.h"
#include "ingest/symbols/elf_symbols.h"
#include "ingest/symbols/symbol_reader_common.h"

namespace {

long PeakRssKb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> files(argv + 1, argv + argc);
  if (files.empty()) {
    std::string fallback = KILN_SYMBOLS_BENCH_DEFAULT;
    files.push_back(access(fallback.c_str(), R_OK) == 0 ? fallback : "/proc/self/exe");
  }
  auto id = kiln::symbols::ReadElfIdentity(files.front());
  if (!id.ok()) {
    std::fprintf(stderr, "%s\n", std::string(id.status().message()).c_str());
    return 1;
  }
  long rss_before = PeakRssKb();
  auto start = std::chrono::steady_clock::now();
  auto r = kiln::symbols::ReadSymbols(files);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!r.ok()) {
    std::fprintf(stderr, "%s\n", std::string(r.status().message()).c_str());
    return 1;
  }
  long rss_after = PeakRssKb();

  // Random addresses inside the code sections (opened after the read, so
  // the peak RSS above is the read's alone).
  auto source = kiln::symbols::internal::OpenSymbolSource(files.front());
  if (!source.ok()) {
    std::fprintf(stderr, "%s\n", std::string(source.status().message()).c_str());
    return 1;
  }
  std::vector<std::pair<uint64_t, uint64_t>> code;
  uint64_t code_bytes = 0;
  for (const auto& [s, e] : (*source)->CodeSections().ranges) {
    code.emplace_back(s, e - s);
    code_bytes += e - s;
  }
  std::mt19937_64 rng(7);
  std::vector<uint64_t> addresses(1'000'000);
  for (uint64_t& a : addresses) {
    uint64_t off = code_bytes ? rng() % code_bytes : 0;
    for (const auto& [s, n] : code) {
      if (off < n) {
        a = s + off;
        break;
      }
      off -= n;
    }
  }
  std::vector<kiln::storage::SymbolizedFrame> chain;
  size_t hits = 0, frames = 0;
  auto lookup_start = std::chrono::steady_clock::now();
  for (uint64_t a : addresses) {
    if (r->table.Lookup(a, &chain)) ++hits;
    frames += chain.size();
  }
  double lookup_ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - lookup_start).count() /
      static_cast<double>(addresses.size());

  std::printf("file            %s (%.1f MB)\n", r->source_path.c_str(),
              static_cast<double>(id->file_size) / 1e6);
  std::printf("read            %.2f s\n", seconds);
  std::printf("found           %s\n", r->description.c_str());
  std::printf("table           %zu functions, %zu intervals, %zu line rows, %.1f MB in memory\n",
              r->table.function_count(), r->table.interval_count(), r->table.line_count(),
              static_cast<double>(r->table.MemoryBytes()) / 1e6);
  std::printf("inlined calls   %zu\n", r->inlined_calls);
  std::printf("peak RSS        %.1f MB (%.1f MB before reading)\n", static_cast<double>(rss_after) / 1024,
              static_cast<double>(rss_before) / 1024);
  std::printf(
      "lookup          %.0f ns per address (%zu random code addresses, %.0f%% named, %.2f frames each)\n",
      lookup_ns, addresses.size(), 100.0 * static_cast<double>(hits) / static_cast<double>(addresses.size()),
      static_cast<double>(frames) / static_cast<double>(addresses.size()));
  return 0;
}
