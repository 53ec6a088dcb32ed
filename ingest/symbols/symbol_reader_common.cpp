#include "ingest/symbols/symbol_reader_common.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "ingest/symbols/demangle.h"
#include "ingest/symbols/elf_checks.h"

namespace kiln::symbols::internal {
namespace {

using storage::SymbolTableBuilder;

constexpr size_t kMaxRangesPerDie = 100000;  // more is garbage DWARF

}  // namespace

bool Cancelled(const SymbolReadOptions& options) {
  return options.cancel && options.cancel->load(std::memory_order_relaxed);
}

SymbolStarts::SymbolStarts(const std::vector<ElfFunction>& functions) {
  for (const ElfFunction& f : functions) starts_.push_back({f.start, &f.name});
  std::stable_sort(starts_.begin(), starts_.end(),
                   [](const Start& a, const Start& b) { return a.address < b.address; });
}

const std::string* SymbolStarts::At(uint64_t address) const {
  auto it = std::lower_bound(starts_.begin(), starts_.end(), address,
                             [](const Start& s, uint64_t a) { return s.address < a; });
  return it != starts_.end() && it->address == address ? it->name : nullptr;
}

void CodeRanges::AddSection(uint64_t flags, uint64_t address, uint64_t size) {
  if ((flags & kShfAlloc) && (flags & kShfExecInstr) && size > 0 && address + size > address)
    ranges.emplace_back(address, address + size);
}

bool CodeRanges::Contains(uint64_t a) const {
  if (ranges.empty()) return true;
  for (const auto& [s, e] : ranges)
    if (a >= s && a < e) return true;
  return false;
}

DieKind KindOfTag(unsigned tag) {
  switch (tag) {
    case 0x2e:  // DW_TAG_subprogram
      return DieKind::kFunction;
    case 0x1d:  // DW_TAG_inlined_subroutine
      return DieKind::kInlinedCall;
    case 0x0b:  // DW_TAG_lexical_block
    case 0x32:  // DW_TAG_try_block
    case 0x25:  // DW_TAG_catch_block
    case 0x39:  // DW_TAG_namespace
    case 0x1e:  // DW_TAG_module
    case 0x02:  // DW_TAG_class_type
    case 0x13:  // DW_TAG_structure_type
    case 0x17:  // DW_TAG_union_type
      return DieKind::kContainer;
    default:
      return DieKind::kOther;
  }
}

uint32_t DwarfTableWriter::Parent::At(uint64_t address) const {
  for (const auto& [s, e, sc] : parts)
    if (address >= s && address < e) return sc;
  return scope;
}

DwarfTableWriter::DwarfTableWriter(const CodeRanges& code, const SymbolStarts& symbols,
                                   SymbolTableBuilder& builder, const SymbolReadOptions& options,
                                   uint64_t debug_info_size)
    : code_(code),
      symbols_(symbols),
      builder_(builder),
      options_(options),
      debug_info_size_(debug_info_size) {}

bool DwarfTableWriter::StartUnit(uint64_t unit_offset) {
  if (Cancelled(options_)) return false;
  if (options_.progress && debug_info_size_ > 0) {
    double f = 0.9 * std::min(1.0, static_cast<double>(unit_offset) / static_cast<double>(debug_info_size_));
    if (f - last_reported_ >= 0.005) {
      options_.progress(f);
      last_reported_ = f;
    }
  }
  earlier_functions_.MergeFrom(unit_functions_);
  earlier_sequences_.MergeFrom(unit_sequences_);
  return true;
}

void DwarfTableWriter::LineRow(uint64_t address, uint32_t file, int64_t line) {
  // binutils keeps the last of several rows at one address (PR ld/4986).
  if (in_sequence_ && !sequence_.empty() && address == sequence_.back().address) {
    sequence_.back() = {address, file, line};
    return;
  }
  sequence_.push_back({address, file, line});
  in_sequence_ = true;
}

void DwarfTableWriter::EndSequence(uint64_t address) {
  if (in_sequence_ && !sequence_.empty()) {
    uint64_t start = sequence_.front().address;
    if (earlier_sequences_.Covers(start, address)) {
      sequence_.clear();
    } else {
      unit_sequences_.Add(start, address);
      FlushSequence();
      builder_.EndLineSequence(address);
    }
  }
  in_sequence_ = false;
}

void DwarfTableWriter::EndLineTable() {
  FlushSequence();
  in_sequence_ = false;
}

void DwarfTableWriter::FlushSequence() {
  for (const Row& row : sequence_) builder_.AddLine(row.address, row.file, row.line);
  counts_.lines += sequence_.size();
  sequence_.clear();
}

void AddressRanges::Add(uint64_t start, uint64_t end) {
  auto [it, added] = ends_.emplace(start, end);
  if (!added) it->second = std::max(it->second, end);
}

bool AddressRanges::Covers(uint64_t start, uint64_t end) const {
  auto it = ends_.upper_bound(start);
  if (it == ends_.begin()) return false;
  return std::prev(it)->second >= end;
}

void AddressRanges::MergeFrom(AddressRanges& other) {
  for (const auto& [start, end] : other.ends_) Add(start, end);
  other.ends_.clear();
}

uint32_t DwarfTableWriter::InternName(const char* raw, bool linkage) {
  if (!raw) return 0;
  auto it = name_ids_.find(raw);
  if (it != name_ids_.end()) return it->second;
  uint32_t id = builder_.Intern(linkage ? Demangle(raw) : std::string(raw));
  name_ids_.emplace(raw, id);
  return id;
}

void DwarfTableWriter::KeepCode(Ranges* ranges) const {
  if (ranges->size() > kMaxRangesPerDie) ranges->resize(kMaxRangesPerDie);
  std::erase_if(*ranges, [&](const auto& r) { return r.second <= r.first || !code_.Contains(r.first); });
}

// Without a linkage name (C, C++ static functions, lambdas, internal-linkage
// templates) DW_AT_name is unqualified ("ReadOk", "operator()"), so, as
// binutils and llvm-symbolizer do, each part is named after the ELF symbol
// at its start when there is one.
DwarfTableWriter::Parent DwarfTableWriter::AddFunction(uint32_t name, bool linkage,
                                                       std::optional<uint64_t> entry_pc,
                                                       const Ranges& ranges) {
  Parent p;
  if (std::all_of(ranges.begin(), ranges.end(),
                  [&](const auto& r) { return earlier_functions_.Covers(r.first, r.second); }))
    return p;  // another unit's copy of this code came first
  for (const auto& [s, e] : ranges) unit_functions_.Add(s, e);
  ++counts_.functions;
  if (linkage) {
    p.scope = builder_.AddScope(name, SymbolTableBuilder::kNoScope);
    for (const auto& [s, e] : ranges) builder_.AddRange(p.scope, s, e);
    return p;
  }
  uint64_t entry = entry_pc.value_or(ranges.front().first);
  const std::string* entry_symbol = symbols_.At(entry);
  uint32_t entry_name = entry_symbol ? builder_.Intern(*entry_symbol) : name;
  std::vector<std::pair<uint32_t, uint32_t>> name_scopes;  // name -> scope
  for (const auto& [s, e] : ranges) {
    const std::string* part_symbol = symbols_.At(s);
    uint32_t part_name = part_symbol ? builder_.Intern(*part_symbol) : entry_name;
    uint32_t scope = SymbolTableBuilder::kNoScope;
    for (const auto& [n, sc] : name_scopes)
      if (n == part_name) scope = sc;
    if (scope == SymbolTableBuilder::kNoScope) {
      scope = builder_.AddScope(part_name, SymbolTableBuilder::kNoScope);
      name_scopes.emplace_back(part_name, scope);
    }
    builder_.AddRange(scope, s, e);
    p.parts.emplace_back(s, e, scope);
    if (p.scope == SymbolTableBuilder::kNoScope || s == entry) p.scope = scope;
  }
  if (name_scopes.size() == 1) p.parts.clear();
  return p;
}

// A call split across parts of a split function (hot and .cold) gets one
// scope per part, each under its part's scope.
DwarfTableWriter::Parent DwarfTableWriter::AddInlinedCall(const Parent& parent, uint32_t name,
                                                          uint32_t call_file, uint64_t call_line,
                                                          const Ranges& ranges) {
  ++counts_.inlined;
  auto line = static_cast<int64_t>(std::min<uint64_t>(call_line, INT32_MAX));
  Parent call;
  std::vector<std::pair<uint32_t, uint32_t>> by_parent;  // parent scope -> scope
  for (const auto& [s, e] : ranges) {
    uint32_t parent_scope = parent.At(s);
    uint32_t scope = SymbolTableBuilder::kNoScope;
    for (const auto& [ps, sc] : by_parent)
      if (ps == parent_scope) scope = sc;
    if (scope == SymbolTableBuilder::kNoScope) {
      scope = builder_.AddScope(name, parent_scope, call_file, line);
      by_parent.emplace_back(parent_scope, scope);
    }
    builder_.AddRange(scope, s, e);
    call.parts.emplace_back(s, e, scope);
    if (call.scope == SymbolTableBuilder::kNoScope) call.scope = scope;
  }
  if (by_parent.size() == 1) call.parts.clear();
  return call;
}

}  // namespace kiln::symbols::internal
