#include "ingest/forward/forward_status.h"

#include "absl/strings/str_cat.h"
#include "storage/model/sample_type.h"

namespace kiln::ingest {

std::string DescribeForwardStatus(const ForwardStatus& f, int64_t now_ns) {
  return absl::StrCat(
      "forwarding to ", f.target, ": ", f.connected ? "delivering" : "not connected", ", ", f.backlog.requests,
      f.backlog.requests == 1 ? " request (" : " requests (", storage::FormatBytes(f.backlog.bytes), ") owed",
      f.backlog.requests > 0 ? absl::StrCat(", oldest ", storage::FormatDuration(now_ns - f.backlog.oldest_ns)) : "",
      ", ", f.delivered, " delivered", f.rejected > 0 ? absl::StrCat(", ", f.rejected, " refused") : "",
      f.backlog.dropped > 0 ? absl::StrCat(", ", f.backlog.dropped, " dropped over the queue's bound") : "",
      f.last_error.empty() ? "" : absl::StrCat(" (", f.last_error, ")"));
}

}  // namespace kiln::ingest
