// Every reason Kiln drops, refuses, truncates or deletes data, declared once
// (in the style of Perfetto's stats table): a stable name for files and
// scripts, a severity, what one count is, and what it means for a user.
// The receiver counts them per sender; the store keeps the totals
// (Store::AddDataLoss) so `kiln stats` and the window's Data quality panel
// show them after a restart too.
//
// Threads: pure data and functions.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace kiln::storage {

enum class DataLoss : uint8_t {
  kUnauthenticated,   // request without the token
  kRequestTooLarge,   // over the message size limit
  kUndecodable,       // not an ExportProfilesServiceRequest
  kOverloaded,        // the writer was behind (retryable)
  kProfileRejected,   // a bad index, sample shape or an older layout
  kStringTruncated,   // a string over the length cap
  kDiskReserve,       // the disk is nearly full (retryable)
  kStoreWriteFailed,  // RocksDB could not write (retryable)
  kRetentionDeleted,  // samples past the retention limits
  kAttributeCapped,   // a value past a key's distinct-value cap, or a key past the key cap
  kRateLimited,       // a sender over --max-sender-rate (retryable)
  kConnectionClosed,  // closed by the receiver's connection guard (its sender reconnects)
  kForwardDropped,    // owed to a forwarding destination, dropped over the queue's bound
  kForwardRejected,   // refused by a forwarding destination as invalid (not retried)
};
inline constexpr size_t kDataLossCount = 14;

enum class LossSeverity : uint8_t { kInfo, kWarning, kError };

struct DataLossInfo {
  DataLoss reason;
  std::string_view name;  // stable: "string_truncated"
  LossSeverity severity;
  std::string_view unit;  // what one count is: "requests", "profiles", "strings", "samples"
  std::string_view description;
};

// Every reason, in enum order.
const std::array<DataLossInfo, kDataLossCount>& DataLossTable();
const DataLossInfo& InfoOf(DataLoss reason);
std::string_view SeverityName(LossSeverity severity);

// Counts per reason, indexed by the enum.
using DataLossCounts = std::array<uint64_t, kDataLossCount>;

}  // namespace kiln::storage
