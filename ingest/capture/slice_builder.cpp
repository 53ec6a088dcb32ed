#include "ingest/capture/slice_builder.h"

#include <algorithm>
#include <limits>

#include "absl/container/flat_hash_map.h"

namespace kiln::capture {

std::shared_ptr<const storage::ProfileSlice> SliceFromBatch(const storage::ProfileBatch& batch,
                                                            const storage::Query& query) {
  auto slice = std::make_shared<storage::ProfileSlice>();
  slice->dict = batch.dict;
  slice->kind = query.kind;
  slice->from_ns = query.from_ns;
  slice->to_ns = query.to_ns;
  const storage::ProfileDictionary& d = batch.dict;

  // Which attribute sets pass the filters (AND over keys, OR over values).
  std::vector<uint8_t> passes(d.AttributeSetCount(), 1);
  if (!query.filters.empty()) {
    for (uint32_t set = 0; set < d.AttributeSetCount(); ++set) {
      for (const storage::AttributeFilter& f : query.filters) {
        bool any = false;
        for (const storage::Attribute& a : d.AttributeSet(set)) {
          if (a.key < d.strings.size() && d.strings[a.key] == f.key && a.value < d.strings.size() &&
              std::find(f.values.begin(), f.values.end(), d.strings[a.value]) != f.values.end()) {
            any = true;
          }
        }
        if (!any) {
          passes[set] = 0;
          break;
        }
      }
    }
  }

  absl::flat_hash_map<uint64_t, uint32_t> index;
  int64_t first = std::numeric_limits<int64_t>::max(), last = std::numeric_limits<int64_t>::min();
  for (const storage::Sample& s : batch.samples) {
    if (s.kind != query.kind || s.time_ns < query.from_ns || s.time_ns >= query.to_ns) continue;
    if (s.attribute_set >= passes.size() || !passes[s.attribute_set]) continue;
    if (s.stack >= d.StackCount()) continue;
    uint64_t key = (uint64_t{s.stack} << 32) | s.attribute_set;
    auto [it, added] = index.try_emplace(key, static_cast<uint32_t>(slice->weights.size()));
    if (added) slice->weights.push_back({s.stack, s.attribute_set, 0, 0});
    storage::StackWeight& w = slice->weights[it->second];
    w.weight += s.value;
    w.events += 1;
    slice->total_weight += s.value;
    slice->total_events += 1;
    first = std::min(first, s.time_ns);
    last = std::max(last, s.time_ns);
  }
  if (!slice->weights.empty()) {
    slice->first_sample_ns = first;
    slice->last_sample_ns = last;
  }
  return slice;
}

}  // namespace kiln::capture
