#include "storage/symbol_table.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "storage/varint.h"

namespace kiln::storage {
namespace {

constexpr uint32_t kNoScope = SymbolTableBuilder::kNoScope;
constexpr uint32_t kNoLine = UINT32_MAX;  // line_file_ marker: a sequence ends here
constexpr uint32_t kFormatVersion = 1;
constexpr std::string_view kMagic = "KSYM";

uint32_t ClampLine(int64_t line) {
  if (line <= 0) return 0;
  return line >= kNoLine ? kNoLine - 1 : static_cast<uint32_t>(line);
}

// Change points of a piecewise-constant map address -> scope: from
// points[i].first on (up to the next point) the scope is points[i].second.
using ChangePoints = std::vector<std::pair<uint64_t, uint32_t>>;

void SetFrom(ChangePoints* points, uint64_t address, uint32_t scope) {
  if (!points->empty() && points->back().first == address) {
    points->back().second = scope;
    // Setting a point back to the previous value makes it redundant.
    if (points->size() >= 2 && (*points)[points->size() - 2].second == scope) points->pop_back();
    return;
  }
  if (points->empty() ? scope == kNoScope : points->back().second == scope) return;
  points->emplace_back(address, scope);
}

struct SweepRange {
  uint64_t start, end;
  uint32_t scope;
  uint32_t depth;
};

// Cuts properly nested ranges into disjoint pieces owned by the innermost
// range. DWARF promises nesting; where it is broken (overlapping siblings,
// a child reaching past its parent), the later range wins from its start and
// children are clipped to their parent, so the output is always well formed.
ChangePoints Sweep(std::vector<SweepRange> ranges) {
  std::sort(ranges.begin(), ranges.end(), [](const SweepRange& a, const SweepRange& b) {
    if (a.start != b.start) return a.start < b.start;
    if (a.depth != b.depth) return a.depth < b.depth;
    return a.end > b.end;
  });
  ChangePoints points;
  std::vector<SweepRange> open;
  auto close_until = [&](uint64_t address) {
    while (!open.empty() && open.back().end <= address) {
      uint64_t end = open.back().end;
      open.pop_back();
      SetFrom(&points, end, open.empty() ? kNoScope : open.back().scope);
    }
  };
  for (SweepRange r : ranges) {
    if (r.start >= r.end) continue;
    close_until(r.start);
    while (!open.empty() && open.back().depth >= r.depth) open.pop_back();
    if (!open.empty()) r.end = std::min(r.end, open.back().end);
    if (r.start >= r.end) continue;
    open.push_back(r);
    SetFrom(&points, r.start, r.scope);
  }
  close_until(std::numeric_limits<uint64_t>::max());
  return points;
}

// The scope at `address` in change points (kNoScope before the first).
class PointCursor {
 public:
  explicit PointCursor(const ChangePoints& p) : p_(p) {}
  uint32_t At(uint64_t address) {
    while (i_ < p_.size() && p_[i_].first <= address) ++i_;
    return i_ == 0 ? kNoScope : p_[i_ - 1].second;
  }

 private:
  const ChangePoints& p_;
  size_t i_ = 0;
};

}  // namespace

// [SECTION] Lookup

std::string_view SymbolTable::String(uint32_t id) const {
  if (id == 0 || id > string_end_.size()) return {};
  uint32_t begin = id == 1 ? 0 : string_end_[id - 2];
  return std::string_view(text_).substr(begin, string_end_[id - 1] - begin);
}

bool SymbolTable::Lookup(uint64_t address, std::vector<SymbolizedFrame>* chain) const {
  chain->clear();
  auto it = std::upper_bound(interval_start_.begin(), interval_start_.end(), address);
  if (it == interval_start_.begin()) return false;
  uint32_t scope = interval_scope_[static_cast<size_t>(it - interval_start_.begin()) - 1];
  if (scope == kNoScope) return false;

  SymbolizedFrame innermost{String(scope_name_[scope]), {}, 0};
  auto row = std::upper_bound(line_address_.begin(), line_address_.end(), address);
  if (row != line_address_.begin()) {
    size_t r = static_cast<size_t>(row - line_address_.begin()) - 1;
    if (line_file_[r] != kNoLine) {
      innermost.file = String(line_file_[r]);
      innermost.line = line_number_[r];
    }
  }
  chain->push_back(innermost);
  for (uint32_t s = scope; scope_parent_[s] != kNoScope; s = scope_parent_[s]) {
    chain->push_back({String(scope_name_[scope_parent_[s]]), String(scope_call_file_[s]),
                      static_cast<int64_t>(scope_call_line_[s])});
  }
  return true;
}

size_t SymbolTable::MemoryBytes() const {
  return text_.capacity() + string_end_.capacity() * 4 +
         (scope_name_.capacity() + scope_parent_.capacity() + scope_call_file_.capacity() +
          scope_call_line_.capacity()) *
             4 +
         interval_start_.capacity() * 8 + interval_scope_.capacity() * 4 + line_address_.capacity() * 8 +
         (line_file_.capacity() + line_number_.capacity()) * 4;
}

// [SECTION] Builder

uint32_t SymbolTableBuilder::Intern(std::string_view s) {
  if (auto it = string_ids_.find(s); it != string_ids_.end()) return it->second;
  const auto id = static_cast<uint32_t>(strings_.size());
  string_ids_.emplace(strings_.emplace_back(s), id);  // the key views the deque's copy
  return id;
}

uint32_t SymbolTableBuilder::AddScope(uint32_t name, uint32_t parent, uint32_t call_file, int64_t call_line) {
  auto id = static_cast<uint32_t>(scope_name_.size());
  // A parent that does not exist yet would allow cycles; treat it as none.
  scope_name_.push_back(name < strings_.size() ? name : 0);
  scope_parent_.push_back(parent < id ? parent : kNoScope);
  scope_call_file_.push_back(call_file < strings_.size() ? call_file : 0);
  scope_call_line_.push_back(ClampLine(call_line));
  return id;
}

void SymbolTableBuilder::AddRange(uint32_t scope, uint64_t start, uint64_t end) {
  if (scope < scope_name_.size() && start < end) ranges_.push_back({start, end, scope});
}

void SymbolTableBuilder::AddSymbol(std::string_view name, uint64_t start, uint64_t size) {
  if (name.empty()) return;
  symbols_.push_back({start, size, Intern(name), static_cast<uint32_t>(symbols_.size())});
}

void SymbolTableBuilder::AddLine(uint64_t address, uint32_t file, int64_t line) {
  lines_.push_back({address, file < strings_.size() ? file : 0, ClampLine(line)});
}

void SymbolTableBuilder::EndLineSequence(uint64_t end_address) {
  lines_.push_back({end_address, kNoLine, 0});
}

SymbolTable SymbolTableBuilder::Build() && {
  SymbolTable t;
  t.scope_name_ = std::move(scope_name_);
  t.scope_parent_ = std::move(scope_parent_);
  t.scope_call_file_ = std::move(scope_call_file_);
  t.scope_call_line_ = std::move(scope_call_line_);
  const auto dwarf_scopes = static_cast<uint32_t>(t.scope_name_.size());

  // DWARF: depth from the parent chain (parents come first).
  std::vector<uint32_t> depth(dwarf_scopes, 0);
  for (uint32_t s = 0; s < dwarf_scopes; ++s) {
    if (t.scope_parent_[s] != kNoScope) {
      depth[s] = depth[t.scope_parent_[s]] + 1;
      t.has_inline_info_ = true;
    }
  }
  std::vector<SweepRange> dwarf;
  dwarf.reserve(ranges_.size());
  for (const Range& r : ranges_) dwarf.push_back({r.start, r.end, r.scope, depth[r.scope]});
  ranges_ = {};
  ChangePoints from_dwarf = Sweep(std::move(dwarf));

  // ELF symbols: one scope per distinct start (first added wins), reaching
  // to start + size, or to the next symbol when the size is unknown.
  std::sort(symbols_.begin(), symbols_.end(), [](const ElfSymbol& a, const ElfSymbol& b) {
    return a.start != b.start ? a.start < b.start : a.order < b.order;
  });
  std::vector<SweepRange> elf;
  for (size_t i = 0; i < symbols_.size(); ++i) {
    if (i > 0 && symbols_[i].start == symbols_[i - 1].start) continue;
    const ElfSymbol& sym = symbols_[i];
    uint64_t end = sym.start + sym.size;
    if (sym.size == 0 || end < sym.start) {
      size_t next = i + 1;
      while (next < symbols_.size() && symbols_[next].start == sym.start) ++next;
      end = next < symbols_.size() ? symbols_[next].start : sym.start + 1;
    }
    auto scope = static_cast<uint32_t>(t.scope_name_.size());
    t.scope_name_.push_back(sym.name);
    t.scope_parent_.push_back(kNoScope);
    t.scope_call_file_.push_back(0);
    t.scope_call_line_.push_back(0);
    elf.push_back({sym.start, end, scope, 0});
  }
  symbols_ = {};
  ChangePoints from_elf = Sweep(std::move(elf));

  // DWARF wherever it covers an address, ELF symbols in the gaps.
  std::vector<uint64_t> boundaries;
  boundaries.reserve(from_dwarf.size() + from_elf.size());
  for (const auto& p : from_dwarf) boundaries.push_back(p.first);
  for (const auto& p : from_elf) boundaries.push_back(p.first);
  std::sort(boundaries.begin(), boundaries.end());
  boundaries.erase(std::unique(boundaries.begin(), boundaries.end()), boundaries.end());
  ChangePoints merged;
  PointCursor d(from_dwarf), e(from_elf);
  for (uint64_t b : boundaries) {
    uint32_t s = d.At(b);
    SetFrom(&merged, b, s != kNoScope ? s : e.At(b));
  }
  t.interval_start_.reserve(merged.size());
  t.interval_scope_.reserve(merged.size());
  std::vector<bool> used(t.scope_name_.size(), false);
  for (const auto& [address, scope] : merged) {
    t.interval_start_.push_back(address);
    t.interval_scope_.push_back(scope);
    if (scope == kNoScope) continue;
    uint32_t root = scope;
    while (t.scope_parent_[root] != kNoScope) root = t.scope_parent_[root];
    if (!used[root]) {
      used[root] = true;
      ++t.function_count_;
    }
  }

  // Line rows: at one address a sequence end sorts before a row that starts
  // the next sequence there, so the lookup (last row <= address) finds the
  // row. Rows at equal addresses keep their order: the last one applies.
  std::stable_sort(lines_.begin(), lines_.end(), [](const LineRow& a, const LineRow& b) {
    if (a.address != b.address) return a.address < b.address;
    return (a.file == kNoLine) > (b.file == kNoLine);
  });
  t.line_address_.reserve(lines_.size());
  t.line_file_.reserve(lines_.size());
  t.line_number_.reserve(lines_.size());
  for (const LineRow& row : lines_) {
    t.line_address_.push_back(row.address);
    t.line_file_.push_back(row.file);
    t.line_number_.push_back(row.line);
  }
  lines_ = {};

  // The names of a large C++ program are tens of MB: each is copied into
  // the text once, into a text reserved to its size (grown by doubling it
  // was twice that), and freed as it is copied.
  string_ids_ = {};
  size_t text_bytes = 0;
  for (const std::string& str : strings_) text_bytes += str.size();
  t.text_.reserve(text_bytes);
  t.string_end_.reserve(strings_.size() - 1);
  for (size_t i = 1; i < strings_.size(); ++i) {
    t.text_ += strings_[i];
    std::string().swap(strings_[i]);
    t.string_end_.push_back(static_cast<uint32_t>(t.text_.size()));
  }
  strings_ = {""};
  string_ids_ = {{strings_.front(), 0}};
  return t;
}

// [SECTION] Serialization
//
// "KSYM" | varint version | varint fields..., addresses delta-encoded.
// Compression is left to the store (a blob column family with zstd).

std::string SymbolTable::Serialize() const {
  std::string out(kMagic);
  PutVarint(&out, kFormatVersion);
  PutVarint(&out, has_inline_info_ ? 1 : 0);
  PutVarint(&out, function_count_);
  PutVarint(&out, string_end_.size());
  for (uint32_t end : string_end_) PutVarint(&out, end);
  out += text_;
  PutVarint(&out, scope_name_.size());
  for (size_t i = 0; i < scope_name_.size(); ++i) {
    PutVarint(&out, scope_name_[i]);
    // The parent as its distance back (0 = none): small numbers, and a
    // parent can only come before its child.
    PutVarint(&out, scope_parent_[i] == kNoScope ? 0 : i - scope_parent_[i]);
    PutVarint(&out, scope_call_file_[i]);
    PutVarint(&out, scope_call_line_[i]);
  }
  PutVarint(&out, interval_start_.size());
  uint64_t previous = 0;
  for (size_t i = 0; i < interval_start_.size(); ++i) {
    PutVarint(&out, interval_start_[i] - previous);
    previous = interval_start_[i];
    PutVarint(&out, interval_scope_[i] == kNoScope ? 0 : uint64_t{interval_scope_[i]} + 1);
  }
  PutVarint(&out, line_address_.size());
  previous = 0;
  for (size_t i = 0; i < line_address_.size(); ++i) {
    PutVarint(&out, line_address_[i] - previous);
    previous = line_address_[i];
    PutVarint(&out, line_file_[i] == kNoLine ? 0 : uint64_t{line_file_[i]} + 1);
    PutVarint(&out, line_number_[i]);
  }
  return out;
}

absl::StatusOr<SymbolTable> SymbolTable::Deserialize(std::string_view bytes) {
  const char* p = bytes.data();
  const char* end = p + bytes.size();
  auto fail = [&](std::string_view what) {
    return absl::DataLossError(absl::StrCat("symbol table: ", std::string(what), " at byte ",
                                            p - bytes.data(), " of ", bytes.size()));
  };
  if (bytes.substr(0, kMagic.size()) != kMagic) return fail("bad magic");
  p += kMagic.size();
  uint64_t v = 0;
  auto next = [&](uint64_t* out) { return GetVarint(&p, end, out); };
  // Counts are checked against the bytes left (each entry takes at least
  // one byte), so a corrupted count cannot make us allocate gigabytes.
  auto count = [&](uint64_t* out, uint64_t min_bytes_each) {
    return next(out) && *out <= static_cast<uint64_t>(end - p) / min_bytes_each;
  };
  if (!next(&v)) return fail("truncated version");
  if (v != kFormatVersion) {
    return absl::DataLossError(absl::StrCat("symbol table format ", v, ", this kiln reads ", kFormatVersion));
  }
  SymbolTable t;
  if (!next(&v)) return fail("truncated header");
  t.has_inline_info_ = v != 0;
  if (!next(&v)) return fail("truncated header");
  t.function_count_ = v;

  uint64_t n = 0;
  if (!count(&n, 1)) return fail("bad string count");
  t.string_end_.resize(n);
  uint64_t last_end = 0;
  for (auto& e : t.string_end_) {
    if (!next(&v) || v < last_end || v > UINT32_MAX) return fail("bad string offset");
    e = static_cast<uint32_t>(v);
    last_end = v;
  }
  if (last_end > static_cast<uint64_t>(end - p)) return fail("truncated string text");
  t.text_.assign(p, last_end);
  p += last_end;
  const uint64_t strings = n + 1;  // id 0 is ""

  if (!count(&n, 4)) return fail("bad scope count");
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t name, back, file, line;
    if (!next(&name) || !next(&back) || !next(&file) || !next(&line)) return fail("truncated scope");
    if (name >= strings || file >= strings || back > i || line > UINT32_MAX) {
      return fail(absl::StrCat("scope ", i, " refers past its tables"));
    }
    t.scope_name_.push_back(static_cast<uint32_t>(name));
    t.scope_parent_.push_back(back == 0 ? kNoScope : static_cast<uint32_t>(i - back));
    t.scope_call_file_.push_back(static_cast<uint32_t>(file));
    t.scope_call_line_.push_back(static_cast<uint32_t>(line));
  }
  const uint64_t scopes = n;

  if (!count(&n, 2)) return fail("bad interval count");
  uint64_t address = 0;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t delta, scope;
    if (!next(&delta) || !next(&scope)) return fail("truncated interval");
    if ((i > 0 && delta == 0) || address + delta < address || scope > scopes) {
      return fail(absl::StrCat("interval ", i, " out of order or out of range"));
    }
    address += delta;
    t.interval_start_.push_back(address);
    t.interval_scope_.push_back(scope == 0 ? kNoScope : static_cast<uint32_t>(scope - 1));
  }

  if (!count(&n, 3)) return fail("bad line count");
  address = 0;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t delta, file, line;
    if (!next(&delta) || !next(&file) || !next(&line)) return fail("truncated line row");
    if (address + delta < address || file > strings || line >= kNoLine) {
      return fail(absl::StrCat("line row ", i, " out of range"));
    }
    address += delta;
    t.line_address_.push_back(address);
    t.line_file_.push_back(file == 0 ? kNoLine : static_cast<uint32_t>(file - 1));
    t.line_number_.push_back(static_cast<uint32_t>(line));
  }
  if (p != end) return fail("trailing bytes");
  return t;
}

}  // namespace kiln::storage
