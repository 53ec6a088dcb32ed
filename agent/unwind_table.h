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

struct UnwindTable {
  std::vector<kiln_unwind_row> rows;  // sorted by pc, ends with a KILN_CFA_NONE row
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

// One line a row, for tests and debugging: "0x1130 cfa=sp+8 fp=same ra=cfa-8".
std::string FormatUnwindRow(const kiln_unwind_row& row);

// The row that holds `vaddr` (binary search), or nullptr before the first.
const kiln_unwind_row* FindUnwindRow(const std::vector<kiln_unwind_row>& rows, std::uint64_t vaddr);

}  // namespace kiln::agent
