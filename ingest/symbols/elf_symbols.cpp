// ReadSymbols: the files in order, their checks, counts and description.
// Backend-neutral: the ELF and DWARF access is a SymbolSource
// (symbol_reader_common.h), from elf_symbols_elfutils.cpp or
// elf_symbols_llvm.cpp as the build chose (KILN_SYMBOLS_BACKEND).
#include "ingest/symbols/elf_symbols.h"
#include "ingest/symbols/go_pclntab.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ingest/symbols/elf_checks.h"
#include "ingest/symbols/elf_identity.h"
#include "ingest/symbols/mini_debug_info.h"
#include "ingest/symbols/symbol_reader_common.h"

namespace kiln::symbols {
namespace {

using internal::Cancelled;
using internal::DwarfCounts;
using internal::ElfFunction;
using internal::SymbolSource;

absl::StatusOr<size_t> AddMiniDebugInfo(const SymbolSource& source, std::vector<ElfFunction>& out,
                                        const SymbolReadOptions& options) {
  std::string_view data = source.GnuDebugData();
  if (data.empty()) return 0;
  auto inner = internal::XzDecode(reinterpret_cast<const uint8_t*>(data.data()), data.size(), source.name());
  if (!inner.ok()) return inner.status();
  std::string_view inner_bytes = *inner;
  auto mini = internal::OpenSymbolSource(source.name() + " [.gnu_debugdata]", &inner_bytes);
  if (!mini.ok()) return mini.status();
  return (*mini)->AddElfSymbols(internal::kShtSymtab, out, options);
}

}  // namespace

absl::StatusOr<SymbolReadResult> ReadSymbols(const std::vector<std::string>& files,
                                             const SymbolReadOptions& options) {
  if (files.empty()) return absl::InvalidArgumentError("no files given to read symbols from");
  SymbolReadResult result;
  storage::SymbolTableBuilder builder;
  std::vector<std::unique_ptr<SymbolSource>> images;
  std::vector<std::string> build_ids;
  absl::Status first_error;
  std::string first_build_id, first_path;
  int first_class = 0;
  uint16_t first_machine = 0;

  // Open and check every file first, so a mismatch is found before work.
  for (const std::string& path : files) {
    auto id = ReadElfIdentity(path);
    auto image = id.ok() ? internal::OpenSymbolSource(path)
                         : absl::StatusOr<std::unique_ptr<SymbolSource>>(id.status());
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
  const SymbolSource* best_symbol_image = nullptr;
  for (const auto& image : images) {
    if (Cancelled(options)) return absl::CancelledError("reading symbols cancelled");
    size_t symtab = image->AddElfSymbols(internal::kShtSymtab, elf_functions, options);
    size_t dynsym = image->AddElfSymbols(internal::kShtDynsym, elf_functions, options);
    size_t mini = 0;
    auto m = AddMiniDebugInfo(*image, elf_functions, options);
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
      best_symbol_image = image.get();
    }
  }
  if (Cancelled(options)) return absl::CancelledError("reading symbols cancelled");

  // DWARF from the first file that has it.
  const SymbolSource* dwarf_image = nullptr;
  internal::SymbolStarts symbol_starts(elf_functions);
  DwarfCounts dwarf_counts;
  for (const auto& image : images) {
    if (!image->HasDwarf()) continue;
    internal::CodeRanges code = image->CodeSections();
    internal::DwarfTableWriter writer(code, symbol_starts, builder, options, image->DebugInfoSize());
    absl::Status s = image->ReadDwarf(writer, &result.warnings);
    if (s.code() == absl::StatusCode::kCancelled) return s;
    // The library cannot read this file's DWARF (zstd with an old libdw):
    // with nothing else to read that is the answer, else a warning.
    if (s.code() == absl::StatusCode::kFailedPrecondition) {
      if (images.size() == 1) return s;
      result.warnings.push_back(std::string(s.message()));
      if (first_error.ok()) first_error = s;
      continue;
    }
    if (!s.ok()) {
      result.warnings.push_back(std::string(s.message()));
      continue;
    }
    dwarf_counts = writer.counts();
    if (dwarf_counts.functions == 0 && dwarf_counts.lines == 0) continue;
    dwarf_image = image.get();
    break;
  }

  // A Go program without DWARF (stripped, as Go is shipped): Go's own line
  // table names every function, with files and lines.
  size_t go_functions = 0;
  std::string go_source;
  if (!dwarf_image) {
    for (const std::string& file : files) {
      absl::StatusOr<GoLineTable> go = ReadGoLineTable(file);
      if (!go.ok()) {
        if (!absl::IsNotFound(go.status())) result.warnings.push_back(std::string(go.status().message()));
        continue;
      }
      for (uint32_t i = 0; i < go->functions(); ++i) {
        std::optional<GoFrame> fn = go->Function(i);
        if (!fn || fn->function.empty() || fn->end <= fn->entry) continue;
        const uint32_t scope = builder.AddScope(builder.Intern(fn->function), storage::SymbolTableBuilder::kNoScope);
        builder.AddRange(scope, fn->entry, fn->end);
        // Where Go knows no line (the padding after a function) the line
        // sequence ends, so no address there takes the line before it.
        bool open = false;
        uint64_t known_to = fn->entry;
        go->ForEachLine(i, [&](uint64_t start, uint64_t end, std::string_view path, int64_t line) {
          if (line > 0) {
            if (open && start != known_to) builder.EndLineSequence(known_to);
            builder.AddLine(start, builder.Intern(path), line);
            open = true;
            known_to = end;
          } else if (open) {
            builder.EndLineSequence(known_to);
            open = false;
          }
        });
        if (open) builder.EndLineSequence(known_to);
        ++go_functions;
      }
      go_source = file;
      break;
    }
  }

  for (ElfFunction& f : elf_functions) builder.AddSymbol(f.name, f.start, f.size);
  elf_functions.clear();

  result.dwarf_functions = dwarf_counts.functions;
  result.inlined_calls = dwarf_counts.inlined;
  result.line_rows = dwarf_counts.lines;
  if (!dwarf_image && best_symbols == 0 && go_functions == 0) {
    if (!first_error.ok() && images.size() < files.size()) return first_error;
    std::string msg = absl::StrCat("no function symbols or DWARF in ", absl::StrJoin(files, ", "));
    if (!result.warnings.empty()) absl::StrAppend(&msg, " (", absl::StrJoin(result.warnings, "; "), ")");
    return absl::NotFoundError(msg);
  }
  result.source_path = dwarf_image ? dwarf_image->name() : go_functions > 0 ? go_source : best_symbol_image->name();

  std::vector<std::string> parts;
  if (dwarf_image) {
    parts.push_back(absl::StrCat("DWARF: ", dwarf_counts.functions, " functions, ", dwarf_counts.lines,
                                 " lines", dwarf_counts.inlined > 0 ? ", inline chains" : ""));
  }
  if (go_functions > 0) parts.push_back(absl::StrCat("Go line table: ", go_functions, " functions"));
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
