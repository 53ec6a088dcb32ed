#include "storage/disk_guard.h"

#include <doctest/doctest.h>

#include <atomic>

namespace kiln::storage {

TEST_CASE("disk guard: refuses below the reserve, says why once, accepts again when space returns") {
  std::atomic<uint64_t> free{1000 << 20};
  DiskGuard guard(
      "/data/kiln", 256 << 20, [&](const std::string&) -> absl::StatusOr<uint64_t> { return free.load(); },
      /*interval_ns=*/0);
  bool changed = true;
  CHECK(guard.Admit(1000, &changed).ok());
  CHECK_FALSE(changed);
  CHECK(guard.state().refusal.empty());

  free = 100 << 20;
  absl::Status refused = guard.Admit(1000, &changed);
  CHECK(absl::IsUnavailable(refused));  // retryable: agents keep their data
  CHECK(changed);
  CHECK(refused.message() ==
        "the disk holding /data/kiln is nearly full: 100 MiB free, and kiln keeps 256 MiB free "
        "(--disk-reserve); free some space and kiln accepts data again by itself");
  CHECK_FALSE(guard.Admit(1000, &changed).ok());
  CHECK_FALSE(changed);  // the same refusal: nothing new to log
  CHECK(guard.state().refusal == "disk nearly full");
  CHECK(guard.state().free_bytes == 100u << 20);

  free = 300 << 20;
  CHECK(guard.Admit(1000, &changed).ok());
  CHECK(changed);
}

TEST_CASE("disk guard: a write error holds until space is back and the database resumes") {
  uint64_t free = 1000 << 20;
  int resumes = 0;
  bool resume_works = false;
  DiskGuard guard(
      "/data/kiln", 256 << 20, [&](const std::string&) -> absl::StatusOr<uint64_t> { return free; }, 0);
  guard.SetRecovery([&] {
    ++resumes;
    return resume_works;
  });
  guard.NoteWriteError("IO error: No space left on device");
  free = 10 << 20;  // another program filled the disk
  CHECK_FALSE(guard.Admit(10).ok());
  CHECK(resumes == 0);  // no resume while the disk is still full
  free = 1000 << 20;
  absl::Status s = guard.Admit(10);
  CHECK(resumes == 1);
  CHECK(s.message() == "the store cannot write (IO error: No space left on device); kiln retries by itself");
  resume_works = true;
  CHECK(guard.Admit(10).ok());
  CHECK(resumes == 2);
  CHECK(guard.Admit(10).ok());
  CHECK(resumes == 2);  // resumed once, not per write
}

TEST_CASE("disk guard: a vanished store directory is refused with the reason") {
  DiskGuard guard("/nonexistent/kiln", 1, StatvfsFreeBytes, 0);
  absl::Status s = guard.Admit(10);
  CHECK(absl::IsUnavailable(s));
  CHECK(s.message() ==
        "the store directory cannot be used (cannot read free space of /nonexistent/kiln: No such file or "
        "directory)");
  CHECK(StatvfsFreeBytes("/").ok());
}

}  // namespace kiln::storage
