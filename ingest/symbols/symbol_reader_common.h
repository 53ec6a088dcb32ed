// What ReadSymbols does that is not about the ELF/DWARF library, shared by
// the two symbols backends (elf_symbols_elfutils.cpp on libelf/libdw,
// elf_symbols_llvm.cpp on LLVMObject/LLVMDebugInfoDWARF), and the small
// interface they implement for the driver in elf_symbols.cpp.
// Internal to ingest/symbols. One thread per object; no shared state.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "ingest/symbols/elf_symbols.h"
#include "storage/symbol_table.h"

namespace kiln::symbols::internal {

bool Cancelled(const SymbolReadOptions& options);

struct ElfFunction {
  uint64_t start, size;
  std::string name;  // demangled
};


// ELF function names by start address (the first one listed wins), for
// DWARF functions that have no linkage name.
class SymbolStarts {
 public:
  explicit SymbolStarts(const std::vector<ElfFunction>& functions);
  // The name of the symbol starting at `address`, or nullptr.
  const std::string* At(uint64_t address) const;

 private:
  struct Start {
    uint64_t address;
    const std::string* name;
  };
  std::vector<Start> starts_;
};

// Address ranges of the file's code sections (SHF_ALLOC and SHF_EXECINSTR).
// Line sequences and functions outside them are what the linker discarded
// (COMDAT duplicates, gc'ed sections) and left at address 0: they would
// overlap real code.
struct CodeRanges {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  // For each section header; ignores the rest.
  void AddSection(uint64_t flags, uint64_t address, uint64_t size);
  bool Contains(uint64_t a) const;
};

// Address ranges, for "is [start, end) inside one range added before".
class AddressRanges {
 public:
  void Add(uint64_t start, uint64_t end);
  bool Covers(uint64_t start, uint64_t end) const;
  void MergeFrom(AddressRanges& other);  // empties `other`

 private:
  std::map<uint64_t, uint64_t> ends_;  // start -> the largest end from it
};

struct DwarfCounts {
  size_t functions = 0, inlined = 0, lines = 0;
};

// What a backend does with a DIE of this tag (DW_TAG_* values from the
// DWARF standard, so neither library's header is needed here).
enum class DieKind {
  kFunction,     // DW_TAG_subprogram
  kInlinedCall,  // DW_TAG_inlined_subroutine
  kContainer,    // scopes that can hold code-bearing DIEs (blocks, namespaces, classes)
  kOther,        // types, variables, ...: nothing below them has code
};
DieKind KindOfTag(unsigned tag);
inline constexpr int kMaxDieDepth = 512;  // deeper nesting is garbage DWARF, not code

// Turns what a backend reads from DWARF into SymbolTableBuilder calls, with
// the rules both backends follow. The backend walks units and DIEs in file
// order and calls, per unit: StartUnit, its line table's rows in address
// order (LineRow/EndSequence, then EndLineTable), then AddFunction and
// AddInlinedCall for the DIEs.
//
// The first unit to describe an address wins, as in addr2line and
// llvm-symbolizer: ld.bfd points the DWARF of a discarded COMDAT copy (an
// inline function or template instance emitted by several units) at the
// kept copy's code, so later units may describe the same bytes again, with
// their own inlining. Such functions and line sequences are dropped.
class DwarfTableWriter {
 public:
  using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;

  // The scopes of the function or inlined call being walked: one, or (for a
  // function split into parts named by different ELF symbols, e.g. "f" and
  // "f.cold") one per part; an inlined call belongs to the part holding it.
  struct Parent {
    uint32_t scope = storage::SymbolTableBuilder::kNoScope;
    std::vector<std::tuple<uint64_t, uint64_t, uint32_t>> parts;
    uint32_t At(uint64_t address) const;
  };

  // All referenced objects outlive the writer. Progress covers 0..0.9 of
  // the read, by unit offset in .debug_info.
  DwarfTableWriter(const CodeRanges& code, const SymbolStarts& symbols, storage::SymbolTableBuilder& builder,
                   const SymbolReadOptions& options, uint64_t debug_info_size);

  // False when the read is cancelled. Reports progress.
  bool StartUnit(uint64_t unit_offset);

  // Line rows. Rows outside code are not passed (InCode); the backend
  // resolves a row's file only for rows it passes.
  bool InCode(uint64_t address) const { return code_.Contains(address); }
  void LineRow(uint64_t address, uint32_t file, int64_t line);
  void EndSequence(uint64_t address);
  void EndLineTable();  // a table without its end marker: the builder ends it

  // Drops empty ranges and those outside code sections.
  void KeepCode(Ranges* ranges) const;

  // A DWARF function with code (`ranges` after KeepCode, not empty). `name`
  // is its linkage name demangled when `linkage`, else DW_AT_name; `entry`
  // its DW_AT_entry_pc or DW_AT_low_pc when it has one.
  Parent AddFunction(uint32_t name, bool linkage, std::optional<uint64_t> entry, const Ranges& ranges);
  // An inlined call inside `parent` (whose scope is not kNoScope).
  Parent AddInlinedCall(const Parent& parent, uint32_t name, uint32_t call_file, uint64_t call_line,
                        const Ranges& ranges);

  uint32_t Intern(const std::string& s) { return builder_.Intern(s); }
  // The id of a DIE's name: a linkage name is demangled. `raw` is the
  // library's string, which must live as long as the writer: its address
  // is the cache key (names repeat in every unit that inlines a function).
  uint32_t InternName(const char* raw, bool linkage);
  // The library's strings are about to go (the backend ends its DWARF
  // handle mid-file): InternName's cache by address is emptied.
  void ForgetNameAddresses() { name_ids_.clear(); }
  const DwarfCounts& counts() const { return counts_; }
  const SymbolReadOptions& options() const { return options_; }

 private:
  struct Row {
    uint64_t address = 0;
    uint32_t file = 0;
    int64_t line = 0;
  };
  void FlushSequence();

  const CodeRanges& code_;
  const SymbolStarts& symbols_;
  storage::SymbolTableBuilder& builder_;
  const SymbolReadOptions& options_;
  uint64_t debug_info_size_;
  double last_reported_ = -1;
  DwarfCounts counts_;
  std::unordered_map<const char*, uint32_t> name_ids_;
  std::vector<Row> sequence_;  // the rows of the sequence being read
  bool in_sequence_ = false;
  // What earlier units and this one described (see the class comment).
  AddressRanges earlier_functions_, unit_functions_;
  AddressRanges earlier_sequences_, unit_sequences_;
};

// One ELF file opened and checked by the backend (see elf_checks.h).
class SymbolSource {
 public:
  virtual ~SymbolSource() = default;
  virtual const std::string& name() const = 0;
  // Appends the function symbols of every section of `section_type`
  // (kShtSymtab or kShtDynsym); returns how many.
  virtual size_t AddElfSymbols(uint32_t section_type, std::vector<ElfFunction>& out,
                               const SymbolReadOptions& options) const = 0;
  // .gnu_debugdata's raw bytes, empty when there is none; valid while this
  // object lives.
  virtual std::string_view GnuDebugData() const = 0;
  virtual CodeRanges CodeSections() const = 0;
  // Has a non-empty .debug_info or .zdebug_info.
  virtual bool HasDwarf() const = 0;
  virtual uint64_t DebugInfoSize() const = 0;
  // Reads every unit into `writer`. Errors name the file: FailedPrecondition
  // when this build's library cannot read the file's DWARF at all,
  // Cancelled, others when it is unreadable. A read that stopped part way
  // keeps what came before and adds a warning.
  virtual absl::Status ReadDwarf(DwarfTableWriter& writer, std::vector<std::string>* warnings) = 0;
};

// Implemented by the backend: the ELF file at `path`, or, when `bytes` is
// given, those bytes with `path` as their name in messages. Errors as
// ReadElfIdentity's.
[[nodiscard]] absl::StatusOr<std::unique_ptr<SymbolSource>> OpenSymbolSource(
    const std::string& path, const std::string_view* bytes = nullptr);

// OpenSymbolSource for a backend whose `Image` has Open(path) and
// FromBytes(bytes, name) and whose `Source` is constructed from an Image.
template <class Source, class Image>
absl::StatusOr<std::unique_ptr<SymbolSource>> OpenSymbolSourceWith(const std::string& path,
                                                                   const std::string_view* bytes) {
  auto image = bytes ? Image::FromBytes(*bytes, path) : Image::Open(path);
  if (!image.ok()) return image.status();
  return std::make_unique<Source>(*std::move(image));
}

}  // namespace kiln::symbols::internal
