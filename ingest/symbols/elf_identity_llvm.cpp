// ReadElfIdentity's header reading, LLVM backend (LLVMObject).
#include <llvm/Config/llvm-config.h>

#include <algorithm>
#include <span>

#include "absl/strings/str_cat.h"
#include "ingest/symbols/elf_checks.h"
#include "ingest/symbols/elf_identity_backend.h"
#include "ingest/symbols/elf_image_llvm.h"

namespace kiln::symbols::internal {
namespace {

// A note's descriptor; `align` is its section's or segment's alignment.
template <class Note>
llvm::ArrayRef<uint8_t> NoteDesc(const Note& note, uint64_t align) {
#if LLVM_VERSION_MAJOR >= 17
  // LLVM 17 gave getDesc the note alignment (4 or 8; 0 and 1 mean 4, as in notes_begin).
  return note.getDesc(std::max<uint64_t>(align, 4));
#else
  (void)align;
  return note.getDesc();
#endif
}

// The GNU build id among `notes` (a section's or a segment's, aligned to
// `align`), or "".
template <class Notes>
std::string BuildIdFromNotes(Notes notes, uint64_t align, llvm::Error& error) {
  std::string id;
  for (const auto& note : notes) {
    llvm::ArrayRef<uint8_t> desc = NoteDesc(note, align);
    if (note.getType() == kNoteGnuBuildId && note.getName() == "GNU" && !desc.empty()) {
      id = HexLower(std::span(desc.data(), desc.size()));
      break;
    }
  }
  llvm::consumeError(std::move(error));
  return id;
}

template <class ELFT>
absl::StatusOr<ElfIdentity> IdentityOf(const LlvmElfImage& image, const llvm::object::ELFFile<ELFT>& file) {
  ElfIdentity id;
  id.path = image.name();
  id.file_size = image.size();
  id.elf_class = ELFT::Is64Bits ? 64 : 32;
  id.machine = file.getHeader().e_machine;
  id.type = file.getHeader().e_type;
  auto sections = file.sections();
  if (!sections) return Invalid(image.name(), LlvmMessage(sections.takeError()));  // checked at open
  llvm::StringRef names = SectionNames(file, *sections);
  for (const auto& shdr : *sections) {
    std::string_view name = SectionName(file, shdr, names);
    NoteSection(name, shdr.sh_type, &id);
    if (shdr.sh_type == kShtNote && id.gnu_build_id.empty()) {
      llvm::Error error = llvm::Error::success();
      id.gnu_build_id = BuildIdFromNotes(file.notes(shdr, error), shdr.sh_addralign, error);
    }
    if (name == ".gnu_debuglink" && shdr.sh_type != kShtNobits) {
      auto data = file.getSectionContents(shdr);
      if (!data) {
        llvm::consumeError(data.takeError());
        continue;
      }
      absl::Status s = ParseDebugLink(
          image.name(), std::string_view(reinterpret_cast<const char*>(data->data()), data->size()),
          !file.isLE(), &id);
      if (!s.ok()) return s;
    }
  }
  if (id.gnu_build_id.empty()) {
    // Files without section headers still have their notes in PT_NOTE.
    auto phdrs = file.program_headers();
    if (!phdrs) {
      llvm::consumeError(phdrs.takeError());
      return id;
    }
    for (const auto& ph : *phdrs) {
      if (ph.p_type != llvm::ELF::PT_NOTE || !id.gnu_build_id.empty()) continue;
      if (ph.p_offset > image.size() || ph.p_filesz > image.size() - ph.p_offset) continue;
      llvm::Error error = llvm::Error::success();
      id.gnu_build_id = BuildIdFromNotes(file.notes(ph, error), ph.p_align, error);
    }
  }
  return id;
}

absl::StatusOr<ElfIdentity> IdentityOfImage(absl::StatusOr<std::unique_ptr<LlvmElfImage>> image) {
  if (!image.ok()) return image.status();
  const LlvmElfImage& i = **image;
  return i.Visit([&](const auto& file) { return IdentityOf(i, file); });
}

}  // namespace

absl::StatusOr<ElfIdentity> ReadIdentityFields(const std::string& path) {
  return IdentityOfImage(LlvmElfImage::Open(path));
}

absl::StatusOr<ElfSectionBytes> ReadElfSection(const std::string& path, std::string_view name, bool with_bytes) {
  absl::StatusOr<std::unique_ptr<LlvmElfImage>> image = LlvmElfImage::Open(path);
  if (!image.ok()) return image.status();
  const LlvmElfImage& i = **image;
  return i.Visit([&](const auto& file) -> absl::StatusOr<ElfSectionBytes> {
    auto sections = file.sections();
    if (!sections) return Invalid(i.name(), LlvmMessage(sections.takeError()));
    llvm::StringRef names = SectionNames(file, *sections);
    for (const auto& shdr : *sections) {
      if (SectionName(file, shdr, names) != name) continue;
      ElfSectionBytes out;
      out.address = shdr.sh_addr;
      if (with_bytes && shdr.sh_type != kShtNobits) {
        auto data = file.getSectionContents(shdr);
        if (!data) return Invalid(i.name(), LlvmMessage(data.takeError()));
        out.bytes.assign(reinterpret_cast<const char*>(data->data()), data->size());
      }
      return out;
    }
    return absl::NotFoundError(absl::StrCat(path, ": no ", std::string(name), " section"));
  });
}

absl::StatusOr<ElfIdentity> ReadIdentityFieldsFromBytes(std::string_view bytes, const std::string& name) {
  return IdentityOfImage(LlvmElfImage::FromBytes(bytes, name));
}

}  // namespace kiln::symbols::internal
