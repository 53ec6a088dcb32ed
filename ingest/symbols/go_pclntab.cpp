#include "ingest/symbols/go_pclntab.h"

#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ingest/symbols/elf_identity_backend.h"

namespace kiln::symbols {

namespace {

constexpr uint32_t kGo118Magic = 0xfffffff0;
constexpr uint32_t kGo120Magic = 0xfffffff1;
// Offsets in the 1.18+ _func record: entryOff, nameOff, args, deferreturn,
// pcsp, pcfile, pcln, npcdata, cuOffset, ...
constexpr uint32_t kFuncNameOff = 4, kFuncPcsp = 16, kFuncPcfile = 20, kFuncPcln = 24, kFuncCuOffset = 32,
                   kFuncMinSize = 36;

}  // namespace

bool GoLineTable::U32(uint64_t offset, uint32_t* out) const {
  if (offset > data_.size() || data_.size() - offset < 4) return false;
  std::memcpy(out, data_.data() + offset, 4);  // little endian: amd64, arm64
  return true;
}

std::string_view GoLineTable::CString(uint64_t table, uint64_t offset) const {
  if (table + offset >= data_.size() || table + offset < table) return {};
  std::string_view rest(data_.data() + table + offset, data_.size() - table - offset);
  const size_t end = rest.find('\0');
  return end == std::string_view::npos ? std::string_view() : rest.substr(0, end);
}

absl::StatusOr<GoLineTable> GoLineTable::Parse(std::string data, uint64_t text_address) {
  auto owned = std::make_shared<const std::string>(std::move(data));
  absl::StatusOr<GoLineTable> t = ParseView(*owned, text_address);
  if (t.ok()) t->owned_ = std::move(owned);
  return t;
}

absl::StatusOr<GoLineTable> GoLineTable::ParseView(std::string_view data, uint64_t text_address) {
  GoLineTable t;
  t.data_ = data;
  const std::string_view d = t.data_;
  if (d.size() < 8) return absl::InvalidArgumentError("the Go line table is shorter than its header");
  uint32_t magic = 0;
  std::memcpy(&magic, d.data(), 4);
  if (magic == kGo118Magic) {
    t.version_ = "1.18";
  } else if (magic == kGo120Magic) {
    t.version_ = "1.20";
  } else if (magic == 0xfffffffa || magic == 0xfffffffb) {
    return absl::UnimplementedError("a Go line table from before Go 1.18 (not read)");
  } else {
    return absl::InvalidArgumentError(absl::StrFormat("not a Go line table (magic 0x%08x)", magic));
  }
  const uint8_t quantum = static_cast<uint8_t>(d[6]), ptr = static_cast<uint8_t>(d[7]);
  if (d[4] != 0 || d[5] != 0 || (quantum != 1 && quantum != 2 && quantum != 4) || ptr != 8)
    return absl::InvalidArgumentError("the Go line table's header is damaged (or not 64-bit)");
  t.quantum_ = quantum;
  // Header words after the first 8 bytes: nfunc, nfiles, textStart,
  // funcnameOffset, cuOffset, filetabOffset, pctabOffset, pclnOffset.
  if (d.size() < 8 + 8 * 8) return absl::InvalidArgumentError("the Go line table is shorter than its header");
  uint64_t words[8];
  std::memcpy(words, d.data() + 8, sizeof(words));
  for (int w : {3, 4, 5, 6, 7})
    if (words[w] >= d.size()) return absl::InvalidArgumentError("the Go line table's offsets point past its end");
  if (words[0] > (1u << 24)) return absl::InvalidArgumentError("the Go line table claims too many functions");
  t.nfunc_ = static_cast<uint32_t>(words[0]);
  t.text_ = text_address != 0 ? text_address : words[2];
  t.funcname_ = words[3];
  t.cu_ = words[4];
  t.file_ = words[5];
  t.pc_ = words[6];
  t.functab_ = words[7];
  // functab: nfunc (entryOff, funcOff) pairs and the end offset.
  if ((d.size() - t.functab_) / 4 < 2ull * t.nfunc_ + 1)
    return absl::InvalidArgumentError("the Go line table's function table is cut short");
  return t;
}

std::optional<GoFrame> GoLineTable::Function(uint32_t i) const {
  uint32_t entry_off = 0, func_off = 0, end_off = 0, name_off = 0;
  if (i >= nfunc_ || !U32(functab_ + 8ull * i, &entry_off) || !U32(functab_ + 8ull * i + 4, &func_off) ||
      !U32(functab_ + 8ull * (i + 1), &end_off) || end_off < entry_off)
    return std::nullopt;
  const uint64_t func = functab_ + func_off;
  if (!U32(func + kFuncNameOff, &name_off)) return std::nullopt;
  GoFrame f;
  f.function = std::string(CString(funcname_, name_off));
  f.entry = text_ + entry_off;
  f.end = text_ + end_off;
  return f;
}

int64_t GoLineTable::PcValue(uint32_t table_offset, uint64_t entry, uint64_t pc) const {
  int64_t found = -1;
  WalkPcValue(table_offset, entry, [&](uint64_t, uint64_t end, int64_t value) {
    if (pc < end) {
      found = value;
      return false;
    }
    return true;
  });
  return found;
}

bool GoLineTable::Record(uint32_t i, FuncRecord* out) const {
  uint32_t func_off = 0;
  if (i >= nfunc_ || !U32(functab_ + 8ull * i + 4, &func_off)) return false;
  const uint64_t func = functab_ + func_off;
  return func + kFuncMinSize <= data_.size() && U32(func + kFuncPcsp, &out->pcsp) &&
         U32(func + kFuncPcfile, &out->pcfile) && U32(func + kFuncPcln, &out->pcln) &&
         U32(func + kFuncCuOffset, &out->cu);
}

std::string_view GoLineTable::FileName(uint32_t cu, int64_t fileno) const {
  uint32_t file_off = 0;
  if (fileno < 0 || !U32(cu_ + 4 * (static_cast<uint64_t>(cu) + static_cast<uint64_t>(fileno)), &file_off) ||
      file_off == UINT32_MAX)
    return {};
  return CString(file_, file_off);
}

std::optional<GoFrame> GoLineTable::Lookup(uint64_t address) const {
  if (nfunc_ == 0 || address < text_) return std::nullopt;
  const uint64_t off = address - text_;
  // The last function whose entry is at or before the address.
  uint32_t lo = 0, hi = nfunc_;
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    uint32_t e = 0;
    if (!U32(functab_ + 8ull * mid, &e)) return std::nullopt;
    if (e <= off) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == 0) return std::nullopt;
  std::optional<GoFrame> f = Function(lo - 1);
  FuncRecord r;
  if (!f || address >= f->end) return std::nullopt;
  if (!Record(lo - 1, &r)) return f;
  const int64_t line = PcValue(r.pcln, f->entry, address);
  if (line > 0) f->line = line;
  f->file = std::string(FileName(r.cu, PcValue(r.pcfile, f->entry, address)));
  return f;
}

bool GoLineTable::ForEachLine(uint32_t i,
                              const std::function<void(uint64_t, uint64_t, std::string_view, int64_t)>& f) const {
  std::optional<GoFrame> fn = Function(i);
  FuncRecord r;
  if (!fn || !Record(i, &r)) return false;
  // The file table once, then the line table against it: the file can
  // change within a line's range (an inlined callee's file at the same line
  // number), so a range is split where it does.
  struct FileRange {
    uint64_t start, end;
    int64_t fileno;
  };
  std::vector<FileRange> files;
  if (!WalkPcValue(r.pcfile, fn->entry, [&](uint64_t start, uint64_t end, int64_t fileno) {
        files.push_back({start, std::min(end, fn->end), fileno});
        return end < fn->end;
      }))
    return false;
  size_t next_file = 0;
  return WalkPcValue(r.pcln, fn->entry, [&](uint64_t start, uint64_t end, int64_t line) {
    end = std::min(end, fn->end);
    // Only where the file table says which file (it covers every pc of a
    // sound table).
    for (uint64_t at = start; at < end;) {
      while (next_file < files.size() && files[next_file].end <= at) ++next_file;
      if (next_file == files.size() || files[next_file].start >= end) break;
      at = std::max(at, files[next_file].start);
      const uint64_t piece_end = std::min(files[next_file].end, end);
      f(at, piece_end, FileName(r.cu, files[next_file].fileno), line > 0 ? line : 0);
      at = piece_end;
    }
    return end < fn->end;
  });
}

absl::StatusOr<GoLineTable> ReadGoLineTable(const std::string& path) {
  absl::StatusOr<internal::ElfSectionBytes> pcln = internal::ReadElfSection(path, ".gopclntab");
  if (!pcln.ok()) return pcln.status();
  absl::StatusOr<internal::ElfSectionBytes> text = internal::ReadElfSection(path, ".text", /*with_bytes=*/false);
  if (!text.ok()) return text.status();
  absl::StatusOr<GoLineTable> t = GoLineTable::Parse(std::move(pcln->bytes), text->address);
  if (!t.ok()) return absl::Status(t.status().code(), absl::StrCat(path, ": ", t.status().message()));
  return t;
}

}  // namespace kiln::symbols
