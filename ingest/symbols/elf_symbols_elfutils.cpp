// ReadSymbols' file access, elfutils backend: ELF symbols with libelf, DWARF
// with libdw. The rules for what goes into the table are in
// symbol_reader_common.h, shared with the LLVM backend.
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/version.h>

#if _ELFUTILS_VERSION < 189
#include <zstd.h>
#endif

#include <algorithm>
#include <cstring>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "ingest/symbols/demangle.h"
#include "ingest/symbols/elf_checks.h"
#include "ingest/symbols/elf_image_elfutils.h"
#include "ingest/symbols/symbol_reader_common.h"

namespace kiln::symbols::internal {
namespace {

#if _ELFUTILS_VERSION < 189
// ---- zstd-compressed sections for libelf < 0.189 --------------------------
// libelf learnt ELFCOMPRESS_ZSTD in 0.189 (Debian 12 has 0.188). For older
// ones the file is copied with each zstd section decompressed (libzstd) and
// appended, its header pointing there with SHF_COMPRESSED cleared; libdw
// then reads the copy as an uncompressed file. Only such files pay for the
// copy.
//
//   original bytes ... | pad to 8 | section A decompressed | pad | section B ...
//   (headers of A, B rewritten in place: sh_offset, sh_size, sh_flags, sh_addralign)

constexpr uint64_t kMaxDecompressedBytes = uint64_t{4} << 30;
// Appended sections start 8-aligned: libelf copies data that is not
// aligned for its type, and 8 suits every ELF type.
constexpr uint64_t kAppendAlign = 8;

struct ZstdSection {
  size_t index = 0;
  std::string_view name;
  std::string_view compressed;  // after the Chdr, inside the original image
  GElf_Chdr chdr{};
  uint64_t offset = 0;  // of the decompressed bytes in the copy
};

absl::Status ZstdInvalid(const ElfImage& image, const ZstdSection& z, const std::string& what) {
  return Invalid(image.name(),
                 absl::StrCat("section ", z.index, " (", std::string(z.name), "), zstd-compressed: ", what));
}

// The zstd-compressed sections of `image` (checked by ElfImage), laid out
// after its bytes; nothing when it has none.
absl::StatusOr<std::vector<ZstdSection>> FindZstdSections(const ElfImage& image, uint64_t* copy_size) {
  std::vector<ZstdSection> found;
  size_t shnum = 0;
  if (elf_getshdrnum(image.elf(), &shnum) != 0) return found;  // ElfImage already said it is fine
  size_t raw_size = 0;
  const char* raw = elf_rawfile(image.elf(), &raw_size);
  size_t chdr_size = gelf_fsize(image.elf(), ELF_T_CHDR, 1, EV_CURRENT);
  uint64_t end = raw_size, decompressed = 0;
  for (size_t i = 1; i < shnum; ++i) {
    Elf_Scn* scn = elf_getscn(image.elf(), i);
    GElf_Shdr shdr;
    if (!scn || !gelf_getshdr(scn, &shdr) || !(shdr.sh_flags & SHF_COMPRESSED) || shdr.sh_type == SHT_NOBITS)
      continue;
    ZstdSection z;
    if (!gelf_getchdr(scn, &z.chdr) || z.chdr.ch_type != kElfCompressZstd || shdr.sh_size < chdr_size)
      continue;
    z.index = i;
    z.name = image.SectionName(shdr);
    // ElfImage checked that the section lies inside the file.
    z.compressed = std::string_view(raw + shdr.sh_offset + chdr_size, shdr.sh_size - chdr_size);
    uint64_t size = z.chdr.ch_size;
    if (size / kMaxCompressionRatio > z.compressed.size())
      return ZstdInvalid(
          image, z,
          absl::StrCat("claims to decompress to ", size, " bytes (ch_size) from ", z.compressed.size(),
                       "; more than ", kMaxCompressionRatio, " times over is a garbage compression header"));
    if (size > kMaxDecompressedBytes - decompressed)
      return ZstdInvalid(image, z,
                         absl::StrCat("its ", size, " bytes (ch_size) take the decompressed sections over ",
                                      kMaxDecompressedBytes, " bytes"));
    decompressed += size;
    end = (end + kAppendAlign - 1) / kAppendAlign * kAppendAlign;
    z.offset = end;
    end += size;
    found.push_back(z);
  }
  *copy_size = end;
  return found;
}

// `image`'s bytes with every zstd section decompressed as drawn above, or
// nothing when it has none.
absl::StatusOr<std::optional<std::string>> DecompressZstdSections(const ElfImage& image) {
  uint64_t copy_size = 0;
  auto sections = FindZstdSections(image, &copy_size);
  if (!sections.ok()) return sections.status();
  if (sections->empty()) return std::nullopt;
  size_t raw_size = 0;
  const char* raw = elf_rawfile(image.elf(), &raw_size);
  std::string copy(copy_size, '\0');
  std::memcpy(copy.data(), raw, raw_size);
  for (const ZstdSection& z : *sections) {
    size_t got =
        ZSTD_decompress(copy.data() + z.offset, z.chdr.ch_size, z.compressed.data(), z.compressed.size());
    if (ZSTD_isError(got))
      return ZstdInvalid(image, z,
                         absl::StrCat("does not decompress to its ", z.chdr.ch_size,
                                      " bytes (ch_size): ", ZSTD_getErrorName(got)));
    if (got != z.chdr.ch_size)
      return ZstdInvalid(image, z,
                         absl::StrCat("decompresses to ", got, " bytes, not the ", z.chdr.ch_size,
                                      " its compression header (ch_size) says"));
    GElf_Shdr shdr;
    if (!gelf_getshdr(elf_getscn(image.elf(), z.index), &shdr))
      return ZstdInvalid(image, z, "section header unreadable");
    SectionPlacement placement{shdr.sh_flags & ~uint64_t{SHF_COMPRESSED}, z.offset, z.chdr.ch_size,
                               z.chdr.ch_addralign};
    if (absl::Status s =
            RewriteSectionHeader(image.name(), copy, image.header(), image.big_endian(), z.index, placement);
        !s.ok())
      return s;
  }
  return copy;
}
#endif  // _ELFUTILS_VERSION < 189

// Walks one file's DWARF into a DwarfTableWriter.
class DwarfReader {
 public:
  // `pages`: the file's mapped DWARF sections, dropped every kUnitsPerDrop
  // units.
  DwarfReader(Elf* elf, DwarfTableWriter& writer, const MappedSectionPages& pages)
      : elf_(elf), writer_(writer), pages_(pages) {}
  ~DwarfReader() { Close(); }
  DwarfReader(const DwarfReader&) = delete;
  DwarfReader& operator=(const DwarfReader&) = delete;

  // InvalidArgument when the DWARF or no unit header is readable;
  // *broken_unit (with its message) when the walk stopped at a broken one
  // after reading others.
  absl::Status ReadAll(bool* broken_unit, std::string* broken_message) {
    dbg_ = dwarf_begin_elf(elf_, DWARF_C_READ, nullptr);
    if (!dbg_) return absl::InvalidArgumentError(absl::StrCat("DWARF unreadable: ", dwarf_errmsg(-1)));
    const size_t rows_per_open = writer_.options().dwarf_line_rows_per_open > 0
                                     ? writer_.options().dwarf_line_rows_per_open
                                     : kLineRowsPerOpen;
    Dwarf_CU* cu = nullptr;
    Dwarf_Half version = 0;
    uint8_t unit_type = 0;
    Dwarf_Die cudie, subdie;
    size_t units = 0;   // compile and partial units read
    size_t passed = 0;  // every unit header passed, in dwarf_get_units order
    int rc;
    while ((rc = dwarf_get_units(dbg_, cu, &cu, &version, &unit_type, &cudie, &subdie)) == 0) {
      ++passed;
      if (!writer_.StartUnit(dwarf_dieoffset(&cudie)))
        return absl::CancelledError("reading symbols cancelled");
      if (unit_type == DW_UT_type || unit_type == DW_UT_split_type) continue;
      int tag = dwarf_tag(&cudie);
      if (tag != DW_TAG_compile_unit && tag != DW_TAG_partial_unit) continue;
      ++units;
      ReadUnit(&cudie);
      // A large program's DWARF is read once, unit by unit, and its mapped
      // pages would all stay in kiln's RSS until the file is closed (kiln's
      // own RelWithDebInfo binary: 90 MB of them, on top of the table
      // being built). Pages a later unit needs again come back from the
      // page cache.
      if (units % kUnitsPerDrop == 0) pages_.Drop();
      // libdw has no call to free one unit's line table: a new handle,
      // moved past the units read, lets them all go.
      if (rows_held_ >= rows_per_open) {
        rc = Reopen(passed, &cu);
        if (rc != 0) break;
      }
    }
    if (rc < 0 && units == 0)
      return absl::InvalidArgumentError(absl::StrCat("DWARF units unreadable: ", dwarf_errmsg(-1)));
    *broken_unit = rc < 0;  // stop at the first broken unit header, keep what came before
    if (*broken_unit) *broken_message = dwarf_errmsg(-1);
    return absl::OkStatus();
  }

  // Units whose functions were not walked in full because the DIEs nest
  // too deep or go round (see WalkChildren, ReadUnit): the one where the
  // walk stopped and those after it.
  size_t units_cut_short() const { return units_cut_short_; }

 private:
  void ReadUnit(Dwarf_Die* cudie) {
    comp_dir_ = nullptr;
    Dwarf_Attribute attr;
    if (dwarf_attr(cudie, DW_AT_comp_dir, &attr)) comp_dir_ = dwarf_formstring(&attr);
    files_ = nullptr;
    size_t nfiles = 0;
    if (dwarf_getsrcfiles(cudie, &files_, &nfiles) != 0) files_ = nullptr;
    ReadLines(cudie);
    // Every DIE takes at least a byte, so a walk that reaches more DIEs
    // than its unit has bytes is going round (DW_AT_sibling can point
    // back): fuzz_elf found one that went on for seconds at shallow depth,
    // where each step is charged too little for the depth budget.
    const Dwarf_Off unit_offset = dwarf_dieoffset(cudie) - dwarf_cuoffset(cudie);
    Dwarf_Off next_unit = 0;
    size_t header_size = 0;
    walk_dies_limit_ = dwarf_next_unit(dbg_, unit_offset, &next_unit, &header_size, nullptr, nullptr, nullptr,
                                       nullptr, nullptr, nullptr) == 0 &&
                               next_unit > unit_offset
                           ? walk_dies_ + (next_unit - unit_offset)
                           : walk_dies_;  // no length: nothing below the unit DIE is walked
    WalkChildren(cudie, DwarfTableWriter::Parent{}, 0);
    if (walk_stopped_) ++units_cut_short_;
  }

  // File names as addr2line prints them: libdw joins the directory and the
  // name; a directory that is itself relative is under DW_AT_comp_dir.
  uint32_t FileId(const char* path) {
    if (!path) return 0;
    auto it = file_ids_.find(path);
    if (it != file_ids_.end()) return it->second;
    uint32_t id;
    if (path[0] != '/' && comp_dir_ && *comp_dir_)
      id = writer_.Intern(absl::StrCat(comp_dir_, "/", path));
    else
      id = writer_.Intern(path);
    file_ids_.emplace(path, id);
    return id;
  }

  void ReadLines(Dwarf_Die* cudie) {
    Dwarf_Attribute attr;
    Dwarf_Word stmt_list = 0;
    // dwz and partial units share line tables; read each one once.
    if (dwarf_attr(cudie, DW_AT_stmt_list, &attr) && dwarf_formudata(&attr, &stmt_list) == 0 &&
        !line_tables_seen_.insert(stmt_list).second)
      return;
    Dwarf_Lines* lines = nullptr;
    size_t n = 0;
    if (dwarf_getsrclines(cudie, &lines, &n) != 0) return;
    rows_held_ += n;
    // libdw returns the rows sorted by address (stable, an end of sequence
    // before a row at the same address). Rows of one sequence stay together
    // once sequences outside the code sections are dropped, with one
    // exception: GCC may end a sequence with a repeat of its last row at
    // the end address (no code), and that repeat arrives after the end, as
    // if it started the next sequence, which then covered every address up
    // to its real first row and hid other units' rows there (an ASan build
    // of a test: basic_string.h:286 over hundreds of bytes). Such a row is
    // dropped when it is outside this unit's code; inside it, it is the
    // start of the unit's next function, whose line may well be the same
    // (two instances of one template: doctest.h:1078 and 1078).
    DwarfTableWriter::Ranges unit_code;
    Ranges(cudie, &unit_code);
    auto in_unit = [&](Dwarf_Addr a) {
      return std::any_of(unit_code.begin(), unit_code.end(),
                         [a](const auto& r) { return a >= r.first && a < r.second; });
    };
    bool after_end = false;
    Dwarf_Addr last_end = 0;
    std::optional<std::pair<uint32_t, int>> last_row;  // file, line
    for (size_t i = 0; i < n; ++i) {
      Dwarf_Line* line = dwarf_onesrcline(lines, i);
      Dwarf_Addr addr = 0;
      bool end = false;
      if (!line || dwarf_lineaddr(line, &addr) != 0 || dwarf_lineendsequence(line, &end) != 0) continue;
      if (end) {
        writer_.EndSequence(addr);
        after_end = true;
        last_end = addr;
        continue;
      }
      if (!writer_.InCode(addr)) continue;
      int lineno = 0;
      dwarf_lineno(line, &lineno);
      std::pair<uint32_t, int> row{FileId(dwarf_linesrc(line, nullptr, nullptr)), lineno};
      bool repeat = after_end && addr == last_end && row == last_row && !in_unit(addr);
      after_end = false;
      if (repeat) continue;
      last_row = row;
      writer_.LineRow(addr, row.first, row.second);
    }
    writer_.EndLineTable();
  }

  // The DIE's name: its linkage name demangled, else DW_AT_name (through
  // abstract origins and specifications). *linkage_out says which.
  uint32_t NameId(Dwarf_Die* die, bool* linkage_out = nullptr) {
    Dwarf_Attribute attr;
    const char* raw = nullptr;
    bool linkage = false;
    if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
        dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr)) {
      raw = dwarf_formstring(&attr);
      linkage = raw != nullptr;
    }
    if (!raw && dwarf_attr_integrate(die, DW_AT_name, &attr)) raw = dwarf_formstring(&attr);
    if (linkage_out) *linkage_out = linkage;
    return writer_.InternName(raw, linkage);
  }

  // The die's code ranges that lie in code sections.
  void Ranges(Dwarf_Die* die, DwarfTableWriter::Ranges* out) {
    out->clear();
    ptrdiff_t off = 0;
    Dwarf_Addr base = 0, start = 0, end = 0;
    for (int guard = 0; guard < 100000 && (off = dwarf_ranges(die, off, &base, &start, &end)) > 0; ++guard)
      out->emplace_back(start, end);
    writer_.KeepCode(out);
  }

  // libdw finds a DIE's next sibling by skipping its whole subtree, so every
  // DIE is read again by the sibling step of each level above it: the walk
  // costs DIEs x depth. Real units average a few levels; crafted ones nest
  // hundreds deep (84 KB of one-byte DIEs took 18.5 s). The walk charges
  // each DIE its depth when it reaches it, before libdw pays that on the
  // way back up, and stops walking (keeping what it read, and still reading
  // line tables) once the charge for the whole file passes kWalkSlack plus
  // kWalkAverageDepth levels per DIE. Per file, not per unit: a file of many
  // small crafted units would otherwise get the slack many times.
  static constexpr uint64_t kWalkSlack = 1 << 18;
  static constexpr uint64_t kWalkAverageDepth = 16;
  bool OverBudget() {
    if (walk_work_ > kWalkSlack + kWalkAverageDepth * walk_dies_ || walk_dies_ > walk_dies_limit_)
      walk_stopped_ = true;
    return walk_stopped_;
  }

  // count_only: inside a DIE that holds no code (a type, a variable), walked
  // only where it is deep enough to cost more than its one skip per level.
  void WalkChildren(Dwarf_Die* parent_die, const DwarfTableWriter::Parent& parent, int depth,
                    bool count_only = false) {
    if (depth > kMaxDieDepth) return;
    Dwarf_Die child;
    if (dwarf_child(parent_die, &child) != 0) return;
    DwarfTableWriter::Ranges ranges;
    do {
      ++walk_dies_;
      walk_work_ += static_cast<uint64_t>(depth) + 1;
      if (OverBudget()) return;
      if (count_only) {
        if (dwarf_haschildren(&child)) WalkChildren(&child, parent, depth + 1, true);
        continue;
      }
      switch (KindOfTag(static_cast<unsigned>(dwarf_tag(&child)))) {
        case DieKind::kFunction: {
          Ranges(&child, &ranges);
          if (ranges.empty()) {
            // A declaration or an abstract instance: no code of its own, but
            // GCC nests the concrete code of local classes' members (lambdas)
            // inside the enclosing function's abstract DIE.
            WalkChildren(&child, DwarfTableWriter::Parent{}, depth + 1);
            break;
          }
          bool linkage = false;
          uint32_t name = NameId(&child, &linkage);
          Dwarf_Addr entry = 0;
          std::optional<uint64_t> entry_pc;
          if (dwarf_entrypc(&child, &entry) == 0) entry_pc = entry;
          WalkChildren(&child, writer_.AddFunction(name, linkage, entry_pc, ranges), depth + 1);
          break;
        }
        case DieKind::kInlinedCall: {
          if (parent.scope == storage::SymbolTableBuilder::kNoScope) break;
          Ranges(&child, &ranges);
          if (ranges.empty()) break;
          Dwarf_Attribute attr;
          Dwarf_Word call_file = 0, call_line = 0;
          uint32_t file_id = 0;
          if (dwarf_attr(&child, DW_AT_call_file, &attr) && dwarf_formudata(&attr, &call_file) == 0 && files_)
            file_id = FileId(dwarf_filesrc(files_, call_file, nullptr, nullptr));
          if (dwarf_attr(&child, DW_AT_call_line, &attr)) dwarf_formudata(&attr, &call_line);
          uint32_t name = NameId(&child);
          WalkChildren(&child, writer_.AddInlinedCall(parent, name, file_id, call_line, ranges), depth + 1);
          break;
        }
        case DieKind::kContainer:
          WalkChildren(&child, parent, depth + 1);
          break;
        case DieKind::kOther:
          // Near the top a type's subtree is skipped a few times at most;
          // deeper, it is charged like any other DIE.
          if (depth >= kCountOtherFromDepth && dwarf_haschildren(&child))
            WalkChildren(&child, parent, depth + 1, true);
          break;
      }
    } while (!OverBudget() && dwarf_siblingof(&child, &child) == 0);
  }
  static constexpr int kCountOtherFromDepth = 8;

  // Ends the handle and opens a new one positioned after the first
  // `passed` units (their headers are read again, nothing else). Pointers
  // into the old handle's memory (file names, the current unit's) go with
  // it. 0, or -1 when the new handle cannot reach the same place.
  int Reopen(size_t passed, Dwarf_CU** cu) {
    Close();
    file_ids_.clear();
    writer_.ForgetNameAddresses();
    comp_dir_ = nullptr;
    files_ = nullptr;
    rows_held_ = 0;
    dbg_ = dwarf_begin_elf(elf_, DWARF_C_READ, nullptr);
    if (!dbg_) return -1;
    *cu = nullptr;
    Dwarf_Half version = 0;
    uint8_t unit_type = 0;
    Dwarf_Die cudie, subdie;
    for (size_t i = 0; i < passed; ++i) {
      if (dwarf_get_units(dbg_, *cu, cu, &version, &unit_type, &cudie, &subdie) != 0) return -1;
    }
    return 0;
  }
  void Close() {
    if (dbg_) dwarf_end(dbg_);
    dbg_ = nullptr;
  }

  static constexpr size_t kUnitsPerDrop = 8;
  // libdw's line rows cost about 40 bytes each with their unit's file
  // table; 250,000 of them are about 10 MB.
  static constexpr size_t kLineRowsPerOpen = 250'000;
  Elf* const elf_;
  Dwarf* dbg_ = nullptr;
  size_t rows_held_ = 0;  // line rows libdw holds for units read with this handle
  DwarfTableWriter& writer_;
  const MappedSectionPages& pages_;
  uint64_t walk_work_ = 0;  // DIEs x (depth + 1), all units so far
  uint64_t walk_dies_ = 0;
  uint64_t walk_dies_limit_ = 0;  // walk_dies_ at the current unit's start + its bytes
  bool walk_stopped_ = false;
  size_t units_cut_short_ = 0;
  const char* comp_dir_ = nullptr;
  Dwarf_Files* files_ = nullptr;
  // libdw's strings live as long as the Dwarf, so their addresses are keys.
  // A file path's id depends on its unit's comp_dir only for relative paths,
  // which libdw already makes unit-specific pointers.
  std::unordered_map<const char*, uint32_t> file_ids_;
  std::unordered_set<Dwarf_Word> line_tables_seen_;
};

class ElfutilsSymbolSource final : public SymbolSource {
 public:
  explicit ElfutilsSymbolSource(ElfImage image) : image_(std::move(image)) {}

  const std::string& name() const override { return image_.name(); }

  size_t AddElfSymbols(uint32_t section_type, std::vector<ElfFunction>& out,
                       const SymbolReadOptions& options) const override {
    size_t added = 0;
    GElf_Ehdr ehdr;
    if (!gelf_getehdr(image_.elf(), &ehdr)) return 0;
    for (Elf_Scn* scn = elf_nextscn(image_.elf(), nullptr); scn; scn = elf_nextscn(image_.elf(), scn)) {
      GElf_Shdr shdr;
      if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != section_type || shdr.sh_entsize == 0) continue;
      Elf_Data* data = elf_getdata(scn, nullptr);
      if (!data) continue;
      size_t count = shdr.sh_size / shdr.sh_entsize;
      for (size_t i = 0; i < count; ++i) {
        if ((i & 4095) == 0 && Cancelled(options)) return added;
        GElf_Sym sym;
        if (!gelf_getsym(data, static_cast<int>(i), &sym)) break;
        int type = GELF_ST_TYPE(sym.st_info);
        if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_value == 0 || sym.st_shndx == SHN_UNDEF ||
            sym.st_name == 0)
          continue;
        const char* name = elf_strptr(image_.elf(), shdr.sh_link, sym.st_name);
        if (!name || !*name) continue;
        uint64_t start = sym.st_value;
        if (ehdr.e_machine == EM_ARM) start &= ~uint64_t{1};  // Thumb bit
        out.push_back({start, sym.st_size, Demangle(name)});
        ++added;
      }
    }
    return added;
  }

  std::string_view GnuDebugData() const override {
    GElf_Shdr shdr;
    Elf_Scn* scn = image_.FindSection(".gnu_debugdata", &shdr);
    if (!scn || shdr.sh_type == SHT_NOBITS) return {};
    Elf_Data* data = elf_rawdata(scn, nullptr);
    if (!data || !data->d_buf) return {};
    return std::string_view(static_cast<const char*>(data->d_buf), data->d_size);
  }

  CodeRanges CodeSections() const override {
    CodeRanges out;
    for (Elf_Scn* scn = elf_nextscn(image_.elf(), nullptr); scn; scn = elf_nextscn(image_.elf(), scn)) {
      GElf_Shdr shdr;
      if (gelf_getshdr(scn, &shdr)) out.AddSection(shdr.sh_flags, shdr.sh_addr, shdr.sh_size);
    }
    return out;
  }

  bool HasDwarf() const override {
    GElf_Shdr shdr;
    Elf_Scn* scn = image_.FindSection(".debug_info", &shdr);
    if (!scn) scn = image_.FindSection(".zdebug_info", &shdr);
    return scn && shdr.sh_type != SHT_NOBITS && shdr.sh_size > 0;
  }

  uint64_t DebugInfoSize() const override {
    GElf_Shdr shdr;
    if (image_.FindSection(".debug_info", &shdr) || image_.FindSection(".zdebug_info", &shdr))
      return shdr.sh_size;
    return 0;
  }

  absl::Status ReadDwarf(DwarfTableWriter& writer, std::vector<std::string>* warnings) override {
    const MappedSectionPages pages(image_.elf(), {".debug_info", ".debug_line", ".debug_str", ".debug_line_str",
                                                   ".debug_abbrev", ".debug_ranges", ".debug_rnglists",
                                                   ".debug_addr", ".debug_str_offsets"});
    DwarfReader reader(image_.elf(), writer, pages);
    bool broken_unit = false;
    std::string broken_message;
    absl::Status s = reader.ReadAll(&broken_unit, &broken_message);
    // The last units' pages too: the file stays open while the table is
    // built, the read's peak.
    pages.Drop();
    if (s.code() == absl::StatusCode::kCancelled) return s;
    if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat(name(), ": ", s.message()));
    if (broken_unit)
      warnings->push_back(absl::StrCat(name(), ": DWARF read up to a broken unit: ", broken_message));
    if (size_t cut = reader.units_cut_short())
      warnings->push_back(absl::StrCat(name(), ": DWARF of ", cut,
                                       " unit(s) not read in full: the DIEs nest too deep or go round "
                                       "(damaged or crafted); their lines were read"));
    return absl::OkStatus();
  }

 private:
  ElfImage image_;
};

}  // namespace

// Not OpenSymbolSourceWith: before libelf 0.189 the image may be replaced
// by its copy with zstd sections decompressed.
absl::StatusOr<std::unique_ptr<SymbolSource>> OpenSymbolSource(const std::string& path,
                                                               const std::string_view* bytes) {
  auto image = bytes ? ElfImage::FromBytes(*bytes, path) : ElfImage::Open(path);
  if (!image.ok()) return image.status();
#if _ELFUTILS_VERSION < 189
  auto decompressed = DecompressZstdSections(*image);
  if (!decompressed.ok()) return decompressed.status();
  if (*decompressed) {
    image = ElfImage::FromOwnedBytes(**std::move(decompressed), path);
    if (!image.ok()) return image.status();
  }
#endif
  return std::make_unique<ElfutilsSymbolSource>(*std::move(image));
}

}  // namespace kiln::symbols::internal
