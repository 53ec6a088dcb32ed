// SliceFromBatch: runs a storage::Query over an in-memory ProfileBatch, so
// a capture file can be viewed and exported without a store (`kiln export
// --input FILE`, the app's "open capture" source). Weights aggregate exactly
// as the store's queries do: weight = sum of values, events = sample count.
#pragma once

#include <memory>
#include <vector>

#include "storage/profile_model.h"
#include "storage/store.h"

namespace kiln::capture {

// Pure; the slice copies the batch's dictionary (indices stay valid).
std::shared_ptr<const storage::ProfileSlice> SliceFromBatch(const storage::ProfileBatch& batch,
                                                            const storage::Query& query);

// Indices of the batch samples the query selects (kind, range, filters).
std::vector<uint32_t> SelectSamples(const storage::ProfileBatch& batch, const storage::Query& query);

// Weight over time, as Store::RunTimeline: `bucket_count` buckets evenly
// covering [query.from_ns, query.to_ns), clamped to the batch's data range
// when open-ended. For a capture opened without a store.
storage::Timeline TimelineFromBatch(const storage::ProfileBatch& batch, const storage::Query& query,
                                    int bucket_count);

}  // namespace kiln::capture
