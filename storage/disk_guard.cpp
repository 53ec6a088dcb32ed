#include "storage/disk_guard.h"

#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "storage/model/profile_model.h"
#include "storage/model/sample_type.h"

namespace kiln::storage {

namespace {
constexpr char kReservePayload[] = "kiln/disk-reserve";
}  // namespace

bool IsDiskReserveRefusal(const absl::Status& status) {
  return status.GetPayload(kReservePayload).has_value();
}

absl::StatusOr<uint64_t> StatvfsFreeBytes(const std::string& dir) {
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot read free space of ", dir, ": ", std::strerror(errno)));
  }
  return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
}

DiskGuard::DiskGuard(std::string dir, uint64_t reserve_bytes, FreeBytesFn free_bytes, int64_t interval_ns,
                     uint64_t recheck_bytes)
    : dir_(std::move(dir)),
      reserve_(reserve_bytes),
      free_bytes_(std::move(free_bytes)),
      interval_ns_(interval_ns),
      recheck_bytes_(recheck_bytes) {}

void DiskGuard::RefreshLocked(int64_t now_ns) {
  checked_ns_ = now_ns;
  written_since_ = 0;
  absl::StatusOr<uint64_t> free = free_bytes_(dir_);
  if (free.ok()) {
    free_ = *free;
    free_error_.clear();
  } else {
    free_error_ = std::string(free.status().message());
  }
}

absl::Status DiskGuard::Admit(uint64_t bytes, bool* changed) {
  std::lock_guard lock(mu_);
  const int64_t now = UnixNowNs();
  written_since_ += bytes;
  if (refused_ || now - checked_ns_ >= interval_ns_ || written_since_ >= recheck_bytes_) RefreshLocked(now);
  const bool low = free_ < reserve_ + bytes;
  // A write error is lifted once space is back and the database resumed.
  if (!write_error_.empty() && !low && free_error_.empty() && (!recover_ || recover_())) write_error_.clear();
  std::string refusal;
  if (!free_error_.empty()) {
    refusal = absl::StrCat("the store directory cannot be used (", free_error_, ")");
    refusal_kind_ = "store directory unusable: " + free_error_;
  } else if (low) {
    refusal_kind_ = "disk nearly full";
    refusal = absl::StrCat("the disk holding ", dir_, " is nearly full: ", FormatBytes(free_),
                           " free, and kiln keeps ", FormatBytes(reserve_),
                           " free (--disk-reserve); free some space and kiln accepts data again by itself");
  } else if (!write_error_.empty()) {
    refusal = absl::StrCat("the store cannot write (", write_error_, "); kiln retries by itself");
    refusal_kind_ = "write error: " + write_error_;
  }
  const bool refused = !refusal.empty();
  if (changed != nullptr) *changed = refused != refused_;
  refused_ = refused;
  if (!refused) return absl::OkStatus();
  absl::Status status = absl::UnavailableError(refusal);
  if (low && free_error_.empty()) status.SetPayload(kReservePayload, absl::Cord("1"));
  return status;
}

void DiskGuard::NoteWriteError(const std::string& message) {
  std::lock_guard lock(mu_);
  write_error_ = message;
  checked_ns_ = 0;  // read the free space again at the next Admit
}

DiskState DiskGuard::state() const {
  std::lock_guard lock(mu_);
  DiskState s;
  s.free_bytes = free_ == UINT64_MAX ? 0 : free_;
  s.reserve_bytes = reserve_;
  if (refused_) s.refusal = refusal_kind_;
  return s;
}

}  // namespace kiln::storage
