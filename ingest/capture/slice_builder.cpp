#include "ingest/capture/slice_builder.h"

#include <algorithm>
#include <limits>

#include "absl/container/flat_hash_map.h"

namespace kiln::capture {

namespace {

// Which attribute sets pass the filters (AND over keys, OR over values).
std::vector<uint8_t> PassingAttributeSets(const storage::ProfileDictionary& d, const storage::Query& query) {
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
  return passes;
}

// The batch index of the query's sample type; UINT32_MAX (matching no
// sample) when the batch has none of it.
uint32_t SampleTypeIndex(const storage::ProfileDictionary& d, const storage::Query& query) {
  return d.SampleTypeIndex(query.sample_type).value_or(UINT32_MAX);
}

bool Selected(const storage::Sample& s, const storage::Query& query, uint32_t sample_type,
              const std::vector<uint8_t>& passes) {
  return s.sample_type == sample_type && s.time_ns >= query.from_ns && s.time_ns < query.to_ns &&
         s.attribute_set < passes.size() && passes[s.attribute_set] != 0;
}

}  // namespace

std::shared_ptr<const storage::ProfileSlice> SliceFromBatch(const storage::ProfileBatch& batch,
                                                            const storage::Query& query) {
  auto slice = std::make_shared<storage::ProfileSlice>();
  slice->dict = batch.dict;
  const uint32_t sample_type = SampleTypeIndex(batch.dict, query);
  slice->sample_type = sample_type != UINT32_MAX ? batch.dict.sample_types[sample_type]
                                                 : storage::SampleTypeInfo{query.sample_type};
  slice->from_ns = query.from_ns;
  slice->to_ns = query.to_ns;
  const storage::ProfileDictionary& d = batch.dict;

  std::vector<uint8_t> passes = PassingAttributeSets(d, query);

  absl::flat_hash_map<uint64_t, uint32_t> index;
  index.reserve(std::min<size_t>(batch.samples.size(), d.StackCount() + 16));
  int64_t first = std::numeric_limits<int64_t>::max(), last = std::numeric_limits<int64_t>::min();
  for (const storage::Sample& s : batch.samples) {
    if (!Selected(s, query, sample_type, passes)) continue;
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

std::vector<uint32_t> SelectSamples(const storage::ProfileBatch& batch, const storage::Query& query) {
  std::vector<uint8_t> passes = PassingAttributeSets(batch.dict, query);
  const uint32_t sample_type = SampleTypeIndex(batch.dict, query);
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < batch.samples.size(); ++i) {
    const storage::Sample& s = batch.samples[i];
    if (Selected(s, query, sample_type, passes) && s.stack < batch.dict.StackCount()) out.push_back(i);
  }
  return out;
}

storage::Timeline TimelineFromBatch(const storage::ProfileBatch& batch, const storage::Query& query,
                                    int bucket_count) {
  storage::Timeline t;
  if (bucket_count <= 0) return t;
  std::vector<uint8_t> passes = PassingAttributeSets(batch.dict, query);
  const uint32_t sample_type = SampleTypeIndex(batch.dict, query);
  int64_t from = query.from_ns, to = query.to_ns;
  if (from == std::numeric_limits<int64_t>::min() || to == std::numeric_limits<int64_t>::max()) {
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
    for (const storage::Sample& s : batch.samples) {
      if (!Selected(s, query, sample_type, passes)) continue;
      lo = std::min(lo, s.time_ns);
      hi = std::max(hi, s.time_ns);
    }
    if (lo > hi) lo = hi = 0;
    if (from == std::numeric_limits<int64_t>::min()) from = lo;
    if (to == std::numeric_limits<int64_t>::max()) to = hi + 1;
  }
  if (to <= from) to = from + 1;
  t.start_ns = from;
  // Round up so the last bucket reaches `to`.
  t.bucket_ns = std::max<int64_t>(
      1, static_cast<int64_t>((static_cast<__int128>(to) - from + bucket_count - 1) / bucket_count));
  t.weights.assign(static_cast<size_t>(bucket_count), 0);
  t.events.assign(static_cast<size_t>(bucket_count), 0);
  for (const storage::Sample& s : batch.samples) {
    if (!Selected(s, query, sample_type, passes) || s.time_ns < from || s.time_ns >= to) continue;
    auto i = static_cast<size_t>((static_cast<__int128>(s.time_ns) - from) / t.bucket_ns);
    if (i >= t.weights.size()) i = t.weights.size() - 1;
    t.weights[i] += s.value;
    t.events[i] += 1;
  }
  return t;
}

}  // namespace kiln::capture
