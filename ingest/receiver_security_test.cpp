#include "ingest/receiver_security.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "ingest/otlp_receiver.h"
#include "tests/secret_file.h"
#include "tests/temp_dir.h"

namespace kiln::ingest {
namespace {

using ::kiln::testing::TempDir;

TokenCheck Check(const char* header, std::string_view token) {
  if (header == nullptr) return CheckBearerToken(nullptr, token);
  std::string_view h(header);
  return CheckBearerToken(&h, token);
}

}  // namespace

TEST_CASE("CheckBearerToken: only 'Bearer <the token>' passes") {
  CHECK(Check("Bearer abc", "abc") == TokenCheck::kOk);
  CHECK(Check("bearer abc", "abc") == TokenCheck::kOk);
  CHECK(Check("BEARER   abc ", "abc") == TokenCheck::kOk);
  CHECK(Check(nullptr, "abc") == TokenCheck::kMissing);
  CHECK(Check("abc", "abc") == TokenCheck::kNotBearer);
  CHECK(Check("Basic abc", "abc") == TokenCheck::kNotBearer);
  CHECK(Check("Bearer", "abc") == TokenCheck::kNotBearer);
  CHECK(Check("Bearer ", "abc") == TokenCheck::kWrong);
  CHECK(Check("Bearer ab", "abc") == TokenCheck::kWrong);
  CHECK(Check("Bearer abcd", "abc") == TokenCheck::kWrong);
  CHECK(Check("Bearer abd", "abc") == TokenCheck::kWrong);
  CHECK(Check("Bearer ABC", "abc") == TokenCheck::kWrong);  // the token itself is case-sensitive
}

TEST_CASE("token files: written 0600, read back trimmed; bad ones named") {
  TempDir dir;
  auto token = GenerateToken();
  REQUIRE(token.ok());
  CHECK(token->size() == 64);
  CHECK(token->find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(*GenerateToken() != *token);

  const std::string path = dir.path + "/config/kiln/auth-token";
  REQUIRE(WriteTokenFile(path, *token).ok());
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  auto read = ReadTokenFile(path);
  REQUIRE(read.ok());
  CHECK(*read == *token);

  const std::string empty = dir.path + "/empty";
  kiln::testing::WriteSecretFile(empty, "  \n");
  CHECK(ReadTokenFile(empty).status().message() == "token file " + empty + " is empty");
  const std::string spaced = dir.path + "/spaced";
  kiln::testing::WriteSecretFile(spaced, "two words\n");
  CHECK(ReadTokenFile(spaced).status().message() ==
        "token file " + spaced + " holds a character a header cannot carry (use printable ASCII)");
  CHECK(ReadTokenFile(dir.path + "/none").status().message() ==
        "token file " + dir.path + "/none does not exist");
  CHECK(ReadTokenFile(dir.path).status().message() == "token file " + dir.path + " is not a regular file");
}

TEST_CASE("secrets others could read, or reached through a link, are refused as ssh refuses a key") {
  TempDir dir;
  const std::string open = dir.path + "/open-token";
  std::ofstream(open) << "s3cret\n";
  ::chmod(open.c_str(), 0644);
  CHECK(ReadTokenFile(open).status().message() ==
        "token file " + open + " can be read or changed by others (mode 0644); make it yours alone: chmod 600 " +
            open);
  ::chmod(open.c_str(), 0620);  // group-writable is as bad: someone else picks the token
  CHECK(ReadTokenFile(open).status().code() == absl::StatusCode::kPermissionDenied);
  ::chmod(open.c_str(), 0600);
  CHECK(ReadTokenFile(open).ok());
  const std::string link = dir.path + "/linked-token";
  REQUIRE(::symlink(open.c_str(), link.c_str()) == 0);
  CHECK(ReadTokenFile(link).status().message() ==
        "token file " + link + " is a symbolic link; name the file itself (whoever can change the link chooses "
        "what kiln trusts)");
  const std::string key = dir.path + "/server.key";
  std::ofstream(key) << "-----BEGIN PRIVATE KEY-----\n";
  ::chmod(key.c_str(), 0640);
  CHECK(CheckSecretFile(key, "TLS key").message() ==
        "TLS key file " + key + " can be read or changed by others (mode 0640); make it yours alone: chmod 600 " +
            key);
  CHECK(CheckSecretFile(dir.path + "/missing", "TLS key").ok());  // reading it names what is wrong
}

TEST_CASE("PeerHost and IsLoopbackPeer read gRPC peer strings") {
  CHECK(PeerHost("ipv4:10.0.0.5:53412") == "10.0.0.5");
  CHECK(PeerHost("ipv6:[::1]:5000") == "::1");
  CHECK(PeerHost("ipv6:%5B::1%5D:5000") == "::1");
  CHECK(PeerHost("ipv6:[fd00::7]:11000") == "fd00::7");
  CHECK(PeerHost("unix:/tmp/socket") == "unix:/tmp/socket");
  CHECK(IsLoopbackPeer("ipv4:127.0.0.1:1"));
  CHECK(IsLoopbackPeer("ipv6:%5B::1%5D:5000"));
  CHECK(IsLoopbackPeer("ipv6:[::ffff:127.0.0.1]:5000"));
  CHECK_FALSE(IsLoopbackPeer("ipv4:192.168.1.20:4000"));
  CHECK_FALSE(IsLoopbackPeer("ipv6:[fd00::7]:11000"));
}

}  // namespace kiln::ingest
