// ReadSymbols' file access, LLVM backend: ELF symbols with LLVMObject, DWARF
// with LLVMDebugInfoDWARF's DWARFContext (which also decompresses zlib and,
// when LLVM was built with zstd, zstd debug sections). The rules for what
// goes into the table are in symbol_reader_common.h, shared with the
// elfutils backend.
#include <llvm/BinaryFormat/Dwarf.h>
#include <llvm/DebugInfo/DWARF/DWARFContext.h>

#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "ingest/symbols/demangle.h"
#include "ingest/symbols/elf_checks.h"
#include "ingest/symbols/elf_image_llvm.h"
#include "ingest/symbols/symbol_reader_common.h"

namespace kiln::symbols::internal {
namespace {

using llvm::DWARFDie;
using llvm::DWARFUnit;

template <class ELFT>
size_t AddSymbolsOf(const llvm::object::ELFFile<ELFT>& file, uint32_t section_type,
                    std::vector<ElfFunction>& out, const SymbolReadOptions& options) {
  size_t added = 0;
  auto sections = file.sections();
  if (!sections) {
    llvm::consumeError(sections.takeError());
    return 0;
  }
  for (const auto& shdr : *sections) {
    if (shdr.sh_type != section_type || shdr.sh_entsize == 0) continue;
    auto symbols = file.symbols(&shdr);
    auto strings = file.getStringTableForSymtab(shdr, *sections);
    if (!symbols || !strings) {
      llvm::consumeError(symbols.takeError());
      llvm::consumeError(strings.takeError());
      continue;
    }
    size_t i = 0;
    for (const auto& sym : *symbols) {
      if ((i++ & 4095) == 0 && Cancelled(options)) return added;
      unsigned type = sym.getType();
      if ((type != llvm::ELF::STT_FUNC && type != llvm::ELF::STT_GNU_IFUNC) || sym.st_value == 0 ||
          sym.st_shndx == llvm::ELF::SHN_UNDEF || sym.st_name == 0)
        continue;
      auto name = sym.getName(*strings);
      if (!name) {
        llvm::consumeError(name.takeError());
        continue;
      }
      if (name->empty()) continue;
      uint64_t start = sym.st_value;
      if (file.getHeader().e_machine == llvm::ELF::EM_ARM) start &= ~uint64_t{1};  // Thumb bit
      out.push_back({start, sym.st_size, Demangle(name->str())});
      ++added;
    }
  }
  return added;
}

// The first section called `name` that has data in the file.
template <class ELFT>
const typename ELFT::Shdr* FindSection(const llvm::object::ELFFile<ELFT>& file, std::string_view name) {
  auto sections = file.sections();
  if (!sections) {
    llvm::consumeError(sections.takeError());
    return nullptr;
  }
  llvm::StringRef names = SectionNames(file, *sections);
  for (const auto& shdr : *sections)
    if (SectionName(file, shdr, names) == name) return &shdr;
  return nullptr;
}

// DWARFContext::create allocates each compressed section's ch_size up
// front and aborts when that fails (fuzz_elf: a ch_size of 0xfa00000000ca),
// so a claim over kMaxCompressionRatio is refused before LLVM sees it.

template <class ELFT>
absl::Status CheckCompressedSizes(const std::string& name, const llvm::object::ELFFile<ELFT>& file) {
  auto sections = file.sections();
  if (!sections)
    return absl::InvalidArgumentError(absl::StrCat(name, ": ", LlvmMessage(sections.takeError())));
  llvm::StringRef names = SectionNames(file, *sections);
  for (size_t i = 0; i < sections->size(); ++i) {
    const auto& shdr = (*sections)[i];
    if (!(shdr.sh_flags & kShfCompressed) || shdr.sh_type == kShtNobits) continue;
    typename ELFT::Chdr chdr;
    auto data = file.getSectionContents(shdr);
    if (!data) {
      llvm::consumeError(data.takeError());
      continue;
    }
    if (data->size() < sizeof(chdr)) continue;  // LLVM reports a short one itself
    std::memcpy(&chdr, data->data(), sizeof(chdr));
    uint64_t size = chdr.ch_size;
    if (size / kMaxCompressionRatio > data->size())
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": section ", i, " (", std::string(SectionName(file, shdr, names)),
                       ") claims to decompress to ", size, " bytes (ch_size) from ", data->size(),
                       "; more than ", kMaxCompressionRatio, " times over is a garbage compression header"));
  }
  return absl::OkStatus();
}

// LLVM 16's line table parser crashes (SEGV in llvm-dwarfdump-16
// --debug-line too) on a DWARF 5 directory or file name entry format that
// names a form it does not know; fuzz_elf found it. These are the forms
// DWARF 5 (6.2.4.1) allows there.
bool IsLineEntryForm(uint64_t form) {
  using namespace llvm::dwarf;
  switch (form) {
    case DW_FORM_string:
    case DW_FORM_line_strp:
    case DW_FORM_strp:
    case DW_FORM_strp_sup:
    case DW_FORM_strx:
    case DW_FORM_strx1:
    case DW_FORM_strx2:
    case DW_FORM_strx3:
    case DW_FORM_strx4:
    case DW_FORM_udata:
    case DW_FORM_data1:
    case DW_FORM_data2:
    case DW_FORM_data4:
    case DW_FORM_data8:
    case DW_FORM_data16:
    case DW_FORM_block:
      return true;
    default:
      return false;
  }
}

void SkipLineEntryForm(const llvm::DWARFDataExtractor& data, llvm::DataExtractor::Cursor& c, uint64_t form,
                       uint64_t offset_size) {
  using namespace llvm::dwarf;
  switch (form) {
    case DW_FORM_string:
      data.getCStrRef(c);
      break;
    case DW_FORM_block:
      data.skip(c, data.getULEB128(c));
      break;
    case DW_FORM_strx:
    case DW_FORM_udata:
      data.getULEB128(c);
      break;
    case DW_FORM_line_strp:
    case DW_FORM_strp:
    case DW_FORM_strp_sup:
      data.skip(c, offset_size);
      break;
    default:
      data.skip(c, *llvm::dwarf::getFixedFormByteSize(static_cast<Form>(form), {5, 8, DWARF32}));
      break;
  }
}

// False when the DWARF 5 line table header at `offset` has an entry format
// with a form outside IsLineEntryForm. Other damage (a truncated header)
// is left to LLVM, which reports it.
bool LineEntryFormsKnown(const llvm::DWARFDataExtractor& data, uint64_t offset) {
  llvm::DataExtractor::Cursor c(offset);
  auto [length, format] = data.getInitialLength(c);
  uint16_t version = data.getU16(c);
  bool known = true;
  if (c && version >= 5) {
    uint64_t offset_size = format == llvm::dwarf::DWARF64 ? 8 : 4;
    data.skip(c, 2 + offset_size + 5);  // address and selector sizes, header_length, 5 ubytes
    uint8_t opcode_base = data.getU8(c);
    data.skip(c, opcode_base > 0 ? opcode_base - 1 : 0);
    // Directories, then file names: each a format list, then the entries.
    for (int table = 0; table < 2 && c && known; ++table) {
      std::vector<uint64_t> forms(data.getU8(c));
      for (uint64_t& form : forms) {
        data.getULEB128(c);  // content type
        form = data.getULEB128(c);
        known = known && (!c || IsLineEntryForm(form));
      }
      uint64_t entries = data.getULEB128(c);
      for (uint64_t e = 0; table == 0 && known && c && e < entries; ++e)
        for (uint64_t form : forms) SkipLineEntryForm(data, c, form, offset_size);
    }
  }
  llvm::consumeError(c.takeError());
  return known;
}

// LLVM 16's DIE extraction (DWARFDebugInfoEntry::extractFast) skips
// attribute values without bounds checks: a broken abbreviation or block
// length sends it reading far past .debug_info (fuzz_elf: SEGV in
// getULEB128). So before LLVM extracts any DIE, every unit's DIEs are
// skipped through here with bounds-checked reads; units reference each
// other, so one unit whose DIEs leave it means none is read.
using AbbrevForms = std::unordered_map<uint64_t, std::vector<uint64_t>>;  // abbrev code -> forms

bool ParseAbbrevs(const llvm::DataExtractor& data, uint64_t offset, AbbrevForms* out) {
  llvm::DataExtractor::Cursor c(offset);
  for (uint64_t code; c && (code = data.getULEB128(c)) != 0;) {
    data.getULEB128(c);  // tag
    data.getU8(c);       // has children
    std::vector<uint64_t>& forms = (*out)[code];
    forms.clear();
    for (uint64_t attr = 1, form = 1; c && (attr != 0 || form != 0);) {
      attr = data.getULEB128(c);
      form = data.getULEB128(c);
      if (form == llvm::dwarf::DW_FORM_implicit_const) data.getSLEB128(c);
      if (attr != 0 || form != 0) forms.push_back(form);
    }
  }
  bool ok = static_cast<bool>(c);
  llvm::consumeError(c.takeError());
  return ok;
}

bool SkipForm(const llvm::DataExtractor& data, llvm::DataExtractor::Cursor& c, uint64_t form,
              const llvm::dwarf::FormParams& params, int depth = 0) {
  using namespace llvm::dwarf;
  switch (form) {
    case DW_FORM_indirect:
      return depth < 4 && SkipForm(data, c, data.getULEB128(c), params, depth + 1);
    case DW_FORM_string:
      data.getCStrRef(c);
      break;
    case DW_FORM_block:
    case DW_FORM_exprloc:
      data.skip(c, data.getULEB128(c));
      break;
    case DW_FORM_block1:
      data.skip(c, data.getU8(c));
      break;
    case DW_FORM_block2:
      data.skip(c, data.getU16(c));
      break;
    case DW_FORM_block4:
      data.skip(c, data.getU32(c));
      break;
    case DW_FORM_sdata:
      data.getSLEB128(c);
      break;
    case DW_FORM_udata:
    case DW_FORM_ref_udata:
    case DW_FORM_strx:
    case DW_FORM_addrx:
    case DW_FORM_loclistx:
    case DW_FORM_rnglistx:
    case DW_FORM_GNU_addr_index:
    case DW_FORM_GNU_str_index:
      data.getULEB128(c);
      break;
    default: {
      std::optional<uint8_t> size = getFixedFormByteSize(static_cast<Form>(form), params);
      if (!size) return false;  // a form LLVM cannot size: it would misread what follows
      data.skip(c, *size);
    }
  }
  return static_cast<bool>(c);
}

// "" when every DIE of `unit` lies inside it, else what is wrong.
std::string CheckDieExtents(llvm::DWARFContext& context, llvm::DWARFUnit& unit) {
  const llvm::DWARFObject& obj = context.getDWARFObj();
  llvm::DataExtractor abbrev_data(obj.getAbbrevSection(), context.isLittleEndian(), 0);
  AbbrevForms abbrevs;
  if (!ParseAbbrevs(abbrev_data, unit.getAbbreviationsOffset(), &abbrevs))
    return absl::StrCat("unit at ", Hex(unit.getOffset()), ": abbreviations at ",
                        Hex(unit.getAbbreviationsOffset()), " are truncated");
  llvm::DWARFDataExtractor data = unit.getDebugInfoExtractor();
  uint64_t end = unit.getNextUnitOffset();
  llvm::DataExtractor::Cursor c(unit.getOffset() + unit.getHeaderSize());
  std::string problem;
  while (c && problem.empty() && c.tell() < end) {  // a failed read leaves c where it was
    uint64_t die = c.tell();
    uint64_t code = data.getULEB128(c);
    if (code == 0) continue;  // a null entry, or a failed read that ends the loop
    auto it = abbrevs.find(code);
    if (it == abbrevs.end()) {
      problem =
          absl::StrCat("DIE at ", Hex(die), " uses abbreviation ", code, ", which its unit does not define");
      continue;
    }
    for (uint64_t form : it->second) {
      if (!SkipForm(data, c, form, unit.getFormParams()) || c.tell() > end) {
        problem = absl::StrCat("DIE at ", Hex(die), " extends past its unit (which ends at ", Hex(end),
                               ") or uses an unknown form");
        break;
      }
    }
  }
  llvm::Error error = c.takeError();
  if (problem.empty() && error)
    problem = absl::StrCat("DIEs of the unit at ", Hex(unit.getOffset()),
                           " unreadable: ", LlvmMessage(std::move(error)));
  llvm::consumeError(std::move(error));
  return problem;
}

// Walks one DWARFContext into a DwarfTableWriter.
class DwarfReader {
 public:
  DwarfReader(llvm::DWARFContext& context, DwarfTableWriter& writer, std::function<void(llvm::Error)> problem)
      : context_(context), writer_(writer), problem_(std::move(problem)) {}

  // False when cancelled. `units` counts the compile units read.
  bool ReadAll(size_t* units) {
    for (const auto& unit : context_.info_section_units()) {
      if (!writer_.StartUnit(unit->getOffset())) return false;
      if (unit->isTypeUnit()) continue;
      DWARFDie die = unit->getUnitDIE(/*ExtractUnitDIEOnly=*/false);
      if (!die || (die.getTag() != llvm::dwarf::DW_TAG_compile_unit &&
                   die.getTag() != llvm::dwarf::DW_TAG_partial_unit))
        continue;
      ++*units;
      ReadUnit(*unit, die);
    }
    return true;
  }

 private:
  void ReadUnit(DWARFUnit& unit, const DWARFDie& die) {
    const char* comp_dir = unit.getCompilationDir();
    comp_dir_ = comp_dir ? comp_dir : "";
    file_ids_.clear();
    lines_ = nullptr;
    // dwz and partial units share line tables; read each one once.
    std::optional<uint64_t> stmt_list = llvm::dwarf::toSectionOffset(die.find(llvm::dwarf::DW_AT_stmt_list));
    const llvm::DWARFObject& obj = context_.getDWARFObj();
    llvm::DWARFDataExtractor line_data(obj, obj.getLineSection(), context_.isLittleEndian(),
                                       unit.getAddressByteSize());
    if (stmt_list && !LineEntryFormsKnown(line_data, *stmt_list))
      problem_(llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       "line table at offset 0x%" PRIx64
                                       " has an unknown form in its file entry format; skipped",
                                       *stmt_list));
    else
      lines_ = context_.getLineTableForUnit(&unit);
    if (lines_ && (!stmt_list || line_tables_seen_.insert(*stmt_list).second)) ReadLines();
    WalkChildren(die, DwarfTableWriter::Parent{}, 0);
  }

  // File names as addr2line prints them: the directory and the name joined,
  // under DW_AT_comp_dir when the directory is relative.
  uint32_t FileId(uint64_t index) {
    if (!lines_) return 0;
    auto it = file_ids_.find(index);
    if (it != file_ids_.end()) return it->second;
    std::string path;
    uint32_t id = 0;
    if (lines_->getFileNameByIndex(index, comp_dir_,
                                   llvm::DILineInfoSpecifier::FileLineInfoKind::AbsoluteFilePath, path))
      id = writer_.Intern(path);
    file_ids_.emplace(index, id);
    return id;
  }

  // LLVM keeps a table's rows in file order and its sequences apart;
  // sequences by start address give the address order the writer expects
  // (and libdw returns), an end of sequence before a row at the same address.
  void ReadLines() {
    std::vector<llvm::DWARFDebugLine::Sequence> sequences = lines_->Sequences;
    std::stable_sort(sequences.begin(), sequences.end(),
                     [](const auto& a, const auto& b) { return a.LowPC < b.LowPC; });
    for (const auto& seq : sequences) {
      for (size_t i = seq.FirstRowIndex; i < seq.LastRowIndex && i < lines_->Rows.size(); ++i) {
        const auto& row = lines_->Rows[i];
        uint64_t addr = row.Address.Address;
        if (row.EndSequence) {
          writer_.EndSequence(addr);
          continue;
        }
        if (!writer_.InCode(addr)) continue;
        writer_.LineRow(addr, FileId(row.File), row.Line);
      }
    }
    writer_.EndLineTable();
  }

  // The DIE's name: its linkage name demangled, else DW_AT_name (through
  // abstract origins and specifications). *linkage_out says which.
  uint32_t NameId(const DWARFDie& die, bool* linkage_out = nullptr) {
    const char* raw = die.getLinkageName();
    bool linkage = raw != nullptr;
    if (!raw) raw = die.getShortName();
    if (linkage_out) *linkage_out = linkage;
    return writer_.InternName(raw, linkage);
  }

  void Ranges(const DWARFDie& die, DwarfTableWriter::Ranges* out) {
    out->clear();
    auto ranges = die.getAddressRanges();
    if (!ranges) {
      llvm::consumeError(ranges.takeError());
      return;
    }
    for (const auto& r : *ranges) out->emplace_back(r.LowPC, r.HighPC);
    writer_.KeepCode(out);
  }

  void WalkChildren(const DWARFDie& parent_die, const DwarfTableWriter::Parent& parent, int depth) {
    if (depth > kMaxDieDepth) return;
    DwarfTableWriter::Ranges ranges;
    for (DWARFDie child = parent_die.getFirstChild(); child && !child.isNULL(); child = child.getSibling()) {
      switch (KindOfTag(child.getTag())) {
        case DieKind::kFunction: {
          Ranges(child, &ranges);
          if (ranges.empty()) {
            // A declaration or an abstract instance: see the elfutils
            // backend; GCC nests lambdas' code in abstract DIEs.
            WalkChildren(child, DwarfTableWriter::Parent{}, depth + 1);
            break;
          }
          bool linkage = false;
          uint32_t name = NameId(child, &linkage);
          std::optional<uint64_t> entry = llvm::dwarf::toAddress(child.find(llvm::dwarf::DW_AT_entry_pc));
          if (!entry) entry = llvm::dwarf::toAddress(child.find(llvm::dwarf::DW_AT_low_pc));
          WalkChildren(child, writer_.AddFunction(name, linkage, entry, ranges), depth + 1);
          break;
        }
        case DieKind::kInlinedCall: {
          if (parent.scope == storage::SymbolTableBuilder::kNoScope) break;
          Ranges(child, &ranges);
          if (ranges.empty()) break;
          uint32_t file_id = 0;
          if (auto call_file = llvm::dwarf::toUnsigned(child.find(llvm::dwarf::DW_AT_call_file)))
            file_id = FileId(*call_file);
          uint64_t call_line = llvm::dwarf::toUnsigned(child.find(llvm::dwarf::DW_AT_call_line)).value_or(0);
          uint32_t name = NameId(child);
          WalkChildren(child, writer_.AddInlinedCall(parent, name, file_id, call_line, ranges), depth + 1);
          break;
        }
        case DieKind::kContainer:
          WalkChildren(child, parent, depth + 1);
          break;
        case DieKind::kOther:
          break;
      }
    }
  }

  llvm::DWARFContext& context_;
  DwarfTableWriter& writer_;
  std::function<void(llvm::Error)> problem_;
  std::string comp_dir_;
  const llvm::DWARFDebugLine::LineTable* lines_ = nullptr;
  std::unordered_map<uint64_t, uint32_t> file_ids_;  // this unit's line table's file index -> id
  std::unordered_set<uint64_t> line_tables_seen_;
};

class LlvmSymbolSource final : public SymbolSource {
 public:
  explicit LlvmSymbolSource(std::unique_ptr<LlvmElfImage> image) : image_(std::move(image)) {}

  const std::string& name() const override { return image_->name(); }

  size_t AddElfSymbols(uint32_t section_type, std::vector<ElfFunction>& out,
                       const SymbolReadOptions& options) const override {
    return image_->Visit([&](const auto& file) { return AddSymbolsOf(file, section_type, out, options); });
  }

  std::string_view GnuDebugData() const override {
    return image_->Visit([&](const auto& file) -> std::string_view {
      const auto* shdr = FindSection(file, ".gnu_debugdata");
      if (!shdr || shdr->sh_type == kShtNobits) return {};
      auto data = file.getSectionContents(*shdr);
      if (!data) {
        llvm::consumeError(data.takeError());
        return {};
      }
      return std::string_view(reinterpret_cast<const char*>(data->data()), data->size());
    });
  }

  CodeRanges CodeSections() const override {
    return image_->Visit([&](const auto& file) {
      CodeRanges out;
      auto sections = file.sections();
      if (!sections) {
        llvm::consumeError(sections.takeError());
        return out;
      }
      for (const auto& shdr : *sections) out.AddSection(shdr.sh_flags, shdr.sh_addr, shdr.sh_size);
      return out;
    });
  }

  bool HasDwarf() const override {
    return image_->Visit([&](const auto& file) {
      const auto* shdr = FindSection(file, ".debug_info");
      if (!shdr) shdr = FindSection(file, ".zdebug_info");
      return shdr && shdr->sh_type != kShtNobits && shdr->sh_size > 0;
    });
  }

  uint64_t DebugInfoSize() const override {
    return image_->Visit([&](const auto& file) -> uint64_t {
      const auto* shdr = FindSection(file, ".debug_info");
      if (!shdr) shdr = FindSection(file, ".zdebug_info");
      return shdr ? uint64_t{shdr->sh_size} : 0;
    });
  }

  absl::Status ReadDwarf(DwarfTableWriter& writer, std::vector<std::string>* warnings) override {
    // LLVM reports what it cannot parse (a broken unit header, a section it
    // cannot decompress) here and goes on; the first message is kept.
    std::string first_problem;
    size_t problems = 0;
    auto handler = [&](llvm::Error error) {
      std::string message = LlvmMessage(std::move(error));
      if (problems++ == 0) first_problem = message;
    };
    absl::Status sizes = image_->Visit([&](const auto& file) { return CheckCompressedSizes(name(), file); });
    if (!sizes.ok()) return sizes;
    auto context =
        llvm::DWARFContext::create(image_->object(), llvm::DWARFContext::ProcessDebugRelocations::Process,
                                   nullptr, "", handler, handler);
    for (const auto& units : {context->info_section_units(), context->types_section_units()}) {
      for (const auto& unit : units) {
        std::string problem = CheckDieExtents(*context, *unit);
        if (!problem.empty())
          return absl::InvalidArgumentError(absl::StrCat(name(), ": DWARF not read: ", problem));
      }
    }
    DwarfReader reader(*context, writer, handler);
    size_t units = 0;
    if (!reader.ReadAll(&units)) return absl::CancelledError("reading symbols cancelled");
    if (units == 0 && problems > 0)
      return absl::InvalidArgumentError(absl::StrCat(name(), ": DWARF units unreadable: ", first_problem));
    if (problems > 0)
      warnings->push_back(absl::StrCat(name(), ": DWARF partly unreadable (", problems,
                                       " problems; first: ", first_problem, ")"));
    return absl::OkStatus();
  }

 private:
  std::unique_ptr<LlvmElfImage> image_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<SymbolSource>> OpenSymbolSource(const std::string& path,
                                                               const std::string_view* bytes) {
  return OpenSymbolSourceWith<LlvmSymbolSource, LlvmElfImage>(path, bytes);
}

}  // namespace kiln::symbols::internal
