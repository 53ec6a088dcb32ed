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
};

// A row as the builder makes it: its pc in full and its rule inline. The BPF
// maps hold it compacted (CompactUnwindRows).
struct UnwindRow {
  std::uint32_t pc;   // ELF virtual address where the row starts
  __s16 cfa_offset;   // see kiln_cfa_rule
  __u8 rules;         // kiln_cfa_rule | kiln_reg_rule (frame pointer) << 4
  __s8 fp_offset;     // in 8-byte words
};

struct UnwindTable {
  std::vector<UnwindRow> rows;  // sorted by pc, ends with a KILN_CFA_NONE row
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
// Errors name what was wrong with the file.
Result<UnwindTable> BuildUnwindTable(int fd, int debug_fd = -1, UnwindTableLimits limits = {});

// The split-off cold part ("f.cold") of the function at [start, start +
// size) of the ELF file `fd`, found without symbols (stripped binaries keep
// no .symtab): the FDE most of the function's jumps out of itself land in.
// (start, size), or nullopt when no FDE stands out.
std::optional<std::pair<std::uint64_t, std::uint64_t>> FindSplitColdPart(int fd, std::uint64_t start,
                                                                         std::uint64_t size);

// The same from an ELF image in memory (the vDSO).
Result<UnwindTable> BuildUnwindTableFromMemory(const void* image, std::size_t size,
                                               UnwindTableLimits limits = {});

// Every distinct rule once, numbered in the order first met: unwind_infos'
// contents. A whole desktop has a few thousand; the map holds
// KILN_UNWIND_INFOS (a row's 16 bits).
class UnwindInfoTable {
 public:
  explicit UnwindInfoTable(std::size_t capacity = KILN_UNWIND_INFOS) : capacity_(capacity) {}
  // The rule's number, or nullopt when the table is full.
  std::optional<std::uint16_t> Intern(const kiln_unwind_info& info);
  const std::vector<kiln_unwind_info>& infos() const { return infos_; }

 private:
  std::size_t capacity_;
  std::vector<kiln_unwind_info> infos_;
  std::unordered_map<std::uint32_t, std::uint16_t> index_;
};

// A file's rows as unwind_rows holds them (bpf/unwind_abi.h): a page index,
// then 4 bytes a row. The OpenTelemetry profiler's stack deltas, our layout.
struct CompactUnwindRows {
  std::uint32_t first_page = 0;     // pc >> KILN_PAGE_BITS of the first page
  std::vector<std::uint32_t> words; // page starts, then rows
};

// `rows` (sorted, as BuildUnwindTable returns them) compacted; their rules
// interned in `infos`. Fails, naming why, when `infos` is full; then `infos`
// may keep some of the table's rules (harmless: they are just numbered).
Result<CompactUnwindRows> CompactRows(const std::vector<UnwindRow>& rows, UnwindInfoTable& infos);

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
