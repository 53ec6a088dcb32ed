#include "ingest/symbols/elf_identity.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "ingest/symbols/elf_checks.h"
#include "ingest/symbols/elf_identity_backend.h"

namespace kiln::symbols {
namespace {

constexpr size_t kHtlChunk = 4096;
constexpr size_t kHtlBytes = 16;

// SHA-256 from OpenSSL's libcrypto: packaged everywhere, no hand-written hash.
class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new()) { EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr); }
  ~Sha256() { EVP_MD_CTX_free(ctx_); }
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void Update(const void* data, size_t size) { EVP_DigestUpdate(ctx_, data, size); }
  std::array<uint8_t, 32> Finish() {
    std::array<uint8_t, 32> out{};
    unsigned int len = 0;
    EVP_DigestFinal_ex(ctx_, out.data(), &len);
    return out;
  }

 private:
  EVP_MD_CTX* ctx_;
};

std::string FinishHtl(Sha256& sha, uint64_t size) {
  uint8_t be[8];
  for (int i = 0; i < 8; ++i) be[i] = static_cast<uint8_t>(size >> (56 - 8 * i));
  sha.Update(be, sizeof(be));
  auto digest = sha.Finish();
  return HexLower(std::span(digest.data(), kHtlBytes));
}

bool PreadAll(int fd, uint8_t* buf, size_t len, off_t off) {
  while (len > 0) {
    ssize_t n = pread(fd, buf, len, off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buf += n;
    len -= static_cast<size_t>(n);
    off += n;
  }
  return true;
}

}  // namespace

std::string HexLower(std::span<const uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

std::string ComputeHtlHashOfBytes(std::span<const uint8_t> content) {
  Sha256 sha;
  size_t head = std::min(content.size(), kHtlChunk);
  sha.Update(content.data(), head);
  sha.Update(content.data() + content.size() - head, head);
  return FinishHtl(sha, content.size());
}

absl::StatusOr<std::string> ComputeHtlHash(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return absl::UnavailableError(absl::StrCat("fstat: ", std::strerror(errno)));
  auto size = static_cast<uint64_t>(st.st_size);
  size_t chunk = static_cast<size_t>(std::min<uint64_t>(size, kHtlChunk));
  std::array<uint8_t, kHtlChunk> buf{};
  Sha256 sha;
  if (!PreadAll(fd, buf.data(), chunk, 0)) return absl::DataLossError("short read (head)");
  sha.Update(buf.data(), chunk);
  if (!PreadAll(fd, buf.data(), chunk, static_cast<off_t>(size - chunk)))
    return absl::DataLossError("short read (tail)");
  sha.Update(buf.data(), chunk);
  return FinishHtl(sha, size);
}

absl::StatusOr<std::string> ComputeHtlHashOfPath(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    std::string msg = absl::StrCat(path, ": ", std::strerror(err));
    return err == ENOENT ? absl::NotFoundError(msg) : absl::UnavailableError(msg);
  }
  auto r = ComputeHtlHash(fd);
  close(fd);
  if (!r.ok()) return absl::Status(r.status().code(), absl::StrCat(path, ": ", r.status().message()));
  return r;
}

absl::StatusOr<ElfIdentity> ReadElfIdentity(const std::string& path) {
  auto id = internal::ReadIdentityFields(path);
  if (!id.ok()) return id.status();
  auto htl = ComputeHtlHashOfPath(path);
  if (!htl.ok()) return htl.status();
  id->htlhash = *std::move(htl);
  return id;
}

absl::StatusOr<ElfIdentity> ReadElfIdentityFromBytes(std::string_view bytes, const std::string& name) {
  auto id = internal::ReadIdentityFieldsFromBytes(bytes, name);
  if (!id.ok()) return id.status();
  id->htlhash =
      ComputeHtlHashOfBytes(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  return id;
}

std::string ElfMachineName(uint16_t machine) {
  // e_machine values from the ELF gABI (no <elf.h> on macOS).
  enum : uint16_t {
    EM_386 = 3,
    EM_PPC64 = 21,
    EM_S390 = 22,
    EM_ARM = 40,
    EM_X86_64 = 62,
    EM_AARCH64 = 183,
    EM_RISCV = 243
  };
  switch (machine) {
    case EM_X86_64:
      return "x86-64";
    case EM_386:
      return "i386";
    case EM_AARCH64:
      return "AArch64";
    case EM_ARM:
      return "ARM";
    case EM_RISCV:
      return "RISC-V";
    case EM_PPC64:
      return "PowerPC64";
    case EM_S390:
      return "s390";
    default:
      return absl::StrCat("machine ", machine);
  }
}

namespace internal {

void NoteSection(std::string_view name, uint32_t type, ElfIdentity* id) {
  if (type == kShtSymtab) id->has_symtab = true;
  if (type == kShtDynsym) id->has_dynsym = true;
  if (name == ".debug_info" || name == ".zdebug_info") id->has_debug_info |= type != kShtNobits;
  if (name == ".gnu_debugdata") id->has_gnu_debugdata = true;
}

absl::Status ParseDebugLink(const std::string& file, std::string_view data, bool big_endian,
                            ElfIdentity* id) {
  // A NUL-terminated file name, padding to 4 bytes, then a 4-byte CRC-32 in
  // the file's byte order.
  const char* p = data.data();
  size_t len = strnlen(p, data.size());
  size_t crc_off = (len + 4) & ~size_t{3};
  if (len == 0 || len == data.size() || crc_off + 4 > data.size())
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": malformed .gnu_debuglink (", data.size(), " bytes)"));
  id->debuglink_name.assign(p, len);
  const auto* c = reinterpret_cast<const uint8_t*>(p + crc_off);
  id->debuglink_crc = big_endian ? (uint32_t{c[0]} << 24 | uint32_t{c[1]} << 16 | uint32_t{c[2]} << 8 | c[3])
                                 : (uint32_t{c[3]} << 24 | uint32_t{c[2]} << 16 | uint32_t{c[1]} << 8 | c[0]);
  return absl::OkStatus();
}

}  // namespace internal
}  // namespace kiln::symbols
