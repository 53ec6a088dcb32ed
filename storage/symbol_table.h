// SymbolTable: names, source lines and inline chains for the addresses of one
// executable, in a compact immutable form that the store keeps per
// executable and applies to native frames at query time.
//
// Built once by SymbolTableBuilder (from ELF symbols and DWARF, see
// ingest/symbols), then only read: Lookup is const and safe from any number
// of threads. SymbolizedFrame views point into the table and stay valid for
// the table's lifetime.
//
// Layout: the address space is cut into disjoint intervals, each naming its
// innermost scope (a function, or an inlined call inside one). Scopes know
// their parent and the call site inside it, so one binary search gives the
// whole inline chain; a second one over the line rows gives the innermost
// file and line. Strings are interned once.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"

namespace kiln::storage {

// One level of a symbolized address.
struct SymbolizedFrame {
  std::string_view function;  // demangled; "" when unknown
  std::string_view file;      // source file; "" when unknown
  int64_t line = 0;           // 0 when unknown
  bool operator==(const SymbolizedFrame&) const = default;
};

class SymbolTable {
 public:
  SymbolTable() = default;

  // The chain for `address`, innermost (inlined) function first and the real
  // function last, as `addr2line -f -i` prints it: the innermost frame's
  // file:line comes from the line table, each outer frame's from the call
  // site of the frame inside it. Returns false (and an empty chain) when no
  // function covers the address.
  bool Lookup(uint64_t address, std::vector<SymbolizedFrame>* chain) const;

  size_t function_count() const { return function_count_; }
  size_t interval_count() const { return interval_start_.size(); }
  size_t line_count() const { return line_address_.size(); }
  bool has_inline_info() const { return has_inline_info_; }
  bool empty() const { return interval_start_.empty(); }
  size_t MemoryBytes() const;

  // Versioned varint encoding (the store compresses it); Deserialize checks
  // every index, so a corrupted blob is a DataLoss error, never a crash.
  std::string Serialize() const;
  [[nodiscard]] static absl::StatusOr<SymbolTable> Deserialize(std::string_view bytes);

 private:
  friend class SymbolTableBuilder;
  std::string_view String(uint32_t id) const;

  // Interned strings: string i is text_[string_end_[i-1] .. string_end_[i]).
  std::string text_;
  std::vector<uint32_t> string_end_;
  // Scopes. parent < own index (or kNoScope), so chains cannot cycle.
  std::vector<uint32_t> scope_name_;
  std::vector<uint32_t> scope_parent_;
  std::vector<uint32_t> scope_call_file_;
  std::vector<uint32_t> scope_call_line_;
  // Disjoint intervals: [interval_start_[i], interval_start_[i+1]) belongs to
  // interval_scope_[i] (kNoScope = a gap).
  std::vector<uint64_t> interval_start_;
  std::vector<uint32_t> interval_scope_;
  // Line rows sorted by address; a row with file kNoLine ends a sequence.
  std::vector<uint64_t> line_address_;
  std::vector<uint32_t> line_file_;
  std::vector<uint32_t> line_number_;
  size_t function_count_ = 0;
  bool has_inline_info_ = false;
};

// Collects symbols and DWARF facts in any order; Build() sorts and packs.
// Not thread-safe; one builder per executable being read.
class SymbolTableBuilder {
 public:
  static constexpr uint32_t kNoScope = UINT32_MAX;
  SymbolTableBuilder() = default;
  // A copy's string map would view the original's strings.
  SymbolTableBuilder(const SymbolTableBuilder&) = delete;
  SymbolTableBuilder& operator=(const SymbolTableBuilder&) = delete;

  // Interned string id; Intern("") == 0.
  uint32_t Intern(std::string_view s);

  // A DWARF function (parent == kNoScope) or an inlined call inside the
  // `parent` scope. `name` is the (inlined) callee; call_file/call_line is
  // the call site inside the parent. Parents must be added before children.
  uint32_t AddScope(uint32_t name, uint32_t parent, uint32_t call_file = 0, int64_t call_line = 0);
  // An address range [start, end) of a scope; a scope may have several.
  void AddRange(uint32_t scope, uint64_t start, uint64_t end);

  // An ELF symbol (.symtab, .dynsym, MiniDebugInfo): used only where no
  // DWARF function covers the address. size 0 = up to the next symbol. The
  // first symbol added for an address wins over later aliases.
  void AddSymbol(std::string_view name, uint64_t start, uint64_t size);

  // Line table rows of one sequence in address order, then its end.
  void AddLine(uint64_t address, uint32_t file, int64_t line);
  void EndLineSequence(uint64_t end_address);

  SymbolTable Build() &&;

 private:
  struct Range {
    uint64_t start, end;
    uint32_t scope;
  };
  struct ElfSymbol {
    uint64_t start, size;
    uint32_t name, order;
  };
  struct LineRow {
    uint64_t address;
    uint32_t file;  // kNoLine for a sequence end
    uint32_t line;
  };
  // Each string once: the map's keys view the deque's elements, which
  // never move.
  std::deque<std::string> strings_{""};
  std::unordered_map<std::string_view, uint32_t> string_ids_{{strings_.front(), 0}};
  std::vector<uint32_t> scope_name_, scope_parent_, scope_call_file_, scope_call_line_;
  std::vector<Range> ranges_;
  std::vector<ElfSymbol> symbols_;
  std::vector<LineRow> lines_;
};

}  // namespace kiln::storage
