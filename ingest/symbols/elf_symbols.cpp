// ReadSymbols: ELF symbol tables, MiniDebugInfo and DWARF into a SymbolTable.
//
// Index:
//   [DEMANGLE]   Itanium and Rust legacy names as addr2line -C prints them
//   [ELF]        .symtab / .dynsym function symbols, MiniDebugInfo (xz)
//   [DWARF]      subprograms, inlined calls, line tables (libdw)
//   [READ]       ReadSymbols: the files in order, counts, description
#include "ingest/symbols/elf_symbols.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/version.h>
#include <lzma.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ingest/symbols/demangle.h"
#include "ingest/symbols/elf_identity.h"
#include "ingest/symbols/elf_image.h"

namespace kiln::symbols {
namespace {

using internal::ElfImage;
using storage::SymbolTableBuilder;

constexpr size_t kMaxMiniDebugInfoBytes = 512u << 20;
constexpr int kMaxDieDepth = 512;         // deeper nesting is garbage DWARF, not code
constexpr uint32_t kElfCompressZstd = 2;  // ELFCOMPRESS_ZSTD, not in 0.188's headers

bool Cancelled(const SymbolReadOptions& options) {
  return options.cancel && options.cancel->load(std::memory_order_relaxed);
}

// ---------------------------------------------------------------------------
// [ELF]
// ---------------------------------------------------------------------------

struct ElfFunction {
  uint64_t start, size;
  std::string name;  // demangled
};

// Appends the function symbols of every section of `section_type`; returns
// how many.
size_t AddElfSymbols(const ElfImage& image, uint32_t section_type, std::vector<ElfFunction>& out,
                     const SymbolReadOptions& options) {
  size_t added = 0;
  GElf_Ehdr ehdr;
  if (!gelf_getehdr(image.elf(), &ehdr)) return 0;
  for (Elf_Scn* scn = elf_nextscn(image.elf(), nullptr); scn; scn = elf_nextscn(image.elf(), scn)) {
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
      const char* name = elf_strptr(image.elf(), shdr.sh_link, sym.st_name);
      if (!name || !*name) continue;
      uint64_t start = sym.st_value;
      if (ehdr.e_machine == EM_ARM) start &= ~uint64_t{1};  // Thumb bit
      out.push_back({start, sym.st_size, Demangle(name)});
      ++added;
    }
  }
  return added;
}

// .gnu_debugdata is a complete .xz stream whose decompressed size is not
// stored up front, so decode in steps into a growing buffer (bounded).
absl::StatusOr<std::string> XzDecode(const uint8_t* in, size_t in_size, const std::string& name) {
  lzma_stream strm = LZMA_STREAM_INIT;
  if (lzma_stream_decoder(&strm, UINT64_MAX, 0) != LZMA_OK)
    return absl::ResourceExhaustedError(name + ": liblzma could not start a decoder");
  std::string out(std::min<size_t>(in_size * 4 + 4096, kMaxMiniDebugInfoBytes), '\0');
  strm.next_in = in;
  strm.avail_in = in_size;
  strm.next_out = reinterpret_cast<uint8_t*>(out.data());
  strm.avail_out = out.size();
  lzma_ret ret;
  while ((ret = lzma_code(&strm, LZMA_FINISH)) == LZMA_OK || (ret == LZMA_BUF_ERROR && strm.avail_out == 0)) {
    if (strm.avail_out != 0) continue;
    if (out.size() >= kMaxMiniDebugInfoBytes) {
      lzma_end(&strm);
      return absl::ResourceExhaustedError(absl::StrCat(name, ": .gnu_debugdata decompresses to more than ",
                                                       kMaxMiniDebugInfoBytes, " bytes"));
    }
    size_t used = out.size();
    out.resize(std::min(out.size() * 2, kMaxMiniDebugInfoBytes));
    strm.next_out = reinterpret_cast<uint8_t*>(out.data()) + used;
    strm.avail_out = out.size() - used;
  }
  size_t produced = out.size() - strm.avail_out;
  lzma_end(&strm);
  if (ret != LZMA_STREAM_END)
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": .gnu_debugdata is not a valid xz stream (liblzma error ", static_cast<int>(ret), ")"));
  out.resize(produced);
  return out;
}

absl::StatusOr<size_t> AddMiniDebugInfo(const ElfImage& image, std::vector<ElfFunction>& out,
                                        const SymbolReadOptions& options) {
  GElf_Shdr shdr;
  Elf_Scn* scn = image.FindSection(".gnu_debugdata", &shdr);
  if (!scn || shdr.sh_type == SHT_NOBITS) return 0;
  Elf_Data* data = elf_rawdata(scn, nullptr);
  if (!data || !data->d_buf || data->d_size == 0) return 0;
  auto inner = XzDecode(static_cast<const uint8_t*>(data->d_buf), data->d_size, image.name());
  if (!inner.ok()) return inner.status();
  auto mini = ElfImage::FromBytes(*inner, image.name() + " [.gnu_debugdata]");
  if (!mini.ok()) return mini.status();
  return AddElfSymbols(*mini, SHT_SYMTAB, out, options);
}

// ---------------------------------------------------------------------------
// [DWARF]
// ---------------------------------------------------------------------------

// ELF function names by start address (the first one listed wins), for
// DWARF functions that have no linkage name.
class SymbolStarts {
 public:
  explicit SymbolStarts(const std::vector<ElfFunction>& functions) {
    for (const ElfFunction& f : functions) starts_.push_back({f.start, &f.name});
    std::stable_sort(starts_.begin(), starts_.end(),
                     [](const Start& a, const Start& b) { return a.address < b.address; });
  }
  // The name of the symbol starting at `address`, or nullptr.
  const std::string* At(uint64_t address) const {
    auto it = std::lower_bound(starts_.begin(), starts_.end(), address,
                               [](const Start& s, uint64_t a) { return s.address < a; });
    return it != starts_.end() && it->address == address ? it->name : nullptr;
  }

 private:
  struct Start {
    uint64_t address;
    const std::string* name;
  };
  std::vector<Start> starts_;
};

// Address ranges of the file's code sections. Line sequences and functions
// outside them are what the linker discarded (COMDAT duplicates, gc'ed
// sections) and left at address 0: they would overlap real code.
struct CodeRanges {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  bool Contains(uint64_t a) const {
    if (ranges.empty()) return true;
    for (const auto& [s, e] : ranges)
      if (a >= s && a < e) return true;
    return false;
  }
};

CodeRanges CodeRangesOf(const ElfImage& image) {
  CodeRanges out;
  for (Elf_Scn* scn = elf_nextscn(image.elf(), nullptr); scn; scn = elf_nextscn(image.elf(), scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) && (shdr.sh_flags & SHF_ALLOC) && (shdr.sh_flags & SHF_EXECINSTR) &&
        shdr.sh_size > 0 && shdr.sh_addr + shdr.sh_size > shdr.sh_addr)
      out.ranges.emplace_back(shdr.sh_addr, shdr.sh_addr + shdr.sh_size);
  }
  return out;
}

// Names zstd-compressed .debug_* sections, which libdw < 0.189 cannot read.
absl::Status CheckDebugCompression(const ElfImage& image) {
#if _ELFUTILS_VERSION < 189
  for (Elf_Scn* scn = elf_nextscn(image.elf(), nullptr); scn; scn = elf_nextscn(image.elf(), scn)) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr) || !(shdr.sh_flags & SHF_COMPRESSED) || shdr.sh_type == SHT_NOBITS)
      continue;
    std::string_view name = image.SectionName(shdr);
    if (name.substr(0, 7) != ".debug_") continue;
    GElf_Chdr chdr;
    if (gelf_getchdr(scn, &chdr) && chdr.ch_type == kElfCompressZstd)
      return absl::FailedPreconditionError(
          absl::StrCat(image.name(), ": section ", std::string(name),
                       " is zstd-compressed; zstd-compressed debug sections need elfutils >= 0.189 (this "
                       "build uses libdw ",
                       _ELFUTILS_VERSION / 100, ".", _ELFUTILS_VERSION % 100, ")"));
  }
#else
  (void)image;
#endif
  return absl::OkStatus();
}

struct DwarfCounts {
  size_t functions = 0, inlined = 0, lines = 0, units = 0;
  size_t bad_units = 0;
};

class DwarfReader {
 public:
  DwarfReader(Dwarf* dbg, const CodeRanges& code, const SymbolStarts& symbols, SymbolTableBuilder& builder,
              const SymbolReadOptions& options)
      : dbg_(dbg), code_(code), symbols_(symbols), builder_(builder), options_(options) {}

  // Reads every unit; `progress_from..progress_to` is this phase's share.
  absl::Status ReadAll(uint64_t debug_info_size, double progress_from, double progress_to) {
    Dwarf_CU* cu = nullptr;
    Dwarf_Half version = 0;
    uint8_t unit_type = 0;
    Dwarf_Die cudie, subdie;
    double last_reported = -1;
    int rc;
    while ((rc = dwarf_get_units(dbg_, cu, &cu, &version, &unit_type, &cudie, &subdie)) == 0) {
      if (Cancelled(options_)) return absl::CancelledError("reading symbols cancelled");
      if (options_.progress && debug_info_size > 0) {
        double f = progress_from + (progress_to - progress_from) *
                                       std::min(1.0, static_cast<double>(dwarf_dieoffset(&cudie)) /
                                                         static_cast<double>(debug_info_size));
        if (f - last_reported >= 0.005) {
          options_.progress(f);
          last_reported = f;
        }
      }
      if (unit_type == DW_UT_type || unit_type == DW_UT_split_type) continue;
      int tag = dwarf_tag(&cudie);
      if (tag != DW_TAG_compile_unit && tag != DW_TAG_partial_unit) continue;
      ++counts_.units;
      ReadUnit(&cudie);
    }
    if (rc < 0 && counts_.units == 0)
      return absl::InvalidArgumentError(absl::StrCat("DWARF units unreadable: ", dwarf_errmsg(-1)));
    if (rc < 0) ++counts_.bad_units;  // stop at the first broken unit header, keep what came before
    return absl::OkStatus();
  }

  const DwarfCounts& counts() const { return counts_; }

 private:
  void ReadUnit(Dwarf_Die* cudie) {
    comp_dir_ = nullptr;
    Dwarf_Attribute attr;
    if (dwarf_attr(cudie, DW_AT_comp_dir, &attr)) comp_dir_ = dwarf_formstring(&attr);
    files_ = nullptr;
    size_t nfiles = 0;
    if (dwarf_getsrcfiles(cudie, &files_, &nfiles) != 0) files_ = nullptr;
    ReadLines(cudie);
    WalkChildren(cudie, Parent{}, 0);
  }

  // File names as addr2line prints them: libdw joins the directory and the
  // name; a directory that is itself relative is under DW_AT_comp_dir.
  uint32_t FileId(const char* path) {
    if (!path) return 0;
    auto it = file_ids_.find(path);
    if (it != file_ids_.end()) return it->second;
    uint32_t id;
    if (path[0] != '/' && comp_dir_ && *comp_dir_)
      id = builder_.Intern(absl::StrCat(comp_dir_, "/", path));
    else
      id = builder_.Intern(path);
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
    // libdw returns the rows sorted by address (stable, an end of sequence
    // before a row at the same address). Rows of one sequence stay together
    // once sequences outside the code sections are dropped.
    bool in_sequence = false;
    uint64_t last_addr = 0;
    for (size_t i = 0; i < n; ++i) {
      Dwarf_Line* line = dwarf_onesrcline(lines, i);
      Dwarf_Addr addr = 0;
      bool end = false;
      if (!line || dwarf_lineaddr(line, &addr) != 0 || dwarf_lineendsequence(line, &end) != 0) continue;
      if (end) {
        if (in_sequence) {
          FlushRow();
          builder_.EndLineSequence(addr);
        }
        in_sequence = false;
        continue;
      }
      if (!code_.Contains(addr)) continue;
      int lineno = 0;
      dwarf_lineno(line, &lineno);
      uint32_t file = FileId(dwarf_linesrc(line, nullptr, nullptr));
      // binutils keeps the last of several rows at one address (PR ld/4986).
      if (in_sequence && pending_ && addr == last_addr) {
        pending_row_ = {addr, file, lineno};
        continue;
      }
      FlushRow();
      pending_row_ = {addr, file, lineno};
      pending_ = true;
      in_sequence = true;
      last_addr = addr;
    }
    if (in_sequence) FlushRow();  // a table without its end marker: the builder ends it
  }

  void FlushRow() {
    if (!pending_) return;
    builder_.AddLine(pending_row_.address, pending_row_.file, pending_row_.line);
    ++counts_.lines;
    pending_ = false;
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
    if (!raw) return 0;
    auto it = name_ids_.find(raw);
    if (it != name_ids_.end()) return it->second;
    uint32_t id = builder_.Intern(linkage ? Demangle(raw) : std::string(raw));
    name_ids_.emplace(raw, id);
    return id;
  }

  // The die's code ranges that lie in code sections.
  void Ranges(Dwarf_Die* die, std::vector<std::pair<uint64_t, uint64_t>>* out) {
    out->clear();
    ptrdiff_t off = 0;
    Dwarf_Addr base = 0, start = 0, end = 0;
    for (int guard = 0; guard < 100000 && (off = dwarf_ranges(die, off, &base, &start, &end)) > 0; ++guard) {
      if (end > start && code_.Contains(start)) out->emplace_back(start, end);
    }
  }

  // The scopes of the function or inlined call being walked: one, or (for a
  // function split into parts named by different ELF symbols, e.g. "f" and
  // "f.cold") one per part; an inlined call belongs to the part holding it.
  struct Parent {
    uint32_t scope = SymbolTableBuilder::kNoScope;
    std::vector<std::tuple<uint64_t, uint64_t, uint32_t>> parts;
    uint32_t At(uint64_t address) const {
      for (const auto& [s, e, sc] : parts)
        if (address >= s && address < e) return sc;
      return scope;
    }
  };

  // A DWARF function. Without a linkage name (C, C++ static functions,
  // lambdas, internal-linkage templates) DW_AT_name is unqualified
  // ("ReadOk", "operator()"), so, as binutils and llvm-symbolizer do, each
  // part is named after the ELF symbol at its start when there is one.
  Parent AddFunction(Dwarf_Die* die, const std::vector<std::pair<uint64_t, uint64_t>>& ranges) {
    bool linkage = false;
    uint32_t dwarf_name = NameId(die, &linkage);
    Parent p;
    if (linkage) {
      p.scope = builder_.AddScope(dwarf_name, SymbolTableBuilder::kNoScope);
      for (const auto& [s, e] : ranges) builder_.AddRange(p.scope, s, e);
      return p;
    }
    Dwarf_Addr entry = ranges.front().first;
    if (dwarf_entrypc(die, &entry) != 0) entry = ranges.front().first;
    const std::string* entry_symbol = symbols_.At(entry);
    uint32_t entry_name = entry_symbol ? builder_.Intern(*entry_symbol) : dwarf_name;
    std::vector<std::pair<uint32_t, uint32_t>> name_scopes;  // name -> scope
    for (const auto& [s, e] : ranges) {
      const std::string* part_symbol = symbols_.At(s);
      uint32_t name = part_symbol ? builder_.Intern(*part_symbol) : entry_name;
      uint32_t scope = SymbolTableBuilder::kNoScope;
      for (const auto& [n, sc] : name_scopes)
        if (n == name) scope = sc;
      if (scope == SymbolTableBuilder::kNoScope) {
        scope = builder_.AddScope(name, SymbolTableBuilder::kNoScope);
        name_scopes.emplace_back(name, scope);
      }
      builder_.AddRange(scope, s, e);
      p.parts.emplace_back(s, e, scope);
      if (p.scope == SymbolTableBuilder::kNoScope || s == entry) p.scope = scope;
    }
    if (name_scopes.size() == 1) p.parts.clear();
    return p;
  }

  void WalkChildren(Dwarf_Die* parent_die, const Parent& parent, int depth) {
    if (depth > kMaxDieDepth) return;
    Dwarf_Die child;
    if (dwarf_child(parent_die, &child) != 0) return;
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    do {
      switch (dwarf_tag(&child)) {
        case DW_TAG_subprogram: {
          Ranges(&child, &ranges);
          if (ranges.empty()) {
            // A declaration or an abstract instance: no code of its own, but
            // GCC nests the concrete code of local classes' members (lambdas)
            // inside the enclosing function's abstract DIE.
            WalkChildren(&child, Parent{}, depth + 1);
            break;
          }
          Parent function = AddFunction(&child, ranges);
          ++counts_.functions;
          WalkChildren(&child, function, depth + 1);
          break;
        }
        case DW_TAG_inlined_subroutine: {
          if (parent.scope == SymbolTableBuilder::kNoScope) break;
          Ranges(&child, &ranges);
          if (ranges.empty()) break;
          Dwarf_Attribute attr;
          Dwarf_Word call_file = 0, call_line = 0;
          uint32_t file_id = 0;
          if (dwarf_attr(&child, DW_AT_call_file, &attr) && dwarf_formudata(&attr, &call_file) == 0 && files_)
            file_id = FileId(dwarf_filesrc(files_, call_file, nullptr, nullptr));
          if (dwarf_attr(&child, DW_AT_call_line, &attr)) dwarf_formudata(&attr, &call_line);
          uint32_t name = NameId(&child);
          auto line = static_cast<int64_t>(std::min<Dwarf_Word>(call_line, INT32_MAX));
          // A call split across parts of a split function (hot and .cold)
          // gets one scope per part, each under its part's scope.
          Parent call;
          std::vector<std::pair<uint32_t, uint32_t>> by_parent;  // parent scope -> scope
          for (const auto& [s, e] : ranges) {
            uint32_t parent_scope = parent.At(s);
            uint32_t scope = SymbolTableBuilder::kNoScope;
            for (const auto& [ps, sc] : by_parent)
              if (ps == parent_scope) scope = sc;
            if (scope == SymbolTableBuilder::kNoScope) {
              scope = builder_.AddScope(name, parent_scope, file_id, line);
              by_parent.emplace_back(parent_scope, scope);
            }
            builder_.AddRange(scope, s, e);
            call.parts.emplace_back(s, e, scope);
            if (call.scope == SymbolTableBuilder::kNoScope) call.scope = scope;
          }
          if (by_parent.size() == 1) call.parts.clear();
          ++counts_.inlined;
          WalkChildren(&child, call, depth + 1);
          break;
        }
        // Scopes that can hold code-bearing DIEs; types and variables cannot.
        case DW_TAG_lexical_block:
        case DW_TAG_try_block:
        case DW_TAG_catch_block:
        case DW_TAG_namespace:
        case DW_TAG_module:
        case DW_TAG_class_type:
        case DW_TAG_structure_type:
        case DW_TAG_union_type:
          WalkChildren(&child, parent, depth + 1);
          break;
        default:
          break;
      }
    } while (dwarf_siblingof(&child, &child) == 0);
  }

  struct Row {
    uint64_t address = 0;
    uint32_t file = 0;
    int64_t line = 0;
  };

  Dwarf* dbg_;
  const CodeRanges& code_;
  const SymbolStarts& symbols_;
  SymbolTableBuilder& builder_;
  const SymbolReadOptions& options_;
  DwarfCounts counts_;
  const char* comp_dir_ = nullptr;
  Dwarf_Files* files_ = nullptr;
  // libdw's strings live as long as the Dwarf, so their addresses are keys.
  // A file path's id depends on its unit's comp_dir only for relative paths,
  // which libdw already makes unit-specific pointers.
  std::unordered_map<const char*, uint32_t> file_ids_;
  std::unordered_map<const char*, uint32_t> name_ids_;
  std::unordered_set<Dwarf_Word> line_tables_seen_;
  Row pending_row_;
  bool pending_ = false;
};

uint64_t DebugInfoSize(const ElfImage& image) {
  GElf_Shdr shdr;
  if (image.FindSection(".debug_info", &shdr) || image.FindSection(".zdebug_info", &shdr))
    return shdr.sh_size;
  return 0;
}

bool HasDwarf(const ElfImage& image) {
  GElf_Shdr shdr;
  Elf_Scn* scn = image.FindSection(".debug_info", &shdr);
  if (!scn) scn = image.FindSection(".zdebug_info", &shdr);
  return scn && shdr.sh_type != SHT_NOBITS && shdr.sh_size > 0;
}

}  // namespace

// ---------------------------------------------------------------------------
// [READ]
// ---------------------------------------------------------------------------

absl::StatusOr<SymbolReadResult> ReadSymbols(const std::vector<std::string>& files,
                                             const SymbolReadOptions& options) {
  if (files.empty()) return absl::InvalidArgumentError("no files given to read symbols from");
  SymbolReadResult result;
  SymbolTableBuilder builder;
  std::vector<ElfImage> images;
  std::vector<std::string> build_ids;
  absl::Status first_error;
  std::string first_build_id, first_path;
  int first_class = 0;
  uint16_t first_machine = 0;

  // Open and check every file first, so a mismatch is found before work.
  for (const std::string& path : files) {
    auto id = ReadElfIdentity(path);
    absl::StatusOr<ElfImage> image = id.ok() ? ElfImage::Open(path) : absl::StatusOr<ElfImage>(id.status());
    if (!image.ok()) {
      if (first_error.ok()) first_error = image.status();
      result.warnings.push_back(std::string(image.status().message()));
      continue;
    }
    if (first_path.empty()) {
      first_path = path;
      first_build_id = id->gnu_build_id;
      first_class = id->elf_class;
      first_machine = id->machine;
    } else {
      if (!first_build_id.empty() && !id->gnu_build_id.empty() && id->gnu_build_id != first_build_id)
        return absl::InvalidArgumentError(absl::StrCat(path, ": GNU build id ", id->gnu_build_id,
                                                       " differs from ", first_path, "'s ", first_build_id,
                                                       "; they are not the same executable"));
      if (id->elf_class != first_class || id->machine != first_machine)
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": ", id->elf_class, "-bit ", ElfMachineName(id->machine), " does not match ",
                         first_path, "'s ", first_class, "-bit ", ElfMachineName(first_machine)));
    }
    images.push_back(*std::move(image));
  }
  if (images.empty()) return first_error;

  // ELF symbols from every file, the preferred ones first. Read before the
  // DWARF, which names functions without a linkage name after them.
  std::vector<ElfFunction> elf_functions;
  size_t best_symbols = 0;
  const ElfImage* best_symbol_image = nullptr;
  for (const ElfImage& image : images) {
    if (Cancelled(options)) return absl::CancelledError("reading symbols cancelled");
    size_t symtab = AddElfSymbols(image, SHT_SYMTAB, elf_functions, options);
    size_t dynsym = AddElfSymbols(image, SHT_DYNSYM, elf_functions, options);
    size_t mini = 0;
    auto m = AddMiniDebugInfo(image, elf_functions, options);
    if (m.ok()) {
      mini = *m;
    } else {
      result.warnings.push_back(std::string(m.status().message()));
    }
    result.symtab_symbols += symtab;
    result.dynsym_symbols += dynsym;
    result.minidebug_symbols += mini;
    if (symtab + dynsym + mini > best_symbols) {
      best_symbols = symtab + dynsym + mini;
      best_symbol_image = &image;
    }
  }
  if (Cancelled(options)) return absl::CancelledError("reading symbols cancelled");

  // DWARF from the first file that has it.
  const ElfImage* dwarf_image = nullptr;
  SymbolStarts symbol_starts(elf_functions);
  DwarfCounts dwarf_counts;
  for (const ElfImage& image : images) {
    if (!HasDwarf(image)) continue;
    if (absl::Status s = CheckDebugCompression(image); !s.ok()) {
      if (images.size() == 1) return s;
      result.warnings.push_back(std::string(s.message()));
      if (first_error.ok()) first_error = s;
      continue;
    }
    Dwarf* dbg = dwarf_begin_elf(image.elf(), DWARF_C_READ, nullptr);
    if (!dbg) {
      result.warnings.push_back(absl::StrCat(image.name(), ": DWARF unreadable: ", dwarf_errmsg(-1)));
      continue;
    }
    CodeRanges code = CodeRangesOf(image);
    DwarfReader reader(dbg, code, symbol_starts, builder, options);
    absl::Status s = reader.ReadAll(DebugInfoSize(image), 0.0, 0.9);
    dwarf_end(dbg);
    if (s.code() == absl::StatusCode::kCancelled) return s;
    if (!s.ok()) {
      result.warnings.push_back(absl::StrCat(image.name(), ": ", s.message()));
      continue;
    }
    if (reader.counts().bad_units > 0)
      result.warnings.push_back(
          absl::StrCat(image.name(), ": DWARF read up to a broken unit: ", dwarf_errmsg(-1)));
    dwarf_counts = reader.counts();
    if (dwarf_counts.functions == 0 && dwarf_counts.lines == 0) continue;
    dwarf_image = &image;
    break;
  }

  for (ElfFunction& f : elf_functions) builder.AddSymbol(f.name, f.start, f.size);
  elf_functions.clear();

  result.dwarf_functions = dwarf_counts.functions;
  result.inlined_calls = dwarf_counts.inlined;
  result.line_rows = dwarf_counts.lines;
  if (!dwarf_image && best_symbols == 0) {
    if (!first_error.ok() && images.size() < files.size()) return first_error;
    std::string msg = absl::StrCat("no function symbols or DWARF in ", absl::StrJoin(files, ", "));
    if (!result.warnings.empty()) absl::StrAppend(&msg, " (", absl::StrJoin(result.warnings, "; "), ")");
    return absl::NotFoundError(msg);
  }
  result.source_path = dwarf_image ? dwarf_image->name() : best_symbol_image->name();

  std::vector<std::string> parts;
  if (dwarf_image) {
    parts.push_back(absl::StrCat("DWARF: ", dwarf_counts.functions, " functions, ", dwarf_counts.lines,
                                 " lines", dwarf_counts.inlined > 0 ? ", inline chains" : ""));
  }
  if (result.symtab_symbols) parts.push_back(absl::StrCat("symtab: ", result.symtab_symbols, " symbols"));
  if (result.dynsym_symbols) parts.push_back(absl::StrCat("dynsym: ", result.dynsym_symbols, " symbols"));
  if (result.minidebug_symbols)
    parts.push_back(absl::StrCat("MiniDebugInfo: ", result.minidebug_symbols, " symbols"));
  result.description = absl::StrJoin(parts, "; ");

  if (options.progress) options.progress(0.95);
  result.table = std::move(builder).Build();
  if (options.progress) options.progress(1.0);
  return result;
}

}  // namespace kiln::symbols
