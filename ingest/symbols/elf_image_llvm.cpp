#include "ingest/symbols/elf_image_llvm.h"

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "ingest/symbols/elf_checks.h"

namespace kiln::symbols::internal {
namespace {

using llvm::object::ELFFile;

// The shared header checks over LLVM's view of the header, before LLVM's
// ELFObjectFile (whose own messages name neither file nor field) sees it.
template <class ELFT>
absl::Status CheckLayout(const std::string& name, llvm::StringRef bytes) {
  auto file = ELFFile<ELFT>::create(bytes);
  if (!file) return Invalid(name, absl::StrCat("bad ELF header: ", LlvmMessage(file.takeError())));
  const auto& h = file->getHeader();
  ElfHeaderFields fields{
      ELFT::Is64Bits ? 64 : 32, h.e_phoff, h.e_shoff, h.e_phentsize, h.e_phnum, h.e_shentsize, h.e_shnum};
  uint64_t size = bytes.size();
  if (absl::Status s = CheckHeaderTables(name, size, fields); !s.ok()) return s;
  auto sections = file->sections();
  if (!sections)
    return Invalid(name,
                   absl::StrCat("section header table unreadable: ", LlvmMessage(sections.takeError())));
  // With more than 0xff00 sections e_shnum is 0 and the count is in section 0.
  if (absl::Status s = CheckSectionCount(name, size, fields, sections->size()); !s.ok()) return s;
  uint64_t shstrndx = h.e_shstrndx;
  if (shstrndx == llvm::ELF::SHN_XINDEX && !sections->empty()) shstrndx = (*sections)[0].sh_link;
  if (absl::Status s = CheckSectionNameIndex(name, shstrndx, sections->size()); !s.ok()) return s;
  llvm::StringRef names = SectionNames(*file, *sections);
  for (size_t i = 1; i < sections->size(); ++i) {
    const auto& shdr = (*sections)[i];
    absl::Status s = CheckSectionData(name, size, i, shdr.sh_type, shdr.sh_offset, shdr.sh_size, [&] {
      return i == shstrndx ? std::string_view() : SectionName(*file, shdr, names);
    });
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

std::string LlvmMessage(llvm::Error error) { return llvm::toString(std::move(error)); }

absl::StatusOr<std::unique_ptr<LlvmElfImage>> LlvmElfImage::Open(const std::string& path) {
  auto fd = OpenForReading(path);
  if (!fd.ok()) return fd.status();
  auto size = CheckOpenedFile(path, *fd);
  if (!size.ok()) {
    close(*fd);
    return size.status();
  }
  auto buffer = llvm::MemoryBuffer::getOpenFile(*fd, path, *size, /*RequiresNullTerminator=*/false);
  close(*fd);
  if (!buffer) return absl::UnavailableError(absl::StrCat(path, ": ", buffer.getError().message()));
  std::unique_ptr<LlvmElfImage> image(new LlvmElfImage());
  image->name_ = path;
  image->buffer_ = std::move(*buffer);
  if (absl::Status s = image->Check(); !s.ok()) return s;
  return image;
}

absl::StatusOr<std::unique_ptr<LlvmElfImage>> LlvmElfImage::FromBytes(std::string_view bytes,
                                                                      const std::string& name) {
  if (bytes.empty()) return Invalid(name, "empty, not an ELF file");
  if (absl::Status s = CheckIdent(name, bytes.data(), bytes.size(), bytes.size()); !s.ok()) return s;
  std::unique_ptr<LlvmElfImage> image(new LlvmElfImage());
  image->name_ = name;
  image->buffer_ = llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(bytes.data(), bytes.size()), name);
  if (absl::Status s = image->Check(); !s.ok()) return s;
  return image;
}

absl::Status LlvmElfImage::Check() {
  llvm::StringRef bytes = buffer_->getBuffer();
  if (absl::Status s = CheckIdent(name_, bytes.data(), bytes.size(), bytes.size()); !s.ok()) return s;
  bool is64 = bytes[kElfIdentClass] == kElfClass64;
  bool big = bytes[kElfIdentData] == kElfDataMsb;
  absl::Status s = is64 ? (big ? CheckLayout<llvm::object::ELF64BE>(name_, bytes)
                               : CheckLayout<llvm::object::ELF64LE>(name_, bytes))
                        : (big ? CheckLayout<llvm::object::ELF32BE>(name_, bytes)
                               : CheckLayout<llvm::object::ELF32LE>(name_, bytes));
  if (!s.ok()) return s;
  auto object = llvm::object::ObjectFile::createELFObjectFile(buffer_->getMemBufferRef());
  if (!object) return Invalid(name_, absl::StrCat("LLVM cannot open it: ", LlvmMessage(object.takeError())));
  object_.reset(llvm::cast<llvm::object::ELFObjectFileBase>(object->release()));
  return absl::OkStatus();
}

}  // namespace kiln::symbols::internal
