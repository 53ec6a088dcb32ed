#include "storage/model/data_loss.h"

namespace kiln::storage {

const std::array<DataLossInfo, kDataLossCount>& DataLossTable() {
  static const std::array<DataLossInfo, kDataLossCount> kTable = {{
      {DataLoss::kUnauthenticated, "unauthenticated", LossSeverity::kWarning, "requests",
       "refused: the request carried no token, or not this kiln's (--auth-token-file)"},
      {DataLoss::kRequestTooLarge, "request_too_large", LossSeverity::kError, "requests",
       "refused: larger than the message limit after decompression (64 MiB)"},
      {DataLoss::kUndecodable, "undecodable", LossSeverity::kError, "requests",
       "refused: not an OTLP ExportProfilesServiceRequest (the Log says where decoding failed)"},
      {DataLoss::kOverloaded, "writer_behind", LossSeverity::kWarning, "requests",
       "refused for now: too many requests in flight; senders retry"},
      {DataLoss::kProfileRejected, "profile_rejected", LossSeverity::kError, "profiles",
       "dropped: a bad index or sample shape, or an older OTLP layout (the Log names the field)"},
      {DataLoss::kStringTruncated, "string_truncated", LossSeverity::kWarning, "strings",
       "shortened: a name or attribute value over 16 KiB was cut (with a marker) before storing"},
      {DataLoss::kDiskReserve, "disk_reserve", LossSeverity::kError, "requests",
       "refused for now: the store's disk is nearly full (--disk-reserve); senders retry"},
      {DataLoss::kStoreWriteFailed, "store_write_failed", LossSeverity::kError, "requests",
       "refused for now: the store could not write (the Log says why); senders retry"},
      {DataLoss::kRetentionDeleted, "retention_deleted", LossSeverity::kInfo, "samples",
       "deleted: older or beyond the size the store keeps (--retention-age, --retention-size)"},
      {DataLoss::kAttributeCapped, "attribute_capped", LossSeverity::kWarning, "attributes",
       "folded: a value of a key that already has 1,000,000 distinct values (or 64 MiB of them), or of a "
       "sender that already brought 32 MiB of values, became \"other\", a key beyond 4,096 distinct keys "
       "was left out, or a set of attributes beyond 2,000,000 distinct sets had all its values made "
       "\"other\" (caps against a sender inventing values)"},
      {DataLoss::kRateLimited, "rate_limited", LossSeverity::kWarning, "requests",
       "refused for now: the sender sent more request bytes per second than --max-sender-rate allows; "
       "senders retry"},
      {DataLoss::kConnectionClosed, "connection_closed", LossSeverity::kWarning, "connections",
       "closed by kiln: too many from one host or in all, silent, idle, stalled or too slow mid-request, or "
       "over the memory budget for requests being received (the Log says which); an agent reconnects and "
       "sends again, and a request not yet received whole is not lost, only resent"},
      {DataLoss::kForwardDropped, "forward_dropped", LossSeverity::kError, "requests",
       "not forwarded: a destination of --forward was behind by more than the queue's bound, so its oldest "
       "owed requests were dropped (stored here all the same)"},
      {DataLoss::kForwardRejected, "forward_rejected", LossSeverity::kError, "requests",
       "not forwarded: a destination of --forward refused the request as invalid, so it is not retried "
       "(stored here all the same; the Log names the destination and its answer)"},
  }};
  return kTable;
}

const DataLossInfo& InfoOf(DataLoss reason) { return DataLossTable()[static_cast<size_t>(reason)]; }

std::string_view SeverityName(LossSeverity severity) {
  switch (severity) {
    case LossSeverity::kInfo:
      return "info";
    case LossSeverity::kWarning:
      return "warning";
    case LossSeverity::kError:
      return "error";
  }
  return "error";
}

}  // namespace kiln::storage
