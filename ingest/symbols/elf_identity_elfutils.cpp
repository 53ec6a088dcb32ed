// ReadElfIdentity's header reading, elfutils backend (libelf).
#include <cstring>

#include "absl/strings/str_cat.h"
#include "ingest/symbols/elf_identity_backend.h"
#include "ingest/symbols/elf_image_elfutils.h"

namespace kiln::symbols::internal {
namespace {

absl::StatusOr<ElfIdentity> IdentityOf(const ElfImage& image) {
  ElfIdentity id;
  id.path = image.name();
  id.file_size = image.size();
  id.elf_class = image.elf_class();
  GElf_Ehdr ehdr;
  if (!gelf_getehdr(image.elf(), &ehdr)) return absl::InvalidArgumentError(image.name() + ": bad ELF header");
  id.machine = ehdr.e_machine;
  id.type = ehdr.e_type;
  for (Elf_Scn* scn = elf_nextscn(image.elf(), nullptr); scn; scn = elf_nextscn(image.elf(), scn)) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr)) continue;
    std::string_view name = image.SectionName(shdr);
    NoteSection(name, shdr.sh_type, &id);
    if (shdr.sh_type == SHT_NOTE && id.gnu_build_id.empty()) {
      id.gnu_build_id = BuildIdFromNotes(elf_getdata(scn, nullptr));
    }
    if (name == ".gnu_debuglink" && shdr.sh_type != SHT_NOBITS) {
      Elf_Data* data = elf_rawdata(scn, nullptr);
      if (!data || !data->d_buf) continue;
      absl::Status s =
          ParseDebugLink(image.name(), std::string_view(static_cast<const char*>(data->d_buf), data->d_size),
                         image.big_endian(), &id);
      if (!s.ok()) return s;
    }
  }
  if (id.gnu_build_id.empty()) {
    // Files without section headers still have their notes in PT_NOTE.
    size_t phnum = 0;
    if (elf_getphdrnum(image.elf(), &phnum) == 0) {
      for (size_t i = 0; i < phnum && id.gnu_build_id.empty(); ++i) {
        GElf_Phdr ph;
        if (!gelf_getphdr(image.elf(), static_cast<int>(i), &ph) || ph.p_type != PT_NOTE) continue;
        if (ph.p_offset > image.size() || ph.p_filesz > image.size() - ph.p_offset) continue;
        id.gnu_build_id = BuildIdFromNotes(
            elf_getdata_rawchunk(image.elf(), static_cast<int64_t>(ph.p_offset), ph.p_filesz, ELF_T_NHDR));
      }
    }
  }
  return id;
}

}  // namespace

absl::StatusOr<ElfIdentity> ReadIdentityFields(const std::string& path) {
  auto image = ElfImage::Open(path);
  if (!image.ok()) return image.status();
  return IdentityOf(*image);
}

absl::StatusOr<ElfSectionBytes> ReadElfSection(const std::string& path, std::string_view name, bool with_bytes) {
  auto image = ElfImage::Open(path);
  if (!image.ok()) return image.status();
  GElf_Shdr shdr;
  Elf_Scn* scn = image->FindSection(name, &shdr);
  if (!scn) return absl::NotFoundError(absl::StrCat(path, ": no ", std::string(name), " section"));
  ElfSectionBytes out;
  out.address = shdr.sh_addr;
  if (with_bytes && shdr.sh_type != SHT_NOBITS) {
    // Checked at open: the section's data lies inside the file.
    Elf_Data* data = elf_rawdata(scn, nullptr);
    if (!data || !data->d_buf) return absl::InvalidArgumentError(absl::StrCat(path, ": cannot read ", std::string(name)));
    out.bytes.assign(static_cast<const char*>(data->d_buf), data->d_size);
  }
  return out;
}

absl::StatusOr<ElfIdentity> ReadIdentityFieldsFromBytes(std::string_view bytes, const std::string& name) {
  auto image = ElfImage::FromBytes(bytes, name);
  if (!image.ok()) return image.status();
  return IdentityOf(*image);
}

}  // namespace kiln::symbols::internal
