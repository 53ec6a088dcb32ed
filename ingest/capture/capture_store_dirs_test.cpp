// The start-up sweep of temporary capture stores: what a kill -9 left is
// removed; stores of running kilns (owner alive, or RocksDB LOCK held) and
// anything that is not a marked capture store are kept.
#include "ingest/capture/capture_store_dirs.h"

#include <doctest/doctest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "storage/store.h"
#include "tests/temp_dir.h"

namespace kiln::capture {
namespace {

namespace fs = std::filesystem;

using ::kiln::testing::TempDir;

bool Exists(const std::string& p) { return fs::exists(fs::symlink_status(p)); }

void WriteMarker(const std::string& dir, long long pid, unsigned long long start) {
  std::ofstream(dir + "/" + kCaptureStoreMarker)
      << "kiln capture store\npid " << pid << "\nstart " << start << "\n";
}

// A pid that has exited (and been reaped).
pid_t DeadPid() {
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) _exit(0);
  int status;
  waitpid(pid, &status, 0);
  return pid;
}

// A kiln-like process (this test binary again, a fresh exec, running only
// the helper case below) that opens `dir` as a store, so RocksDB holds its
// LOCK, and waits to be killed. Returns once the store is open.
pid_t ChildHoldingStore(const std::string& dir) {
  int ready[2];
  REQUIRE(pipe(ready) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlives a failed test
    close(ready[0]);
    setenv("KILN_SWEEP_HOLD_DIR", dir.c_str(), 1);
    setenv("KILN_SWEEP_READY_FD", std::to_string(ready[1]).c_str(), 1);
    execl("/proc/self/exe", "capture_store_dirs_test", "--test-case=sweep helper*",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(ready[1]);
  char c = 0;
  REQUIRE(read(ready[0], &c, 1) == 1);
  close(ready[0]);
  REQUIRE(c == 'y');
  return pid;
}

TEST_CASE("sweep helper: holds a store open when asked (a no-op otherwise)") {
  const char* dir = std::getenv("KILN_SWEEP_HOLD_DIR");
  const char* fd = std::getenv("KILN_SWEEP_READY_FD");
  if (dir == nullptr || fd == nullptr) return;
  auto store = storage::Store::Open(dir, storage::Store::Mode::kReadWrite);
  char c = store.ok() ? 'y' : 'n';
  (void)!write(std::atoi(fd), &c, 1);
  for (;;) pause();
}

void Stop(pid_t pid) {
  kill(pid, SIGKILL);
  int status;
  waitpid(pid, &status, 0);
}

TEST_CASE("a capture store dir has a marker naming this process and is removed whole") {
  TempDir base;
  auto dir = CreateCaptureStoreDir(base.path);
  REQUIRE(dir.ok());
  CHECK(fs::path(*dir).filename().string().rfind(kCaptureStorePrefix, 0) == 0);
  std::ifstream marker(*dir + "/" + kCaptureStoreMarker);
  std::string magic, key;
  long long pid = 0;
  std::getline(marker, magic);
  marker >> key >> pid;
  CHECK(magic == "kiln capture store");
  CHECK(pid == getpid());
  {
    auto store = storage::Store::Open(*dir, storage::Store::Mode::kReadWrite);
    REQUIRE(store.ok());
  }
  // Its own process's stores are never swept.
  auto sweep = SweepCaptureStoreDirs(base.path);
  CHECK(sweep.removed.empty());
  CHECK(sweep.in_use == std::vector<std::string>{*dir});
  RemoveCaptureStoreDir(*dir);
  CHECK(!Exists(*dir));
}

TEST_CASE("the sweep removes stores of dead kilns and nothing else") {
  TempDir base;
  const std::string b = base.path + "/";

  // Left by a kiln killed with -9: marker of a dead pid, a closed store.
  const std::string dead = b + kCaptureStorePrefix + "dead01";
  fs::create_directories(dead);
  {
    auto store = storage::Store::Open(dead, storage::Store::Mode::kReadWrite);
    REQUIRE(store.ok());
  }
  WriteMarker(dead, DeadPid(), 0);

  // Left by a kiln whose pid now belongs to another process (pid 1 started
  // long before any test: another start time).
  const std::string reused = b + kCaptureStorePrefix + "reused";
  fs::create_directories(reused);
  WriteMarker(reused, 1, 1234567890123ull);

  // A store another running kiln has open, even though its marker names a
  // dead pid: RocksDB's LOCK tells.
  const std::string locked = b + kCaptureStorePrefix + "locked";
  fs::create_directories(locked);
  WriteMarker(locked, DeadPid(), 0);
  pid_t holder = ChildHoldingStore(locked);

  // A running kiln that has not opened its store yet: owner alive.
  const std::string starting = b + kCaptureStorePrefix + "start1";
  fs::create_directories(starting);
  pid_t alive = fork();
  REQUIRE(alive >= 0);
  if (alive == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    for (;;) pause();
  }
  WriteMarker(starting, alive, 0);

  // Not kiln's capture stores: no marker (a test's or another tool's
  // directory with the same prefix), a bad marker, another prefix, a file,
  // a symlink to a marked directory.
  const std::string unmarked = b + kCaptureStorePrefix + "sources-test-abc";
  fs::create_directories(unmarked);
  std::ofstream(unmarked + "/data") << "x";
  const std::string bad_marker = b + kCaptureStorePrefix + "badmrk";
  fs::create_directories(bad_marker);
  std::ofstream(bad_marker + "/" + kCaptureStoreMarker) << "something else\n";
  const std::string other = b + "kiln-demo-abcdef";
  fs::create_directories(other);
  WriteMarker(other, DeadPid(), 0);
  const std::string file = b + kCaptureStorePrefix + "file01";
  std::ofstream(file) << "x";
  const std::string target = b + "elsewhere";
  fs::create_directories(target);
  WriteMarker(target, DeadPid(), 0);
  const std::string link = b + kCaptureStorePrefix + "link01";
  fs::create_directory_symlink(target, link);

  auto sweep = SweepCaptureStoreDirs(base.path);
  std::sort(sweep.removed.begin(), sweep.removed.end());
  std::sort(sweep.in_use.begin(), sweep.in_use.end());
  CHECK(sweep.removed == std::vector<std::string>{dead, reused});
  CHECK(sweep.in_use == std::vector<std::string>{locked, starting});
  CHECK(!Exists(dead));
  CHECK(!Exists(reused));
  for (const std::string& kept : {locked, starting, unmarked, bad_marker, other, file, target, link}) {
    CAPTURE(kept);
    CHECK(Exists(kept));
  }
  CHECK(Exists(target + "/" + kCaptureStoreMarker));

  // Once their kilns are gone, the next sweep removes those two as well.
  Stop(holder);
  Stop(alive);
  sweep = SweepCaptureStoreDirs(base.path);
  std::sort(sweep.removed.begin(), sweep.removed.end());
  CHECK(sweep.removed == std::vector<std::string>{locked, starting});
  CHECK(Exists(unmarked));
  CHECK(Exists(link));
}

}  // namespace
}  // namespace kiln::capture
