// LlvmElfImage (internal to ingest/symbols, LLVM backend): one ELF file
// mapped with llvm::MemoryBuffer, checked up front with the shared checks
// (elf_checks.h, the same messages as the elfutils backend), then opened as
// an llvm::object::ELFObjectFileBase. LLVMObject bounds-checks on its own;
// the checks here are for messages that name the file and the field.
// One thread at a time per image; distinct images are independent.
#pragma once

#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Support/MemoryBuffer.h>

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kiln::symbols::internal {

class LlvmElfImage {
 public:
  // Maps the file read-only.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<LlvmElfImage>> Open(const std::string& path);
  // Over a private copy of `bytes`; `name` is used in messages.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<LlvmElfImage>> FromBytes(std::string_view bytes,
                                                                               const std::string& name);

  const std::string& name() const { return name_; }
  uint64_t size() const { return buffer_->getBufferSize(); }
  const llvm::object::ELFObjectFileBase& object() const { return *object_; }

  // Calls f(const llvm::object::ELFFile<ELFT>&) for the file's class and
  // byte order and returns what it returns.
  template <class F>
  decltype(auto) Visit(F&& f) const {
    using namespace llvm::object;
    if (const auto* o = llvm::dyn_cast<ELF64LEObjectFile>(object_.get())) return f(o->getELFFile());
    if (const auto* o = llvm::dyn_cast<ELF64BEObjectFile>(object_.get())) return f(o->getELFFile());
    if (const auto* o = llvm::dyn_cast<ELF32LEObjectFile>(object_.get())) return f(o->getELFFile());
    return f(llvm::cast<ELF32BEObjectFile>(object_.get())->getELFFile());
  }

 private:
  LlvmElfImage() = default;
  absl::Status Check();

  std::string name_;
  std::unique_ptr<llvm::MemoryBuffer> buffer_;
  std::unique_ptr<llvm::object::ELFObjectFileBase> object_;
};

// llvm::Error's message, consuming it.
std::string LlvmMessage(llvm::Error error);

// The name of section `shdr` ("" when it has none or it is unreadable).
template <class ELFT>
std::string_view SectionName(const llvm::object::ELFFile<ELFT>& file, const typename ELFT::Shdr& shdr,
                             llvm::StringRef shstrtab) {
  auto name = file.getSectionName(shdr, shstrtab);
  if (!name) {
    llvm::consumeError(name.takeError());
    return {};
  }
  return std::string_view(name->data(), name->size());
}

// The section name string table ("" when unreadable).
template <class ELFT>
llvm::StringRef SectionNames(const llvm::object::ELFFile<ELFT>& file,
                             typename llvm::object::ELFFile<ELFT>::Elf_Shdr_Range sections) {
  auto names = file.getSectionStringTable(sections);
  if (!names) {
    llvm::consumeError(names.takeError());
    return {};
  }
  return *names;
}

}  // namespace kiln::symbols::internal
