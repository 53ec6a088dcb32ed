#include "file_id.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

namespace kiln::agent {
namespace {

constexpr std::size_t kHtlChunk = 4096;
constexpr std::size_t kHtlBytes = 16;

// SHA-256 from OpenSSL's libcrypto: packaged everywhere, no hand-written hash.
class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new()) { EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr); }
  ~Sha256() { EVP_MD_CTX_free(ctx_); }
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void Update(const void* data, std::size_t size) { EVP_DigestUpdate(ctx_, data, size); }
  std::array<std::uint8_t, 32> Finish() {
    std::array<std::uint8_t, 32> out{};
    unsigned int len = 0;
    EVP_DigestFinal_ex(ctx_, out.data(), &len);
    return out;
  }

 private:
  EVP_MD_CTX* ctx_;
};

std::string FinishHtl(Sha256& sha, std::uint64_t size) {
  std::uint8_t be[8];
  for (int i = 0; i < 8; ++i) be[i] = static_cast<std::uint8_t>(size >> (56 - 8 * i));
  sha.Update(be, sizeof(be));
  auto digest = sha.Finish();
  return HexLower(std::span(digest.data(), kHtlBytes));
}

bool PreadAll(int fd, std::uint8_t* buf, std::size_t len, off_t off) {
  while (len > 0) {
    ssize_t n = pread(fd, buf, len, off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buf += n;
    len -= static_cast<std::size_t>(n);
    off += n;
  }
  return true;
}

}  // namespace

std::string HexLower(std::span<const std::uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (std::uint8_t b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

std::string ComputeHtlHashOfBytes(std::span<const std::uint8_t> content) {
  Sha256 sha;
  std::size_t head = std::min(content.size(), kHtlChunk);
  sha.Update(content.data(), head);
  sha.Update(content.data() + content.size() - head, head);
  return FinishHtl(sha, content.size());
}

Result<std::string> ComputeHtlHash(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return Result<std::string>::Error(std::string("fstat: ") + std::strerror(errno));
  auto size = static_cast<std::uint64_t>(st.st_size);
  std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(size, kHtlChunk));
  std::array<std::uint8_t, kHtlChunk> buf{};
  Sha256 sha;
  if (!PreadAll(fd, buf.data(), chunk, 0)) return Result<std::string>::Error("short read (head)");
  sha.Update(buf.data(), chunk);
  if (!PreadAll(fd, buf.data(), chunk, static_cast<off_t>(size - chunk)))
    return Result<std::string>::Error("short read (tail)");
  sha.Update(buf.data(), chunk);
  return FinishHtl(sha, size);
}

Result<std::string> ComputeHtlHashOfPath(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Result<std::string>::Error(path + ": " + std::strerror(errno));
  auto r = ComputeHtlHash(fd);
  close(fd);
  if (!r) return Result<std::string>::Error(path + ": " + r.error());
  return r;
}

}  // namespace kiln::agent
