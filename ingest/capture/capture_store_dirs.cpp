#include "ingest/capture/capture_store_dirs.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace kiln::capture {
namespace {

std::string BaseDir(const std::string& base) {
  if (!base.empty()) return base;
  std::error_code ec;
  std::filesystem::path tmp = std::filesystem::temp_directory_path(ec);
  return ec ? std::string("/tmp") : tmp.string();
}

// Start time of a process in clock ticks since boot (/proc/PID/stat field
// 22), or 0 when unknown.
unsigned long long ProcessStartTime(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return 0;
  size_t close = line.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return 0;
  std::istringstream fields(line.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22; ++i) {
    if (!(fields >> field)) return 0;
  }
  return std::strtoull(field.c_str(), nullptr, 10);
}

bool ProcessAlive(pid_t pid, unsigned long long start) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno != EPERM) return false;
  // The pid exists; it is the owner unless it started at another time.
  unsigned long long now = ProcessStartTime(pid);
  return start == 0 || now == 0 || now == start;
}

// True when another process holds a lock on `path` (RocksDB locks its LOCK
// file with fcntl while the store is open). Never called on a store of
// this process: closing any descriptor of a file drops the process's own
// fcntl locks on it.
bool LockHeldByOther(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;
  struct flock lock {};
  lock.l_type = F_RDLCK;  // conflicts with the writer's lock
  lock.l_whence = SEEK_SET;
  bool held = fcntl(fd, F_GETLK, &lock) == 0 && lock.l_type != F_UNLCK;
  close(fd);
  return held;
}

struct Owner {
  pid_t pid = 0;
  unsigned long long start = 0;
};

// The marker's owner, or false when `dir` has no valid marker.
bool ReadMarker(const std::string& dir, Owner* owner) {
  const std::string path = dir + "/" + kCaptureStoreMarker;
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > 4096) return false;
  std::ifstream f(path);
  std::string magic, key;
  long long pid = 0;
  unsigned long long start = 0;
  if (!std::getline(f, magic) || magic != "kiln capture store") return false;
  if (!(f >> key >> pid) || key != "pid" || pid <= 0) return false;
  if (f >> key && key == "start") f >> start;
  owner->pid = static_cast<pid_t>(pid);
  owner->start = start;
  return true;
}

}  // namespace

absl::StatusOr<std::string> CreateCaptureStoreDir(const std::string& base) {
  const std::string parent = BaseDir(base);
  std::string dir = parent + "/" + kCaptureStorePrefix + "XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) {
    return absl::InternalError(
        absl::StrCat("cannot create a temporary store directory in ", parent, ": ", std::strerror(errno)));
  }
  const std::string marker = dir + "/" + kCaptureStoreMarker;
  {
    std::ofstream f(marker);
    f << "kiln capture store\npid " << getpid() << "\nstart " << ProcessStartTime(getpid()) << "\n";
    f.flush();
    if (!f) {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
      return absl::InternalError(absl::StrCat("cannot write ", marker));
    }
  }
  return dir;
}

void RemoveCaptureStoreDir(const std::string& dir) {
  std::error_code ec;
  std::vector<std::filesystem::path> entries;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().filename() != kCaptureStoreMarker) entries.push_back(e.path());
  }
  for (const auto& p : entries) std::filesystem::remove_all(p, ec);
  std::filesystem::remove_all(dir, ec);
}

CaptureStoreSweep SweepCaptureStoreDirs(const std::string& base) {
  CaptureStoreSweep result;
  const std::string parent = BaseDir(base);
  DIR* d = opendir(parent.c_str());
  if (d == nullptr) return result;
  std::vector<std::string> candidates;
  while (dirent* e = readdir(d)) {
    if (std::strncmp(e->d_name, kCaptureStorePrefix, sizeof(kCaptureStorePrefix) - 1) == 0) {
      candidates.push_back(parent + "/" + e->d_name);
    }
  }
  closedir(d);
  const pid_t self = getpid();
  const unsigned long long self_start = ProcessStartTime(self);
  for (const std::string& dir : candidates) {
    struct stat st {};
    // A real directory of this user (never a symlink to elsewhere).
    if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) continue;
    Owner owner;
    if (!ReadMarker(dir, &owner)) continue;
    // This process's own stores are in use; their LOCK must not even be
    // opened (see LockHeldByOther). A reused pid has another start time.
    const bool mine = owner.pid == self && (owner.start == 0 || self_start == 0 || owner.start == self_start);
    if (mine || (owner.pid != self && ProcessAlive(owner.pid, owner.start)) ||
        LockHeldByOther(dir + "/LOCK")) {
      result.in_use.push_back(dir);
      continue;
    }
    RemoveCaptureStoreDir(dir);
    result.removed.push_back(dir);
  }
  return result;
}

absl::StatusOr<std::unique_ptr<TemporaryStore>> TemporaryStore::Create() {
  // TMPDIR/kiln-capture-XXXXXX with a marker naming this process, so a
  // later kiln can sweep it if this one is killed.
  auto dir = CreateCaptureStoreDir();
  if (!dir.ok()) return dir.status();
  auto store = storage::Store::Open(*dir, storage::Store::Mode::kReadWrite);
  if (!store.ok()) {
    RemoveCaptureStoreDir(*dir);
    return store.status();
  }
  return std::unique_ptr<TemporaryStore>(new TemporaryStore(*dir, *std::move(store)));
}

TemporaryStore::~TemporaryStore() {
  store_.reset();  // RocksDB closes its files before the directory goes
  RemoveCaptureStoreDir(dir_);
}

}  // namespace kiln::capture
