#include "ingest/receiver_security.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "ingest/message_text.h"

namespace kiln::ingest {

namespace {

constexpr size_t kMaxTokenBytes = 4096;
constexpr size_t kMaxPemBytes = 1 << 20;

// Equal in time independent of the contents: every byte of the longer
// input is looked at whatever the first difference.
bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  const size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

absl::StatusOr<std::string> ReadSmallFile(const std::string& path, std::string_view what, size_t max_bytes) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) {
    return absl::NotFoundError(Cat(what, " file ", path, " does not exist"));
  }
  if (!std::filesystem::is_regular_file(status)) {
    return absl::InvalidArgumentError(Cat(what, " file ", path, " is not a regular file"));
  }
  if (std::filesystem::file_size(path, ec) > max_bytes) {
    return absl::InvalidArgumentError(Cat(what, " file ", path, " is larger than ", max_bytes, " bytes"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::PermissionDeniedError(Cat("cannot read ", what, " file ", path, ": ", std::strerror(errno)));
  }
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

}  // namespace

absl::Status CheckSecretFile(const std::string& path, std::string_view what) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return absl::OkStatus();  // reading it says what is wrong
  if (S_ISLNK(st.st_mode)) {
    return absl::PermissionDeniedError(
        Cat(what, " file ", path, " is a symbolic link; name the file itself (whoever can change the link ",
            "chooses what kiln trusts)"));
  }
  if (!S_ISREG(st.st_mode)) return absl::OkStatus();
  if (st.st_uid != geteuid() && st.st_uid != 0) {
    return absl::PermissionDeniedError(
        Cat(what, " file ", path, " belongs to another user (uid ", st.st_uid, "); it must be yours"));
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return absl::PermissionDeniedError(Cat(what, " file ", path, " can be read or changed by others (mode ", mode,
                                           "); make it yours alone: chmod 600 ", path));
  }
  return absl::OkStatus();
}

TokenCheck CheckBearerToken(const std::string_view* header, std::string_view token) {
  if (header == nullptr) return TokenCheck::kMissing;
  std::string_view value = *header;
  // RFC 6750: the scheme is case-insensitive, one or more spaces follow.
  constexpr std::string_view kScheme = "bearer ";
  if (value.size() < kScheme.size()) return TokenCheck::kNotBearer;
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (absl::ascii_tolower(static_cast<unsigned char>(value[i])) != kScheme[i])
      return TokenCheck::kNotBearer;
  }
  value.remove_prefix(kScheme.size());
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
  return ConstantTimeEquals(value, token) ? TokenCheck::kOk : TokenCheck::kWrong;
}

std::string UnauthenticatedMessage(TokenCheck check) {
  const char* why = check == TokenCheck::kMissing ? "this kiln requires a token and the request carried none"
                    : check == TokenCheck::kNotBearer ? "the authorization header is not 'Bearer <token>'"
                                                      : "the token sent is not this kiln's";
  return Cat(why,
             ". Send the header 'authorization: Bearer <token>': kiln-agent -auth-token-file FILE, "
             "OTEL_EXPORTER_OTLP_HEADERS='authorization=Bearer <token>', or the Collector's otlp "
             "exporter `headers: {authorization: \"Bearer <token>\"}`; the token is in the file "
             "given to kiln (--auth-token-file) or in KILN_AUTH_TOKEN");
}

absl::StatusOr<std::string> ParseToken(std::string_view text, std::string_view source) {
  std::string token(absl::StripAsciiWhitespace(absl::string_view(text.data(), text.size())));
  if (token.empty()) return absl::InvalidArgumentError(Cat(source, " is empty"));
  for (char c : token) {
    // What an HTTP/2 header value may hold without escaping.
    if (c < 0x21 || c > 0x7e) {
      return absl::InvalidArgumentError(
          Cat(source, " holds a character a header cannot carry (use printable ASCII)"));
    }
  }
  return token;
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  if (absl::Status secret = CheckSecretFile(path, "token"); !secret.ok()) return secret;
  absl::StatusOr<std::string> bytes = ReadSmallFile(path, "token", kMaxTokenBytes);
  if (!bytes.ok()) return bytes.status();
  return ParseToken(*bytes, Cat("token file ", path));
}

absl::StatusOr<std::string> GenerateToken() {
  unsigned char random[32];
  size_t got = 0;
  while (got < sizeof random) {
    const ssize_t n = getrandom(random + got, sizeof random - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::InternalError(Cat("no random bytes for a token: ", std::strerror(errno)));
    }
    got += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  for (unsigned char b : random) {
    token.push_back(kHex[b >> 4]);
    token.push_back(kHex[b & 15]);
  }
  return token;
}

absl::Status WriteTokenFile(const std::string& path, std::string_view token) {
  const std::filesystem::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path(), ec);
  const std::string temp = path + ".tmp";
  // Created 0600 from the start: the token is never readable by others,
  // not even between open and chmod.
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return absl::PermissionDeniedError(Cat("cannot write ", temp, ": ", std::strerror(errno)));
  const std::string line = Cat(token, "\n");
  const bool written = ::fchmod(fd, 0600) == 0 &&
                       ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) &&
                       ::fsync(fd) == 0;
  const int saved = errno;
  ::close(fd);
  if (!written || ::rename(temp.c_str(), path.c_str()) != 0) {
    const int err = written ? errno : saved;
    ::unlink(temp.c_str());
    return absl::InternalError(Cat("cannot write token file ", path, ": ", std::strerror(err)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadPemFile(const std::string& path, std::string_view what) {
  absl::StatusOr<std::string> bytes = ReadSmallFile(path, what, kMaxPemBytes);
  if (!bytes.ok()) return bytes.status();
  if (bytes->find("-----BEGIN ") == std::string::npos) {
    return absl::InvalidArgumentError(Cat(what, " file ", path, " is not PEM (no '-----BEGIN' line)"));
  }
  return bytes;
}

}  // namespace kiln::ingest
