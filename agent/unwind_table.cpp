#include "unwind_table.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>

#include "ingest/symbols/go_pclntab.h"
#include "ingest/symbols/elf_image_elfutils.h"

namespace kiln::agent {
namespace {

using symbols::internal::ElfImage;

// DWARF register numbers (System V x86-64 psABI, figure 3.36).
constexpr int kRegFp = 6;   // rbp
constexpr int kRegSp = 7;   // rsp
constexpr int kRegPc = 16;  // return address column

std::string DwError() { return dwarf_errmsg(-1); }

struct DwarfCloser {
  void operator()(Dwarf* d) const { dwarf_end(d); }
};
using DwarfPtr = std::unique_ptr<Dwarf, DwarfCloser>;
struct CfiCloser {
  void operator()(Dwarf_CFI* c) const { dwarf_cfi_end(c); }
};
using CfiPtr = std::unique_ptr<Dwarf_CFI, CfiCloser>;


// Reads one DW_EH_PE-encoded value from .eh_frame_hdr. Only the encodings
// linkers write there (absolute or pc/data relative 4- and 8-byte values);
// anything else is refused rather than guessed.
bool ReadEncoded(const std::uint8_t*& p, const std::uint8_t* end, std::uint8_t enc, std::uint64_t section_vaddr,
                 const std::uint8_t* section_start, std::uint64_t* out) {
  if (enc == DW_EH_PE_omit) return false;
  std::uint64_t field_vaddr = section_vaddr + static_cast<std::uint64_t>(p - section_start);
  std::int64_t v = 0;
  auto need = [&](std::size_t n) { return static_cast<std::size_t>(end - p) >= n; };
  switch (enc & 0x0f) {
    case DW_EH_PE_absptr:
    case DW_EH_PE_udata8:
    case DW_EH_PE_sdata8: {
      if (!need(8)) return false;
      std::uint64_t u;
      std::memcpy(&u, p, 8);
      v = static_cast<std::int64_t>(u);
      p += 8;
      break;
    }
    case DW_EH_PE_udata4: {
      if (!need(4)) return false;
      std::uint32_t u;
      std::memcpy(&u, p, 4);
      v = u;
      p += 4;
      break;
    }
    case DW_EH_PE_sdata4: {
      if (!need(4)) return false;
      std::int32_t s;
      std::memcpy(&s, p, 4);
      v = s;
      p += 4;
      break;
    }
    default:
      return false;
  }
  switch (enc & 0x70) {
    case 0:
      break;
    case DW_EH_PE_pcrel:
      v += static_cast<std::int64_t>(field_vaddr);
      break;
    case DW_EH_PE_datarel:
      v += static_cast<std::int64_t>(section_vaddr);
      break;
    default:
      return false;
  }
  *out = static_cast<std::uint64_t>(v);
  return true;
}

// FDE start addresses from .eh_frame_hdr's binary search table, sorted.
Result<std::vector<std::uint64_t>> EhFrameHdrStarts(Elf* elf) {
  using R = Result<std::vector<std::uint64_t>>;
  auto hdr = symbols::internal::FindSectionWithData(elf, ".eh_frame_hdr");
  if (!hdr) return R::Error("no .eh_frame_hdr");
  Elf_Data* data = elf_getdata(hdr->scn, nullptr);
  if (!data || data->d_size < 4) return R::Error(".eh_frame_hdr is truncated");
  const auto* start = static_cast<const std::uint8_t*>(data->d_buf);
  const auto* end = start + data->d_size;
  const std::uint8_t* p = start;
  std::uint8_t version = p[0], ptr_enc = p[1], count_enc = p[2], table_enc = p[3];
  p += 4;
  if (version != 1) return R::Error(".eh_frame_hdr version " + std::to_string(version));
  std::uint64_t eh_frame_ptr = 0, count = 0;
  if (!ReadEncoded(p, end, ptr_enc, hdr->shdr.sh_addr, start, &eh_frame_ptr) ||
      !ReadEncoded(p, end, count_enc, hdr->shdr.sh_addr, start, &count))
    return R::Error(".eh_frame_hdr has no search table");
  std::size_t entry_size = (table_enc & 0x0f) == DW_EH_PE_sdata4 || (table_enc & 0x0f) == DW_EH_PE_udata4 ? 8 : 16;
  if (count > static_cast<std::uint64_t>(end - p) / entry_size)
    return R::Error(".eh_frame_hdr claims " + std::to_string(count) + " FDEs, more than it holds");
  std::vector<std::uint64_t> starts;
  starts.reserve(count);
  for (std::uint64_t i = 0; i < count; ++i) {
    std::uint64_t loc = 0, fde = 0;
    if (!ReadEncoded(p, end, table_enc, hdr->shdr.sh_addr, start, &loc) ||
        !ReadEncoded(p, end, table_enc, hdr->shdr.sh_addr, start, &fde))
      return R::Error(".eh_frame_hdr search table uses an unsupported encoding");
    starts.push_back(loc);
  }
  // The table is sorted by definition; a damaged one must not make us loop.
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  return starts;
}

// FDE start addresses in .debug_frame (absolute, address-sized), sorted.
std::vector<std::uint64_t> DebugFrameStarts(Elf* elf) {
  std::vector<std::uint64_t> starts;
  auto sec = symbols::internal::FindSectionWithData(elf, ".debug_frame");
  if (!sec) return starts;
  Elf_Data* data = elf_getdata(sec->scn, nullptr);
  const unsigned char* ident = reinterpret_cast<const unsigned char*>(elf_getident(elf, nullptr));
  if (!data || !ident) return starts;
  std::size_t addr_size = ident[EI_CLASS] == ELFCLASS64 ? 8 : 4;
  Dwarf_Off offset = 0;
  while (offset < data->d_size) {
    Dwarf_Off next = 0;
    Dwarf_CFI_Entry entry;
    if (dwarf_next_cfi(ident, data, false, offset, &next, &entry) != 0 || next <= offset) break;
    offset = next;
    if (dwarf_cfi_cie_p(&entry)) continue;
    if (static_cast<std::size_t>(entry.fde.end - entry.fde.start) < addr_size) continue;
    std::uint64_t loc = 0;
    std::memcpy(&loc, entry.fde.start, addr_size);
    starts.push_back(loc);
  }
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  return starts;
}

bool IsBreg(const Dwarf_Op& op, int reg) { return op.atom == DW_OP_breg0 + reg; }

// CFA = reg + offset: libdw gives DW_CFA_def_cfa as one DW_OP_bregx (a
// DW_CFA_def_cfa_expression may also say it with DW_OP_bregN).
bool CfaIsRegOffset(const Dwarf_Op* ops, std::size_t n, int* reg, std::int64_t* offset) {
  if (n != 1) return false;
  if (ops[0].atom == DW_OP_bregx) {
    if (ops[0].number > 255) return false;
    *reg = static_cast<int>(ops[0].number);
    *offset = static_cast<std::int64_t>(ops[0].number2);
    return true;
  }
  if (ops[0].atom < DW_OP_breg0 || ops[0].atom > DW_OP_breg31) return false;
  *reg = ops[0].atom - DW_OP_breg0;
  *offset = static_cast<std::int64_t>(ops[0].number);
  return true;
}

// The expression every x86-64 linker puts in the CFI of a lazy-binding PLT:
// CFA = rsp + 8 + ((rip & 15) >= K ? 8 : 0), K = 11 (ld) or 10 (gold).
bool CfaIsX86Plt(const Dwarf_Op* ops, std::size_t n, std::int32_t* threshold) {
  if (n != 9 || !IsBreg(ops[0], kRegSp) || ops[0].number != 8 || !IsBreg(ops[1], kRegPc) ||
      ops[2].atom != DW_OP_lit15 || ops[3].atom != DW_OP_and || ops[5].atom != DW_OP_ge ||
      ops[6].atom != DW_OP_lit3 || ops[7].atom != DW_OP_shl || ops[8].atom != DW_OP_plus)
    return false;
  if (ops[4].atom < DW_OP_lit0 || ops[4].atom > DW_OP_lit31) return false;
  *threshold = ops[4].atom - DW_OP_lit0;
  return true;
}

// Signal trampolines (glibc's __restore_rt) describe the interrupted frame
// with CFA = *(rsp + offset of the saved rsp in the ucontext).
bool CfaIsSpDeref(const Dwarf_Op* ops, std::size_t n, std::int64_t* offset) {
  if (n != 2 || !IsBreg(ops[0], kRegSp) || ops[1].atom != DW_OP_deref) return false;
  *offset = static_cast<std::int64_t>(ops[0].number);
  return true;
}

bool FitsWords(std::int64_t bytes, std::int8_t* words) {
  if (bytes % 8 != 0 || bytes / 8 < INT8_MIN || bytes / 8 > INT8_MAX) return false;
  *words = static_cast<std::int8_t>(bytes / 8);
  return true;
}

enum class RegKind { kSame, kUndefined, kAtCfa, kAtSp, kOther };

// Classifies libdw's location description of a caller register.
RegKind ClassifyRegister(Dwarf_Frame* frame, int reg, std::int64_t* offset) {
  Dwarf_Op mem[3];
  Dwarf_Op* ops = nullptr;
  std::size_t n = 0;
  if (dwarf_frame_register(frame, reg, mem, &ops, &n) != 0) return RegKind::kOther;
  if (n == 0) return ops == nullptr ? RegKind::kSame : RegKind::kUndefined;
  // DW_CFA_offset: "saved at CFA + N" = call_frame_cfa [, plus_uconst N].
  if (ops[0].atom == DW_OP_call_frame_cfa) {
    if (n == 1) {
      *offset = 0;
      return RegKind::kAtCfa;
    }
    // DW_CFA_expression: libdw pushes the CFA first, as DWARF says, then
    // the expression; glibc's signal trampoline uses "rsp + N".
    if (n == 2 && IsBreg(ops[1], kRegSp)) {
      *offset = static_cast<std::int64_t>(ops[1].number);
      return RegKind::kAtSp;
    }
    if (n == 2 && ops[1].atom == DW_OP_plus_uconst) {
      *offset = static_cast<std::int64_t>(ops[1].number);
      return RegKind::kAtCfa;
    }
    if (n == 3 && ops[1].atom == DW_OP_consts && ops[2].atom == DW_OP_plus) {
      *offset = static_cast<std::int64_t>(ops[1].number);
      return RegKind::kAtCfa;
    }
    return RegKind::kOther;
  }
  return RegKind::kOther;
}

UnwindRow PackRow(std::uint64_t pc, int cfa_rule, std::int64_t cfa_offset, int fp_rule, std::int64_t fp_offset) {
  UnwindRow row{};
  row.pc = static_cast<__u32>(pc);
  if (cfa_rule == KILN_CFA_OUTERMOST || cfa_rule == KILN_CFA_UNSUPPORTED || cfa_rule == KILN_CFA_NONE) {
    row.rules = static_cast<__u8>(cfa_rule);
    return row;
  }
  std::int64_t words = cfa_rule == KILN_CFA_PLT ? cfa_offset : cfa_offset / 8;
  if ((cfa_rule != KILN_CFA_PLT && cfa_offset % 8 != 0) || words < INT16_MIN || words > INT16_MAX) {
    row.rules = KILN_CFA_UNSUPPORTED;
    return row;
  }
  std::int8_t fp_words = 0;
  if (fp_rule == KILN_REG_AT_CFA || fp_rule == KILN_REG_AT_SP) {
    if (!FitsWords(fp_offset, &fp_words)) fp_rule = KILN_REG_UNKNOWN;
  }
  row.cfa_offset = static_cast<__s16>(words);
  row.rules = static_cast<__u8>(cfa_rule | (fp_rule << 4));
  row.fp_offset = fp_words;
  return row;
}

UnwindRow RowFromFrame(Dwarf_Frame* frame, std::uint64_t pc) {
  Dwarf_Addr start = 0, end = 0;
  bool signal = false;
  int ra_reg = dwarf_frame_info(frame, &start, &end, &signal);
  Dwarf_Op* ops = nullptr;
  std::size_t n = 0;
  int reg = 0, cfa_rule = KILN_CFA_UNSUPPORTED;
  std::int64_t cfa_offset = 0, offset = 0;
  std::int32_t threshold = 0;
  if (dwarf_frame_cfa(frame, &ops, &n) != 0 || n == 0) {
    cfa_rule = KILN_CFA_UNSUPPORTED;
  } else if (CfaIsRegOffset(ops, n, &reg, &offset) && (reg == kRegSp || reg == kRegFp)) {
    cfa_rule = reg == kRegSp ? KILN_CFA_SP : KILN_CFA_FP;
    cfa_offset = offset;
  } else if (CfaIsX86Plt(ops, n, &threshold)) {
    cfa_rule = KILN_CFA_PLT;
    cfa_offset = threshold;
  } else if (CfaIsSpDeref(ops, n, &offset) && offset >= 0) {
    cfa_rule = KILN_CFA_SP_DEREF;
    cfa_offset = offset;
  }

  // The row format keeps no return-address offset: it is at CFA - 8, or in
  // a signal frame in the word after the saved SP. Anything else (the
  // return address in another register, as in setcontext) is unsupported.
  std::int64_t ra_off = 0;
  RegKind ra = ra_reg >= 0 ? ClassifyRegister(frame, ra_reg, &ra_off) : RegKind::kOther;
  if (ra == RegKind::kUndefined) {
    cfa_rule = KILN_CFA_OUTERMOST;
  } else if (cfa_rule == KILN_CFA_SP_DEREF) {
    if (ra != RegKind::kAtSp || ra_off != cfa_offset + 8) cfa_rule = KILN_CFA_UNSUPPORTED;
  } else if (cfa_rule != KILN_CFA_UNSUPPORTED) {
    if (ra != RegKind::kAtCfa || ra_off != -8) cfa_rule = KILN_CFA_UNSUPPORTED;
  }

  std::int64_t fp_off = 0;
  int fp_rule = KILN_REG_UNKNOWN;
  switch (ClassifyRegister(frame, kRegFp, &fp_off)) {
    case RegKind::kSame: fp_rule = KILN_REG_SAME; break;
    case RegKind::kAtCfa: fp_rule = KILN_REG_AT_CFA; break;
    case RegKind::kAtSp: fp_rule = KILN_REG_AT_SP; break;
    default: fp_rule = KILN_REG_UNKNOWN; break;
  }
  return PackRow(pc, cfa_rule, cfa_offset, fp_rule, fp_off);
}

bool SameRule(const UnwindRow& a, const UnwindRow& b) {
  return a.rules == b.rules && a.cfa_offset == b.cfa_offset && a.fp_offset == b.fp_offset;
}

// Half-open ranges of rows, before merging: [row.pc, end) -> row. 12 bytes:
// a 100 MB library has over a million of them.
struct Span {
  std::uint32_t end;
  UnwindRow row;
  std::uint32_t start() const { return row.pc; }
};

// Where rows go as a build makes them, in pc order: kept whole (the
// table's rows) or compacted as they come (CompactRowWriter), so that the
// agent never holds a large file's full rows.
class RowOutput {
 public:
  virtual ~RowOutput() = default;
  // false when the row is refused; error() says why.
  virtual bool Add(const UnwindRow& row) = 0;
  virtual std::string error() const { return {}; }
};

class FullRows : public RowOutput {
 public:
  explicit FullRows(std::vector<UnwindRow>& rows) : rows_(rows) {}
  bool Add(const UnwindRow& row) override {
    rows_.push_back(row);
    return true;
  }

 private:
  std::vector<UnwindRow>& rows_;
};

class CompactOutput : public RowOutput {
 public:
  explicit CompactOutput(UnwindInfoTable& infos) : writer(infos) {}
  bool Add(const UnwindRow& row) override { return writer.Add(row); }
  std::string error() const override { return writer.error(); }
  CompactRowWriter writer;
};

// Spans in start order -> rows: a "no CFI" row over each gap, neighbours
// with one rule merged, a closing "no CFI" row. Where two spans cover one
// address the first one taken wins.
class RowStream {
 public:
  RowStream(RowOutput& out, UnwindTableStats& stats) : out_(out), stats_(stats) {}
  bool Take(const Span& s) {
    // Spans arrive in start order (MergeSpans sorts them); a single source
    // taken directly that is not in order is damaged.
    if (s.start() < last_start_) {
      error_ = "call frame information out of order";
      return false;
    }
    last_start_ = s.start();
    if (s.end <= covered_to_) return true;  // fully shadowed (.debug_frame under .eh_frame)
    std::uint64_t start = std::max<std::uint64_t>(s.start(), covered_to_);
    if (start > covered_to_ && covered_to_ != 0) {
      UnwindRow gap{};
      gap.pc = static_cast<__u32>(covered_to_);
      gap.rules = KILN_CFA_NONE;
      if (!Emit(gap)) return false;
    }
    UnwindRow row = s.row;
    row.pc = static_cast<__u32>(start);
    if (KILN_CFA_RULE_OF(&row) == KILN_CFA_UNSUPPORTED) ++stats_.unsupported_rows;
    if (KILN_CFA_RULE_OF(&row) == KILN_CFA_OUTERMOST) ++stats_.outermost_rows;
    if (!Emit(row)) return false;
    covered_to_ = s.end;
    return true;
  }
  bool Finish() {
    UnwindRow last{};
    last.pc = static_cast<__u32>(covered_to_);
    last.rules = KILN_CFA_NONE;
    ++stats_.rows;
    return out_.Add(last);
  }
  std::string error() const { return error_.empty() ? out_.error() : error_; }

 private:
  bool Emit(const UnwindRow& row) {
    if (have_last_ && SameRule(last_, row)) return true;
    last_ = row;
    have_last_ = true;
    ++stats_.rows;
    return out_.Add(row);
  }
  RowOutput& out_;
  UnwindTableStats& stats_;
  std::uint64_t covered_to_ = 0;
  std::uint32_t last_start_ = 0;
  UnwindRow last_{};
  bool have_last_ = false;
  std::string error_;
};

// Spans from each source of call frame information in turn (.eh_frame, the
// file's and then its debug file's .debug_frame, Go's line table): where
// two cover one address, the earlier source wins. With one source (most
// files: .eh_frame alone) its spans come in order and go straight to
// `direct`; with more, each source is kept, as a deque, not one vector: a
// vector that doubles holds its old and new buffers at once (36 MB for
// libLLVM's 1.3 M spans, the agent's peak), a deque grows a block at a
// time, and MergeSpans frees its blocks as it consumes them.
struct SpanSources {
  RowStream* direct = nullptr;
  std::vector<std::deque<Span>> sources;
  std::size_t total = 0;
  // Spans that do not start where the one before them in their source
  // ended: each may need a "no CFI" row before it, so the rows number at
  // most total + breaks (a vector left to double would hold 1.5-2x the
  // rows during the copy).
  std::size_t breaks = 0;
  std::deque<Span>& Next() {
    sources.emplace_back();
    return sources.back();
  }
  // false when the rows' output refused one (direct->error() says why).
  bool Add(std::deque<Span>& source, const Span& span) {
    ++total;
    if (direct) return direct->Take(span);
    if (source.empty() || source.back().end != span.start()) ++breaks;
    source.push_back(span);
    return true;
  }
};

// Walks every FDE of `cfi` from the given start addresses, appending one span
// per row libdw reports.
Result<std::size_t> CollectSpans(Dwarf_CFI* cfi, const std::vector<std::uint64_t>& starts,
                                 const UnwindTableLimits& limits, SpanSources& spans,
                                 UnwindTableStats& stats, const std::function<void()>& release_pages = {}) {
  using R = Result<std::size_t>;
  constexpr std::size_t kFdesPerRelease = 4096;
  std::deque<Span>& out = spans.Next();
  std::size_t added = 0;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    if (release_pages && i % kFdesPerRelease == kFdesPerRelease - 1) release_pages();
    std::uint64_t addr = starts[i];
    std::uint64_t stop = i + 1 < starts.size() ? starts[i + 1] : UINT64_MAX;
    ++stats.fdes;
    while (addr < stop) {
      Dwarf_Frame* frame = nullptr;
      if (dwarf_cfi_addrframe(cfi, addr, &frame) != 0) break;  // past this FDE's end
      Dwarf_Addr row_start = 0, row_end = 0;
      bool signal = false;
      dwarf_frame_info(frame, &row_start, &row_end, &signal);
      if (row_end <= addr || row_start > addr) {
        std::free(frame);
        return R::Error("CFI row at 0x" + std::to_string(addr) + " does not advance");
      }
      if (row_end > stop) row_end = stop;  // overlapping FDEs: the next one wins
      if (row_end > (1ULL << 32))
        return R::Error("code above 4 GiB (0x" + std::to_string(row_end) + "), not supported");
      Span span{static_cast<std::uint32_t>(row_end), RowFromFrame(frame, addr)};
      std::free(frame);
      if (!spans.Add(out, span)) return R::Error(spans.direct->error());
      ++added;
      if (spans.total > limits.max_rows)
        return R::Error(limits.TooManyRows());
      addr = row_end;
    }
  }
  return added;
}

// Go code has no call frame information once stripped (-ldflags='-s -w'
// drops .debug_frame, and Go never writes .eh_frame), and its leaf
// functions keep no frame pointer, so a frame-pointer walk loses their
// callers. Go's own line table says, for every pc, how far SP is below its
// value at entry (pcsp): CFA = SP + delta + 8; a function with a frame has
// saved the caller's frame pointer at CFA - 16 (Go's amd64 prologue:
// SUBQ $n, SP; MOVQ BP, n-8(SP)). The goroutine and thread entry points are
// the outermost frames, as _start is in C.
Result<std::size_t> AddGoSpans(Elf* elf, const UnwindTableLimits& limits, SpanSources& spans) {
  using R = Result<std::size_t>;
  auto pcln = symbols::internal::FindSectionWithData(elf, ".gopclntab");
  auto text = symbols::internal::FindSectionWithData(elf, ".text");
  if (!pcln || !text) return std::size_t{0};
  Elf_Data* data = elf_rawdata(pcln->scn, nullptr);
  if (!data || !data->d_buf) return R::Error(".gopclntab cannot be read");
  absl::StatusOr<symbols::GoLineTable> table =
      symbols::GoLineTable::ParseView(std::string_view(static_cast<const char*>(data->d_buf), data->d_size),
                                      text->shdr.sh_addr);
  if (!table.ok()) return R::Error(".gopclntab: " + std::string(table.status().message()));
  std::deque<Span>& out = spans.Next();
  std::size_t added = 0;
  bool too_high = false, refused = false;
  for (std::uint32_t i = 0; i < table->functions() && !too_high; ++i) {
    std::optional<symbols::GoFrame> fn = table->Function(i);
    if (!fn) continue;
    const bool outermost =
        fn->function == "runtime.goexit" || fn->function == "runtime.mstart" || fn->function == "runtime.rt0_go";
    table->ForEachSpDelta(i, [&](std::uint64_t start, std::uint64_t end, std::int64_t delta) {
      if (end > (1ULL << 32)) {
        too_high = true;
        return false;
      }
      if (end <= start) return true;
      UnwindRow row{};
      row.pc = static_cast<__u32>(start);
      if (outermost) {
        row.rules = KILN_CFA_OUTERMOST;
      } else if (delta < 0 || delta % 8 != 0 || delta / 8 + 1 > INT16_MAX) {
        row.rules = KILN_CFA_UNSUPPORTED;
      } else {
        row.cfa_offset = static_cast<__s16>(delta / 8 + 1);
        row.rules = KILN_CFA_SP | ((delta > 0 ? KILN_REG_AT_CFA : KILN_REG_SAME) << 4);
        row.fp_offset = static_cast<__s8>(delta > 0 ? -2 : 0);
      }
      if (!spans.Add(out, {static_cast<std::uint32_t>(end), row})) {
        refused = true;
        return false;
      }
      ++added;
      return spans.total <= limits.max_rows;
    });
    if (refused) return R::Error(spans.direct->error());
    if (spans.total > limits.max_rows) return R::Error(limits.TooManyRows());
  }
  if (too_high) return R::Error("Go code above 4 GiB, not supported");
  return added;
}

// Every source's spans, merged in start order, into `rows` (the earlier
// source first at equal starts, as a stable sort of them all would order
// them, without its buffer of every span).
bool MergeSpans(SpanSources& spans, RowStream& rows) {
  // Each source comes in address order (FDEs walked from sorted starts, Go's
  // functions in pc order); sorted here where one does not.
  auto by_start = [](const Span& a, const Span& b) { return a.start() < b.start(); };
  for (std::deque<Span>& source : spans.sources)
    if (!std::is_sorted(source.begin(), source.end(), by_start)) std::stable_sort(source.begin(), source.end(), by_start);
  while (true) {
    std::deque<Span>* first = nullptr;
    for (std::deque<Span>& source : spans.sources)
      if (!source.empty() && (!first || source.front().start() < first->front().start())) first = &source;
    if (!first) return true;
    const Span s = first->front();
    first->pop_front();
    if (!rows.Take(s)) return false;
  }
}

Result<UnwindTable> BuildFromElf(Elf* elf, Elf* debug_elf, const UnwindTableLimits& limits,
                                 UnwindInfoTable* compact_into) {
  using R = Result<UnwindTable>;
  UnwindTable table;
  std::optional<CompactOutput> compact;
  std::optional<FullRows> full;
  RowOutput* out = compact_into ? static_cast<RowOutput*>(&compact.emplace(*compact_into))
                                : static_cast<RowOutput*>(&full.emplace(table.rows));
  RowStream stream(*out, table.stats);
  SpanSources spans;
  // Most files have one source (.eh_frame, or a Go program's line table):
  // its spans then become rows as they are read, never all held at once.
  auto has = [](Elf* e, const char* name) { return e && symbols::internal::FindSectionWithData(e, name) ? 1 : 0; };
  if (has(elf, ".eh_frame") + has(elf, ".debug_frame") + has(debug_elf, ".debug_frame") + has(elf, ".gopclntab") <= 1)
    spans.direct = &stream;
  std::string eh_problem;

  if (CfiPtr cfi{dwarf_getcfi_elf(elf)}) {
    auto starts = EhFrameHdrStarts(elf);
    if (!starts) {
      eh_problem = starts.error();
    } else {
      // The file's mapped .eh_frame pages count in the agent's RSS (6 MB of
      // libLLVM's) until the ELF is closed. FDEs are read in address
      // order, mostly once: dropping the pages now and then keeps only
      // those in use (a private file mapping, never written, reads them
      // again from the page cache if they are needed again). An image in
      // memory (the vDSO's copy) has no such pages (MappedSectionPages).
      const symbols::internal::MappedSectionPages pages(elf, {".eh_frame", ".eh_frame_hdr"});
      std::function<void()> release;
      if (!pages.empty()) release = [&pages] { pages.Drop(); };
      auto added = CollectSpans(cfi.get(), *starts, limits, spans, table.stats, release);
      if (!added)
        return R::Error(added.error() == limits.TooManyRows() || added.error() == stream.error()
                            ? added.error()
                            : ".eh_frame: " + added.error());
      table.stats.rows_from_eh_frame = *added;
    }
  } else {
    eh_problem = "no .eh_frame (" + DwError() + ")";
  }

  // .debug_frame, in the file itself or its separate debug file, covers what
  // .eh_frame leaves out (code built with -fno-asynchronous-unwind-tables).
  for (Elf* e : {elf, debug_elf}) {
    if (!e) continue;
    std::vector<std::uint64_t> starts = DebugFrameStarts(e);
    if (starts.empty()) continue;
    DwarfPtr dw{dwarf_begin_elf(e, DWARF_C_READ, nullptr)};
    if (!dw) continue;
    Dwarf_CFI* cfi = dwarf_getcfi(dw.get());  // owned by dw
    if (!cfi) continue;
    auto added = CollectSpans(cfi, starts, limits, spans, table.stats);
    if (!added)
      return R::Error(added.error() == limits.TooManyRows() ? added.error() : ".debug_frame: " + added.error());
    table.stats.rows_from_debug_frame += *added;
  }
  // Go's line table, for Go code no CFI covers (all of it, once stripped).
  // A damaged one refuses the file only when it was all there was: a cgo
  // program's C code keeps its CFI.
  const bool had_cfi = spans.total > 0;
  auto go = AddGoSpans(elf, limits, spans);
  if (!go && (!had_cfi || go.error() == limits.TooManyRows())) return R::Error(go.error());
  table.stats.rows_from_go = go ? *go : 0;
  if (spans.total == 0)
    return R::Error(eh_problem.empty() ? "no call frame information" : eh_problem + ", no .debug_frame");
  if (!spans.direct) {
    // .eh_frame spans come first: MergeSpans takes them ahead of
    // .debug_frame spans that start at the same address, and never lets a
    // later span override an earlier one.
    if (full) table.rows.reserve(spans.total + spans.breaks + 1);
    if (!MergeSpans(spans, stream)) return R::Error(stream.error());
  }
  if (!stream.Finish()) return R::Error(stream.error());
  if (table.stats.rows > limits.max_rows) return R::Error(limits.TooManyRows());
  if (compact) {
    Result<CompactUnwindRows> rows = compact->writer.Finish();
    if (!rows) return R::Error(rows.error());
    table.compact = std::move(*rows);
  }
  return table;
}

}  // namespace

Result<UnwindTable> BuildUnwindTable(int fd, int debug_fd, UnwindTableLimits limits, UnwindInfoTable* compact_into) {
  using R = Result<UnwindTable>;
  absl::StatusOr<ElfImage> image = ElfImage::FromFd(fd, "ELF file");
  if (!image.ok()) return R::Error(std::string(image.status().message()));
  // A separate debug file that does not open is left out, not an error.
  absl::StatusOr<ElfImage> debug =
      debug_fd >= 0 ? ElfImage::FromFd(debug_fd, "debug file") : absl::NotFoundError("no debug file");
  return BuildFromElf(image->elf(), debug.ok() ? debug->elf() : nullptr, limits, compact_into);
}

Result<UnwindTable> BuildUnwindTableFromMemory(const void* image, std::size_t size, UnwindTableLimits limits,
                                               UnwindInfoTable* compact_into) {
  using R = Result<UnwindTable>;
  absl::StatusOr<ElfImage> elf =
      ElfImage::FromBytes(std::string_view(static_cast<const char*>(image), size), "ELF image in memory");
  if (!elf.ok()) return R::Error(std::string(elf.status().message()));
  return BuildFromElf(elf->elf(), nullptr, limits, compact_into);
}

// Where the split-off cold part of the function at [start, start + size)
// is, when no symbol names it: the hot part jumps into it (jcc rel32, jmp
// rel32), and it has an FDE of its own. The FDE outside the function that
// the most jump targets land in is taken, if it gets at least kMinColdHits
// of them (a byte scan also finds operands that only look like jumps; their
// targets scatter).
std::optional<std::pair<std::uint64_t, std::uint64_t>> FindSplitColdPart(int fd, std::uint64_t start,
                                                                         std::uint64_t size) {
  constexpr int kMinColdHits = 8;
  constexpr std::uint64_t kMaxHotBytes = 1 << 20;
  if (size == 0 || size > kMaxHotBytes) return std::nullopt;
  absl::StatusOr<ElfImage> image = ElfImage::FromFd(fd, "ELF file");
  if (!image.ok()) return std::nullopt;
  Elf* elf = image->elf();
  const std::uint8_t* code = nullptr;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn && !code; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_PROGBITS || !(shdr.sh_flags & SHF_EXECINSTR)) continue;
    if (start < shdr.sh_addr || start + size > shdr.sh_addr + shdr.sh_size) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data && data->d_buf && data->d_size == shdr.sh_size)
      code = static_cast<const std::uint8_t*>(data->d_buf) + (start - shdr.sh_addr);
  }
  auto starts = EhFrameHdrStarts(elf);
  CfiPtr cfi{code && starts ? dwarf_getcfi_elf(elf) : nullptr};
  if (!cfi || starts->empty()) return std::nullopt;
  std::map<std::size_t, int> hits;  // FDE (index in starts) -> jump targets in it
  for (std::uint64_t i = 0; i + 5 <= size; ++i) {
    std::int32_t rel = 0;
    std::uint64_t next = 0;
    if (code[i] == 0x0f && (code[i + 1] & 0xf0) == 0x80 && i + 6 <= size) {
      std::memcpy(&rel, code + i + 2, 4);
      next = start + i + 6;
    } else if (code[i] == 0xe9) {
      std::memcpy(&rel, code + i + 1, 4);
      next = start + i + 5;
    } else {
      continue;
    }
    std::uint64_t target = next + static_cast<std::int64_t>(rel);
    if (target >= start && target < start + size) continue;
    auto it = std::upper_bound(starts->begin(), starts->end(), target);
    if (it == starts->begin()) continue;
    ++hits[static_cast<std::size_t>(std::prev(it) - starts->begin())];
  }
  std::size_t best = 0;
  int most = 0;
  for (const auto& [fde, n] : hits)
    if (n > most) best = fde, most = n;
  if (most < kMinColdHits) return std::nullopt;
  // The FDE's end: where its rows stop (or the next FDE starts).
  std::uint64_t from = (*starts)[best], to = from;
  std::uint64_t stop = best + 1 < starts->size() ? (*starts)[best + 1] : UINT64_MAX;
  for (int guard = 0; guard < (1 << 20) && to < stop; ++guard) {
    Dwarf_Frame* frame = nullptr;
    if (dwarf_cfi_addrframe(cfi.get(), to, &frame) != 0) break;
    Dwarf_Addr row_start = 0, row_end = 0;
    bool signal = false;
    dwarf_frame_info(frame, &row_start, &row_end, &signal);
    std::free(frame);
    if (row_end <= to) break;
    to = std::min<std::uint64_t>(row_end, stop);
  }
  if (to <= from || (from < start + size && to > start)) return std::nullopt;
  return std::make_pair(from, to - from);
}

std::string FormatUnwindRow(const UnwindRow& row) {
  char buf[160], fp[32];
  int cfa_rule = KILN_CFA_RULE_OF(&row);
  switch (KILN_FP_RULE_OF(&row)) {
    case KILN_REG_SAME: std::snprintf(fp, sizeof(fp), "same"); break;
    case KILN_REG_AT_CFA: std::snprintf(fp, sizeof(fp), "cfa%+d", row.fp_offset * 8); break;
    case KILN_REG_AT_SP: std::snprintf(fp, sizeof(fp), "*(sp%+d)", row.fp_offset * 8); break;
    default: std::snprintf(fp, sizeof(fp), "unknown"); break;
  }
  switch (cfa_rule) {
    case KILN_CFA_NONE: std::snprintf(buf, sizeof(buf), "0x%x none", row.pc); break;
    case KILN_CFA_OUTERMOST: std::snprintf(buf, sizeof(buf), "0x%x outermost", row.pc); break;
    case KILN_CFA_UNSUPPORTED: std::snprintf(buf, sizeof(buf), "0x%x unsupported", row.pc); break;
    case KILN_CFA_SP_DEREF:
      std::snprintf(buf, sizeof(buf), "0x%x cfa=*(sp%+d) fp=%s ra=*(sp%+d)", row.pc, row.cfa_offset * 8, fp,
                    row.cfa_offset * 8 + 8);
      break;
    case KILN_CFA_PLT:
      std::snprintf(buf, sizeof(buf), "0x%x cfa=plt(%d) fp=%s ra=cfa-8", row.pc, row.cfa_offset, fp);
      break;
    default:
      std::snprintf(buf, sizeof(buf), "0x%x cfa=%s%+d fp=%s ra=cfa-8", row.pc, cfa_rule == KILN_CFA_SP ? "sp" : "fp",
                    row.cfa_offset * 8, fp);
      break;
  }
  return buf;
}

std::optional<std::uint16_t> UnwindInfoTable::Intern(const kiln_unwind_info& info) {
  std::uint32_t key;
  static_assert(sizeof(key) == sizeof(info));
  std::memcpy(&key, &info, sizeof(key));
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = index_.find(key); it != index_.end()) return it->second;
  if (infos_.size() >= capacity_) return std::nullopt;
  auto number = static_cast<std::uint16_t>(infos_.size());
  infos_.push_back(info);
  index_.emplace(key, number);
  return number;
}

std::vector<kiln_unwind_info> UnwindInfoTable::infos(std::size_t from) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (from >= infos_.size()) return {};
  return std::vector<kiln_unwind_info>(infos_.begin() + static_cast<std::ptrdiff_t>(from), infos_.end());
}

std::size_t UnwindInfoTable::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return infos_.size();
}

bool CompactRowWriter::Add(const UnwindRow& r) {
  if (!error_.empty()) return false;
  std::deque<std::uint32_t>& rows = out_.words;
  const bool first = rows.empty();
  if (!first && r.pc < last_pc_) {
    error_ = "unwind rows out of order";
    return false;
  }
  kiln_unwind_info info{r.cfa_offset, r.rules, r.fp_offset};
  std::uint32_t key;
  std::memcpy(&key, &info, sizeof(key));
  auto known = numbers_.find(key);
  if (known == numbers_.end()) {
    std::optional<std::uint16_t> number = infos_.Intern(info);
    if (!number) {
      error_ = "unwind_infos full (" + std::to_string(infos_.size()) + " distinct rules)";
      return false;
    }
    known = numbers_.emplace(key, *number).first;
  }
  std::uint32_t word = (r.pc & 0xffffu) | (std::uint32_t{known->second} << 16);
  // Two rows at one pc: the later one holds it, as in FindUnwindRow.
  if (!first && r.pc == last_pc_) {
    rows.back() = word;
    return true;
  }
  if (first) first_page_ = r.pc >> KILN_PAGE_BITS;
  last_pc_ = r.pc;
  std::size_t row_page = (r.pc >> KILN_PAGE_BITS) - first_page_;
  // Pages up to this row's start here (an empty page starts at the next
  // row: the walker then takes the row before it, from an earlier page).
  while (page_starts_.size() <= row_page) page_starts_.push_back(static_cast<std::uint32_t>(rows.size()));
  rows.push_back(word);
  return true;
}

Result<CompactUnwindRows> CompactRowWriter::Finish() {
  using R = Result<CompactUnwindRows>;
  if (!error_.empty()) return R::Error(error_);
  CompactUnwindRows out = std::move(out_);
  out_ = {};
  if (out.words.empty()) return out;
  out.first_page = first_page_;
  // The index has a word per page and one for the end; rows are counted
  // from the start of the run, index included.
  const auto index_words = static_cast<std::uint32_t>(page_starts_.size() + 1);
  const auto end = static_cast<std::uint32_t>(index_words + out.words.size());
  out.words.push_front(end);
  for (std::size_t page = page_starts_.size(); page-- > 0;) out.words.push_front(index_words + page_starts_[page]);
  page_starts_ = {};
  return out;
}

Result<CompactUnwindRows> CompactRows(const std::vector<UnwindRow>& rows, UnwindInfoTable& infos) {
  CompactRowWriter writer(infos);
  for (const UnwindRow& r : rows)
    if (!writer.Add(r)) break;
  return writer.Finish();
}

std::optional<kiln_unwind_info> FindCompactRow(const CompactUnwindRows& table,
                                               const std::vector<kiln_unwind_info>& infos, std::uint64_t vaddr) {
  const std::deque<std::uint32_t>& w = table.words;
  if (w.empty() || (vaddr >> KILN_PAGE_BITS) < table.first_page) return std::nullopt;
  std::uint64_t page = (vaddr >> KILN_PAGE_BITS) - table.first_page;
  std::uint32_t rows_start = w[0];
  if (page + 1 >= rows_start) return std::nullopt;  // past the last page
  std::uint32_t lo = w[page], hi = w[page + 1], found = 0;
  std::uint32_t low = vaddr & 0xffffu;
  while (lo < hi) {
    std::uint32_t mid = lo + (hi - lo) / 2;
    if (KILN_ROW_PC_LOW(w[mid]) <= low) {
      found = mid;
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (found == 0) {  // 0 is a page start, never a row
    if (w[page] <= rows_start) return std::nullopt;
    found = w[page] - 1;
  }
  std::uint32_t number = KILN_ROW_INFO(w[found]);
  if (number >= infos.size()) return std::nullopt;
  return infos[number];
}

const UnwindRow* FindUnwindRow(const std::vector<UnwindRow>& rows, std::uint64_t vaddr) {
  auto it = std::upper_bound(rows.begin(), rows.end(), vaddr,
                             [](std::uint64_t v, const UnwindRow& r) { return v < r.pc; });
  if (it == rows.begin()) return nullptr;
  return &*(it - 1);
}

}  // namespace kiln::agent
