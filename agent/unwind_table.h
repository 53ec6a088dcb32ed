#pragma once
// Call frame information (.eh_frame, .debug_frame) compiled into the sorted
// rows the BPF walker reads (layout and meaning: bpf/unwind_abi.h); for Go
// code, Go's own line table's stack pointer deltas (go_pclntab.h).
//
// elfutils' libdw evaluates the CFA programs (dwarf_cfi_addrframe), so we
// never interpret DWARF call frame instructions ourselves. What libdw does not
// offer is "list every FDE", so the FDE start addresses come from the sorted
// table in .eh_frame_hdr (what unwinders binary-search at run time) and, for
// .debug_frame, from walking its entries with dwarf_next_cfi. From each FDE
// start we ask libdw for the row at the address, take the end of the range it
// says the row covers, and ask again there.
//
// Pure: file descriptors in, rows out; no process, no BPF. Thread-safe.

#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <utility>
#include <string>
#include <unordered_map>
#include <vector>

#include <linux/types.h>

#include "bpf/unwind_abi.h"
#include "result.h"

namespace kiln::agent {

struct UnwindTableStats {
  std::size_t fdes = 0;              // FDE starts walked
  std::size_t rows_from_eh_frame = 0;
  std::size_t rows_from_debug_frame = 0;  // filling gaps .eh_frame leaves
  std::size_t rows_from_go = 0;      // Go's line table (pcsp), where no CFI covers
  std::size_t unsupported_rows = 0;  // CFA expressions the walker cannot evaluate
  std::size_t outermost_rows = 0;    // return address undefined (_start, clone)
  std::size_t rows = 0;              // in the table, after merging
};

// A row as the builder makes it: its pc in full and its rule inline. The BPF
// maps hold it compacted (CompactUnwindRows).
struct UnwindRow {
  std::uint32_t pc;   // ELF virtual address where the row starts
  __s16 cfa_offset;   // see kiln_cfa_rule
  __u8 rules;         // kiln_cfa_rule | kiln_reg_rule (frame pointer) << 4
  __s8 fp_offset;     // in 8-byte words
};

// Every distinct rule once, numbered in the order first met: unwind_infos'
// contents. A whole desktop has a few thousand; the map holds
// KILN_UNWIND_INFOS (a row's 16 bits).
// Thread-safe: the agent's builder thread interns while its main thread
// copies new rules into the map.
class UnwindInfoTable {
 public:
  explicit UnwindInfoTable(std::size_t capacity = KILN_UNWIND_INFOS) : capacity_(capacity) {}
  // The rule's number, or nullopt when the table is full.
  std::optional<std::uint16_t> Intern(const kiln_unwind_info& info);
  // The rules from number `from` on (a copy: another thread may be adding).
  std::vector<kiln_unwind_info> infos(std::size_t from = 0) const;
  std::size_t size() const;

 private:
  mutable std::mutex mu_;
  std::size_t capacity_;
  std::vector<kiln_unwind_info> infos_;
  std::unordered_map<std::uint32_t, std::uint16_t> index_;
};

// A file's rows as unwind_rows holds them (bpf/unwind_abi.h): a page index,
// then 4 bytes a row. The OpenTelemetry profiler's stack deltas, our layout.
// A deque, not a vector: it is filled as rows are made, and a vector that
// doubles (or a copy into one at the end) would hold the rows twice.
struct CompactUnwindRows {
  std::uint32_t first_page = 0;     // pc >> KILN_PAGE_BITS of the first page
  std::deque<std::uint32_t> words;  // page starts, then rows
};

// Compacts rows as they come, in pc order, interning their rules in
// `infos`: a large file's rows are never all held at 8 bytes. When `infos`
// is full it refuses, and `infos` may keep some of the table's rules
// (harmless: they are just numbered).
class CompactRowWriter {
 public:
  explicit CompactRowWriter(UnwindInfoTable& infos) : infos_(infos) {}
  // false (error() says why) when the row comes before the last one or its
  // rule does not fit in `infos`.
  bool Add(const UnwindRow& row);
  const std::string& error() const { return error_; }
  Result<CompactUnwindRows> Finish();

 private:
  UnwindInfoTable& infos_;
  std::unordered_map<std::uint32_t, std::uint16_t> numbers_;  // this table's rules: no lock for them
  std::uint32_t first_page_ = 0;
  std::vector<std::uint32_t> page_starts_;  // a row index per page, from first_page_
  CompactUnwindRows out_;                   // rows; the page index goes in front at the end
  std::uint32_t last_pc_ = 0;
  std::string error_;
};

// `rows` (sorted, as BuildUnwindTable returns them) compacted: what
// BuildUnwindTable makes with `compact_into`.
Result<CompactUnwindRows> CompactRows(const std::vector<UnwindRow>& rows, UnwindInfoTable& infos);

struct UnwindTable {
  std::vector<UnwindRow> rows;  // sorted by pc, ends with a KILN_CFA_NONE row; empty when compacted
  CompactUnwindRows compact;    // built with compact_into
  UnwindTableStats stats;
};

struct UnwindTableLimits {
  // A table larger than this is refused ("hostile or absurd"): the biggest
  // binaries we know (clang, chromium) need a few million rows.
  std::size_t max_rows = 8u << 20;
  // The error past max_rows ("" = "more than N CFI rows"): the loader sets
  // max_rows to the map's capacity, so a table that could never be loaded
  // is not built whole first (libLLVM's took 44 MB to build, then was
  // refused).
  std::string too_many_rows;
  std::string TooManyRows() const {
    return too_many_rows.empty() ? "more than " + std::to_string(max_rows) + " CFI rows" : too_many_rows;
  }
};

// The unwind table of the ELF file `fd`; `debug_fd` (or -1) is its separate
// debug file, whose .debug_frame fills what .eh_frame does not cover.
// Errors name what was wrong with the file. With `compact_into` the rows
// are compacted as they are made (table.compact, rules interned there) and
// table.rows stays empty: what the agent loads, at half the peak memory.
Result<UnwindTable> BuildUnwindTable(int fd, int debug_fd = -1, UnwindTableLimits limits = {},
                                     UnwindInfoTable* compact_into = nullptr);

// The split-off cold part ("f.cold") of the function at [start, start +
// size) of the ELF file `fd`, found without symbols (stripped binaries keep
// no .symtab): the FDE most of the function's jumps out of itself land in.
// (start, size), or nullopt when no FDE stands out.
std::optional<std::pair<std::uint64_t, std::uint64_t>> FindSplitColdPart(int fd, std::uint64_t start,
                                                                         std::uint64_t size);

// The same from an ELF image in memory (the vDSO).
Result<UnwindTable> BuildUnwindTableFromMemory(const void* image, std::size_t size,
                                               UnwindTableLimits limits = {},
                                               UnwindInfoTable* compact_into = nullptr);

// The rule that holds `vaddr` in a compacted table, exactly as
// sampler.bpf.c's find_row looks it up; nullopt before the first row or past
// the last page. For tests: it must agree with FindUnwindRow.
std::optional<kiln_unwind_info> FindCompactRow(const CompactUnwindRows& table,
                                               const std::vector<kiln_unwind_info>& infos, std::uint64_t vaddr);

// One line a row, for tests and debugging: "0x1130 cfa=sp+8 fp=same ra=cfa-8".
std::string FormatUnwindRow(const UnwindRow& row);

// The row that holds `vaddr` (binary search), or nullptr before the first.
const UnwindRow* FindUnwindRow(const std::vector<UnwindRow>& rows, std::uint64_t vaddr);

}  // namespace kiln::agent
