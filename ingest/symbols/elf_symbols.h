// ReadSymbols: function names, source lines and inline chains for one
// executable, from its ELF symbol tables, MiniDebugInfo and DWARF (libdw),
// packed into a storage::SymbolTable keyed by ELF virtual address (the
// addresses addr2line takes and OTLP native frames carry).
//
// Blocking and CPU-heavy (seconds for a 50 MB binary with DWARF): call it on
// a background thread. Calls on different threads are independent. The
// result owns everything it refers to.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ingest/symbols/demangle.h"  // Demangle, for callers of ReadSymbols
#include "storage/symbol_table.h"

namespace kiln::symbols {

struct SymbolReadOptions {
  // Called from the reading thread with the fraction done (0..1), at most a
  // few hundred times per call.
  std::function<void(double fraction)> progress;
  // Polled between compilation units and symbol tables; when it becomes true
  // ReadSymbols returns CancelledError soon after.
  const std::atomic<bool>* cancel = nullptr;
  // libdw keeps every unit's line table until its Dwarf handle ends, which
  // for kiln's own RelWithDebInfo binary was 97 MB more than the table being
  // built (the window's start-up peak). The elfutils backend ends the handle
  // and opens a new one after units whose line tables hold this many rows.
  // 0 = the default; tests set 1 to reopen after every unit.
  size_t dwarf_line_rows_per_open = 0;
};

struct SymbolReadResult {
  storage::SymbolTable table;
  // The file the DWARF came from, else the one with the most ELF symbols.
  std::string source_path;
  size_t dwarf_functions = 0;    // DW_TAG_subprogram with code
  size_t inlined_calls = 0;      // DW_TAG_inlined_subroutine with code
  size_t line_rows = 0;          // line table rows kept
  size_t symtab_symbols = 0;     // function symbols from .symtab
  size_t dynsym_symbols = 0;     // ... from .dynsym
  size_t minidebug_symbols = 0;  // ... from .gnu_debugdata's .symtab
  // One line for the Executables view, e.g. "DWARF: 123 functions, 4567
  // lines, inline chains; symtab: 89 symbols".
  std::string description;
  // Files or parts that were skipped, each naming the file and why.
  std::vector<std::string> warnings;
};

// Reads `files`, all copies of one executable in preference order (typically
// its separate debug file, then the binary itself). DWARF comes from the
// first file that has readable DWARF; ELF symbols from all of them, earlier
// files winning for the same address. Files whose GNU build ids disagree, or
// whose ELF class or machine differ from the first file, are an error:
// their addresses would not match.
//
// Names: a DWARF function's linkage name, demangled. Without one (C, static
// C++ functions, lambdas: DW_AT_name alone is unqualified, "operator()")
// each part of the function is named after the ELF symbol at its start
// ("f", "f.cold"), as addr2line and llvm-symbolizer print; inlined calls
// without a linkage name keep DW_AT_name.
//
// Errors: NotFound when no file has any function symbols or DWARF (message
// names the files); InvalidArgument for unreadable ELF (see ReadElfIdentity);
// FailedPrecondition for zstd-compressed debug sections, which need
// elfutils >= 0.189 (this build's libdw may be older); Cancelled.
// A file that fails while another one yields symbols becomes a warning.
[[nodiscard]] absl::StatusOr<SymbolReadResult> ReadSymbols(const std::vector<std::string>& files,
                                                           const SymbolReadOptions& options = {});


}  // namespace kiln::symbols
