#include "ingest/symbols/debug_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace kiln::symbols {
namespace {

bool IsFile(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool SameFile(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  return stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

std::string DirName(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// The directory of the binary with symlinks resolved, as gdb uses it: a
// binary reached through /usr/bin -> /bin still finds /usr/lib/debug/usr/bin.
std::string RealDirName(const std::string& path) {
  char buf[PATH_MAX];
  if (realpath(path.c_str(), buf)) return DirName(buf);
  return DirName(path);
}

std::string Join(const std::string& dir, const std::string& rest) {
  if (dir.empty()) return rest;
  if (dir.back() == '/' || (!rest.empty() && rest.front() == '/')) return dir + rest;
  return dir + "/" + rest;
}

}  // namespace

const char* DebugFileSourceName(DebugFileSource source) {
  switch (source) {
    case DebugFileSource::kBuildId:
      return "build id";
    case DebugFileSource::kDebugLinkBeside:
      return "debuglink next to the binary";
    case DebugFileSource::kDebugLinkDotDebug:
      return "debuglink in .debug/";
    case DebugFileSource::kDebugLinkUnderRoot:
      return "debuglink under the debug root";
  }
  return "?";
}

absl::StatusOr<uint32_t> FileCrc32(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(errno)));
  uLong crc = crc32(0L, Z_NULL, 0);
  std::string buf(1 << 20, '\0');
  for (;;) {
    ssize_t n = read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      close(fd);
      return absl::UnavailableError(absl::StrCat(path, ": ", std::strerror(err)));
    }
    if (n == 0) break;
    crc = crc32(crc, reinterpret_cast<const Bytef*>(buf.data()), static_cast<uInt>(n));
  }
  close(fd);
  return static_cast<uint32_t>(crc);
}

DebugFileSearch FindDebugFiles(const ElfIdentity& binary, const DebugFileSearchOptions& options) {
  DebugFileSearch out;
  auto add_if_same_build = [&](const std::string& path, DebugFileSource source) {
    for (const auto& c : out.found)
      if (SameFile(c.path, path)) return;
    auto id = ReadElfIdentity(path);
    if (!id.ok()) {
      out.rejected.push_back(std::string(id.status().message()));
      return;
    }
    if (!binary.gnu_build_id.empty() && !id->gnu_build_id.empty() &&
        id->gnu_build_id != binary.gnu_build_id) {
      out.rejected.push_back(
          absl::StrCat(path, ": build id ", id->gnu_build_id, " is not the binary's ", binary.gnu_build_id));
      return;
    }
    out.found.push_back({path, source});
  };

  // 1. By build id: the first byte names a folder, the rest the file.
  if (binary.gnu_build_id.size() > 2) {
    std::string rel = absl::StrCat(".build-id/", binary.gnu_build_id.substr(0, 2), "/",
                                   binary.gnu_build_id.substr(2), ".debug");
    for (const std::string& root : options.debug_roots) {
      std::string path = Join(root, rel);
      if (IsFile(path)) add_if_same_build(path, DebugFileSource::kBuildId);
    }
  }

  // 2. By .gnu_debuglink, checked with its CRC as gdb does.
  // (Only for a binary on this machine: the places are relative to its path.)
  if (!binary.path.empty() && !binary.debuglink_name.empty() &&
      binary.debuglink_name.find('/') == std::string::npos) {
    std::string bindir = RealDirName(binary.path);
    std::vector<std::pair<std::string, DebugFileSource>> places = {
        {Join(bindir, binary.debuglink_name), DebugFileSource::kDebugLinkBeside},
        {Join(Join(bindir, ".debug"), binary.debuglink_name), DebugFileSource::kDebugLinkDotDebug}};
    for (const std::string& root : options.debug_roots)
      places.emplace_back(Join(Join(root, bindir), binary.debuglink_name),
                          DebugFileSource::kDebugLinkUnderRoot);
    for (const auto& [path, source] : places) {
      if (!IsFile(path) || SameFile(path, binary.path)) continue;
      auto crc = FileCrc32(path);
      if (!crc.ok()) {
        out.rejected.push_back(std::string(crc.status().message()));
        continue;
      }
      if (*crc != binary.debuglink_crc) {
        out.rejected.push_back(absl::StrFormat("%s: CRC 0x%08x differs from the debuglink's 0x%08x", path,
                                               *crc, binary.debuglink_crc));
        continue;
      }
      add_if_same_build(path, source);
    }
  }
  return out;
}

absl::StatusOr<DebugFileSearch> FindDebugFilesFor(const std::string& binary_path,
                                                  const DebugFileSearchOptions& options) {
  auto id = ReadElfIdentity(binary_path);
  if (!id.ok()) return id.status();
  return FindDebugFiles(*id, options);
}

}  // namespace kiln::symbols
