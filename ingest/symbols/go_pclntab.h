// Go's own line table (.gopclntab): function names, files and lines for Go
// programs, also stripped ones (`-ldflags='-s -w'`, how Go is shipped: no
// .symtab, no DWARF, but the runtime keeps this table for its tracebacks).
//
// Go 1.18 and later (header magic 0xfffffff0, 1.20+ 0xfffffff1; earlier
// layouts are refused by name). For an address: the function that holds
// it (the physical one: a call inlined into it keeps the caller's name)
// and the file and line of the instruction (the inlined callee's, where
// inlined), which is what `go tool addr2line` prints.
//
// Shared by kiln's symbolizer and kiln-agent's. Parse is pure and checks
// every offset it follows: a corrupt table is an error (or an address
// without a name), never a crash.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kiln::symbols {

struct GoFrame {
  std::string function;  // "main.leaf", "runtime.mallocgc"
  std::string file;      // as the compiler recorded it, "" when unknown
  int64_t line = 0;      // 0 when unknown
  uint64_t entry = 0;    // the function's first address
  uint64_t end = 0;      // one past its last
};

class GoLineTable {
 public:
  // `data` is the .gopclntab section's contents; `text_address` is .text's
  // address (Go's readers use it, not the header's, which a PIE leaves
  // unrelocated).
  [[nodiscard]] static absl::StatusOr<GoLineTable> Parse(std::string data, uint64_t text_address);
  // The same over bytes it does not copy, which must stay valid while the
  // table is used: kiln-agent's unwind table builder reads libelf's section
  // while the ELF is open, instead of a copy of megabytes.
  [[nodiscard]] static absl::StatusOr<GoLineTable> ParseView(std::string_view data, uint64_t text_address);

  std::optional<GoFrame> Lookup(uint64_t address) const;
  uint32_t functions() const { return nfunc_; }
  // "1.18" (1.18, 1.19) or "1.20" (1.20 and later).
  std::string_view version() const { return version_; }
  // The i-th function's range and name (i < functions()), in address order.
  std::optional<GoFrame> Function(uint32_t i) const;
  // The bytes it holds (none when it only views them).
  size_t MemoryBytes() const { return owned_ ? owned_->capacity() : 0; }
  // The i-th function's lines: `f(start, end, file, line)` for each range
  // of addresses with one file and line (line 0: unknown). False when the
  // table is damaged.
  bool ForEachLine(uint32_t i, const std::function<void(uint64_t, uint64_t, std::string_view, int64_t)>& f) const;
  // The i-th function's stack pointer offsets: `f(start, end, delta)` for
  // each range of addresses where SP is `delta` bytes below its value at
  // entry (Go's pcsp table, what its own tracebacks unwind by). False when
  // the table is damaged.
  template <class F>
  bool ForEachSpDelta(uint32_t i, F f) const {
    std::optional<GoFrame> fn = Function(i);
    FuncRecord r;
    if (!fn || !Record(i, &r)) return false;
    return WalkPcValue(r.pcsp, fn->entry, [&](uint64_t start, uint64_t end, int64_t value) {
      return f(start, std::min(end, fn->end), value);
    });
  }

 private:
  GoLineTable() = default;
  bool U32(uint64_t offset, uint32_t* out) const;
  std::string_view CString(uint64_t table, uint64_t offset) const;
  // The fields of the i-th function's _func record that name and unwind
  // (offsets into the pc-value tables, its compilation unit); false when
  // the record lies outside the table.
  struct FuncRecord {
    uint32_t pcsp = 0, pcfile = 0, pcln = 0, cu = 0;
  };
  bool Record(uint32_t i, FuncRecord* out) const;
  // File `fileno` of compilation unit `cu`, "" when unknown.
  std::string_view FileName(uint32_t cu, int64_t fileno) const;
  // Calls f(start, end, value) for each range of a pc-value table from
  // `entry` until f returns false or the table ends; false when damaged.
  template <class F>
  bool WalkPcValue(uint32_t table_offset, uint64_t entry, F f) const {
    uint64_t at = pc_ + table_offset;
    auto varint = [&](uint32_t* out) {
      uint32_t v = 0;
      for (uint32_t shift = 0; shift < 35; shift += 7) {
        if (at >= data_.size()) return false;
        const uint8_t b = static_cast<uint8_t>(data_[at++]);
        v |= static_cast<uint32_t>(b & 0x7f) << shift;
        if ((b & 0x80) == 0) {
          *out = v;
          return true;
        }
      }
      return false;
    };
    // Pairs (value delta, zig-zag; pc delta, in quanta) until a zero value
    // delta after the first; each value holds up to its pc.
    int64_t value = -1;
    uint64_t cur = entry;
    for (int steps = 0; steps < (1 << 20); ++steps) {
      uint32_t uv = 0, pcd = 0;
      if (!varint(&uv)) return false;
      if (uv == 0 && cur != entry) return true;
      if (!varint(&pcd)) return false;
      const int32_t delta = (uv & 1) ? static_cast<int32_t>(~(uv >> 1)) : static_cast<int32_t>(uv >> 1);
      value += delta;
      const uint64_t start = cur;
      cur += static_cast<uint64_t>(pcd) * quantum_;
      if (!f(start, cur, value)) return true;
    }
    return false;
  }
  // The value of the pc-value table at `table_offset` for `pc`, or -1.
  int64_t PcValue(uint32_t table_offset, uint64_t entry, uint64_t pc) const;

  std::shared_ptr<const std::string> owned_;  // data_'s bytes, unless only viewed
  std::string_view data_;
  std::string_view version_;
  uint64_t text_ = 0;
  uint32_t nfunc_ = 0;
  uint32_t quantum_ = 1;
  uint64_t funcname_ = 0, cu_ = 0, file_ = 0, pc_ = 0, functab_ = 0;  // offsets in data_
};

// The .gopclntab of the ELF file at `path`: NotFound when it has none (not
// a Go program), InvalidArgument when it cannot be read, naming the file.
[[nodiscard]] absl::StatusOr<GoLineTable> ReadGoLineTable(const std::string& path);

}  // namespace kiln::symbols
