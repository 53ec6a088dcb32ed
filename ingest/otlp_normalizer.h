// OTLP profiles (opentelemetry-proto v1.10.0 wire layout) -> Kiln's
// normalized ProfileBatch. Every index of the request is bounds-checked; a
// profile with a bad index, a bad sample shape or signs of an older layout is
// rejected with a message naming the field path and the numbers, while the
// good profiles of the same request are kept.
//
// Threads: a pure function of its input; call it from any number of threads
// at once. Lifetime: the result owns all its data (it does not point into
// the request).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb.h"
#include "storage/model/profile_model.h"

namespace kiln::ingest {

struct NormalizeResult {
  storage::ProfileBatch batch;  // samples of the accepted profiles only
  int64_t accepted_profiles = 0;
  int64_t rejected_profiles = 0;
  std::string error_message;  // why profiles were rejected, "" when none
  // Strings over kMaxStringBytes, stored cut (storage::DataLoss::kStringTruncated).
  uint64_t strings_truncated = 0;
};

// Longer names and attribute values are cut to this many bytes (at a UTF-8
// boundary) and marked: a real profiler's longest C++ names stay well
// under it, and a hostile sender's 60 MiB string cannot fill the store.
inline constexpr size_t kMaxStringBytes = 16 << 10;
inline constexpr std::string_view kTruncatedMarker = "...[truncated]";

// Normalizes one Export request:
// - stacks become root first, each OTLP Location expands to one frame per
//   Line (outermost first; all but the outermost frame are `inlined`);
// - resource, profile and sample attributes merge into one attribute set per
//   sample (sample wins over profile wins over resource on a key clash),
//   values stringified;
// - each profile's sample type (and period) kept as sent, unknown ones too;
// - sample shapes: timestamps only (weight 1 each), one value without
//   timestamps (at Profile.time_unix_nano), or a value per timestamp.
// Dictionary entries referenced only by rejected profiles (or by nothing)
// neither cause rejections nor end up in the batch.
// `added_attributes` join every sample's attribute set after the resource's
// and the scope's, so a sender cannot override them (the receiver adds
// kiln.sender, the sender's address).
NormalizeResult NormalizeExportRequest(
    const opentelemetry::proto::collector::profiles::v1development::ExportProfilesServiceRequest& request,
    const std::vector<std::pair<std::string, std::string>>& added_attributes = {});

// The hint appended to rejections that look like an older sender.
inline constexpr const char* kOlderLayoutHint =
    "probably an older OTLP profiles version (v1.9 or earlier numbered Sample fields "
    "differently)";

}  // namespace kiln::ingest
