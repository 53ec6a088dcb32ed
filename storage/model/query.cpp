#include "storage/model/query.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "storage/model/spans.h"

namespace kiln::storage {

std::vector<uint8_t> MatchAttributeSets(const ProfileDictionary& d, const std::vector<AttributeFilter>& filters) {
  std::vector<uint8_t> passes(d.AttributeSetCount(), 1);
  for (const AttributeFilter& f : filters) {
    // Whether a string id is the filter's key (or one of its values), found
    // once per id: sets share a few keys and values.
    absl::flat_hash_map<uint32_t, bool> is_key, is_value;
    auto matches = [&](absl::flat_hash_map<uint32_t, bool>& cache, uint32_t id, auto&& test) {
      auto [it, added] = cache.try_emplace(id, false);
      if (added) it->second = id < d.strings.size() && test(d.strings[id]);
      return it->second;
    };
    for (uint32_t set = 0; set < passes.size(); ++set) {
      if (!passes[set]) continue;
      bool any = false;
      for (const Attribute& a : d.AttributeSet(set)) {
        if (matches(is_key, a.key, [&](const std::string& s) { return s == f.key; }) &&
            matches(is_value, a.value, [&](const std::string& s) {
              return std::find(f.values.begin(), f.values.end(), s) != f.values.end();
            })) {
          any = true;
          break;
        }
      }
      passes[set] = any;
    }
  }
  return passes;
}

absl::StatusOr<std::vector<AttributeFilter>> ParseFilterArguments(const std::vector<std::string>& arguments) {
  std::vector<AttributeFilter> filters;
  for (const std::string& a : arguments) {
    const size_t eq = a.find('=');
    if (eq == std::string::npos || eq == 0) {
      return absl::InvalidArgumentError("--filter wants KEY=VALUE, got \"" + a + "\"");
    }
    const std::string key = a.substr(0, eq);
    if (absl::Status s = CheckSpanFilterValue(key, std::string_view(a).substr(eq + 1)); !s.ok()) {
      return absl::InvalidArgumentError("--filter " + std::string(s.message()));
    }
    auto it = std::find_if(filters.begin(), filters.end(), [&](const AttributeFilter& f) { return f.key == key; });
    if (it == filters.end()) it = filters.insert(filters.end(), AttributeFilter{key, {}});
    it->values.push_back(a.substr(eq + 1));
  }
  return filters;
}

namespace {

bool IsSpanKey(std::string_view key) { return key == attr::kTraceId || key == attr::kSpanId; }

std::vector<AttributeFilter> AttributeFiltersOnly(const std::vector<AttributeFilter>& filters) {
  std::vector<AttributeFilter> out;
  for (const AttributeFilter& f : filters) {
    if (!IsSpanKey(f.key)) out.push_back(f);
  }
  return out;
}

}  // namespace

SampleSelector::SampleSelector(const ProfileDictionary& dict, const Query& query)
    : sample_type_(dict.SampleTypeIndex(query.sample_type).value_or(kNoType)),
      from_ns_(query.from_ns),
      to_ns_(query.to_ns),
      passes_(MatchAttributeSets(dict, AttributeFiltersOnly(query.filters))) {
  for (const AttributeFilter& f : query.filters) {
    if (!IsSpanKey(f.key)) continue;
    AttributeFilter lower = f;
    for (std::string& v : lower.values) absl::AsciiStrToLower(&v);
    span_filters_.push_back(std::move(lower));
  }
  if (span_filters_.empty()) return;
  // A link passes when its ids pass every span filter; a sample without a
  // link's ids may still pass by its attributes (lowercased as SpanOf does).
  // Links hold raw bytes: the values are decoded once and compared as
  // bytes (a day's store has hundreds of thousands of links; spelling each
  // in hex cost 50 ms per query).
  std::vector<std::vector<std::string>> raw(span_filters_.size());
  for (size_t k = 0; k < span_filters_.size(); ++k) {
    for (const std::string& v : span_filters_[k].values) {
      if (std::optional<std::string> bytes = BytesOfHex(v)) raw[k].push_back(*std::move(bytes));
    }
  }
  link_passes_.assign(dict.links.size(), 0);
  for (size_t l = 1; l < dict.links.size(); ++l) {
    bool all = true;
    for (size_t k = 0; k < span_filters_.size() && all; ++k) {
      const Link& link = dict.links[l];
      const std::string& id = span_filters_[k].key == attr::kTraceId ? link.trace_id : link.span_id;
      all = std::find(raw[k].begin(), raw[k].end(), id) != raw[k].end();
    }
    link_passes_[l] = all ? 1 : 0;
  }
  span_set_passes_.assign(dict.AttributeSetCount(), 0);
  for (uint32_t set = 0; set < span_set_passes_.size(); ++set) {
    const SpanIdentity id = SpanOf(dict, 0, set);
    bool all = true;
    for (const AttributeFilter& f : span_filters_) {
      const std::string& v = f.key == attr::kTraceId ? id.trace : id.span;
      all = all && std::find(f.values.begin(), f.values.end(), v) != f.values.end();
    }
    span_set_passes_[set] = all ? 1 : 0;
  }
}

SliceAggregator::SliceAggregator(ProfileSlice* slice, size_t stack_count, bool keep_samples)
    : slice_(*slice), stack_count_(stack_count), keep_samples_(keep_samples) {}

uint32_t SliceAggregator::Entry(uint32_t stack, uint32_t attribute_set) {
  constexpr uint32_t kNoEntry = UINT32_MAX;
  if (first_entry_.empty()) first_entry_.assign(stack_count_, kNoEntry);
  std::vector<StackWeight>& weights = slice_.weights;
  uint32_t e = first_entry_[stack];
  while (e != kNoEntry && weights[e].attribute_set != attribute_set) e = next_entry_[e];
  if (e == kNoEntry) {
    e = static_cast<uint32_t>(weights.size());
    weights.push_back({stack, attribute_set, 0, 0});
    next_entry_.push_back(first_entry_[stack]);
    first_entry_[stack] = e;
  }
  return e;
}

void SliceAggregator::AddTimes(int64_t first_ns, int64_t last_ns) {
  if (!any_ || first_ns < slice_.first_sample_ns) slice_.first_sample_ns = first_ns;
  if (!any_ || last_ns > slice_.last_sample_ns) slice_.last_sample_ns = last_ns;
  any_ = true;
}

void SliceAggregator::Add(uint32_t stack, uint32_t attribute_set, int64_t time_ns, int64_t value, uint32_t link) {
  const uint32_t e = Entry(stack, attribute_set);
  StackWeight& w = slice_.weights[e];
  w.weight += value;
  w.events += 1;
  slice_.total_weight += value;
  slice_.total_events += 1;
  AddTimes(time_ns, time_ns);
  if (keep_samples_) slice_.samples.push_back({e, link, time_ns, value});
}

void SliceAggregator::AddSummed(uint32_t stack, uint32_t attribute_set, int64_t weight, uint64_t events) {
  StackWeight& w = slice_.weights[Entry(stack, attribute_set)];
  w.weight += weight;
  w.events += events;
  slice_.total_weight += weight;
  slice_.total_events += events;
}

void SliceAggregator::Merge(const ProfileSlice& part) {
  std::vector<uint32_t> entry_of(part.weights.size());  // part's entry -> this slice's
  for (size_t k = 0; k < part.weights.size(); ++k) {
    const StackWeight& pw = part.weights[k];
    entry_of[k] = Entry(pw.stack, pw.attribute_set);
    StackWeight& w = slice_.weights[entry_of[k]];
    w.weight += pw.weight;
    w.events += pw.events;
  }
  slice_.total_weight += part.total_weight;
  slice_.total_events += part.total_events;
  if (part.total_events > 0) AddTimes(part.first_sample_ns, part.last_sample_ns);
  for (const SliceSample& s : part.samples) slice_.samples.push_back({entry_of[s.entry], s.link, s.time_ns, s.value});
}

TimeSpan TimelineSpan(const Query& query, int64_t source_first_ns, int64_t source_last_ns) {
  TimeSpan span{query.from_ns, query.to_ns};
  if (span.from_ns == std::numeric_limits<int64_t>::min()) span.from_ns = source_first_ns;
  if (span.to_ns == std::numeric_limits<int64_t>::max()) {
    span.to_ns = source_last_ns == std::numeric_limits<int64_t>::max() ? source_last_ns : source_last_ns + 1;
  }
  if (span.to_ns <= span.from_ns) span.to_ns = span.from_ns + 1;
  return span;
}

Timeline EmptyTimeline(TimeSpan span, int bucket_count) {
  Timeline t;
  if (bucket_count <= 0) return t;
  t.start_ns = span.from_ns;
  // Rounded up so the last bucket reaches the end; 128-bit because a span
  // may be most of int64's range.
  t.bucket_ns = std::max<int64_t>(
      1, static_cast<int64_t>((static_cast<__int128>(span.to_ns) - span.from_ns + bucket_count - 1) / bucket_count));
  t.weights.assign(static_cast<size_t>(bucket_count), 0);
  t.events.assign(static_cast<size_t>(bucket_count), 0);
  return t;
}

int64_t TimelineIndex(const Timeline& t, int64_t time_ns) {
  if (t.weights.empty() || time_ns < t.start_ns) return -1;
  // Both are int64, time_ns >= start_ns: the offset fits in 64 unsigned
  // bits, and a 64-bit division is several times cheaper than a 128-bit
  // one (this runs for every sample a timeline or heat map scans).
  const uint64_t offset = static_cast<uint64_t>(time_ns) - static_cast<uint64_t>(t.start_ns);
  const uint64_t i = offset / static_cast<uint64_t>(t.bucket_ns);
  return i >= t.weights.size() ? -1 : static_cast<int64_t>(i);
}

void AddToTimeline(Timeline* t, int64_t time_ns, int64_t value) {
  const int64_t i = TimelineIndex(*t, time_ns);
  if (i < 0) return;
  t->weights[static_cast<size_t>(i)] += value;
  t->events[static_cast<size_t>(i)] += 1;
}

std::shared_ptr<const ProfileSlice> SliceFromBatch(const ProfileBatch& batch, const Query& query) {
  auto slice = std::make_shared<ProfileSlice>();
  slice->dict = batch.dict;
  const ProfileDictionary& d = batch.dict;
  SampleSelector selector(d, query);
  slice->sample_type = selector.any_type() ? d.sample_types[selector.sample_type()] : SampleTypeInfo{query.sample_type};
  slice->from_ns = query.from_ns;
  slice->to_ns = query.to_ns;
  SliceAggregator aggregator(slice.get(), d.StackCount(), query.keep_samples);
  for (const Sample& s : batch.samples) {
    if (s.stack < d.StackCount() && selector.Selects(s.sample_type, s.time_ns, s.attribute_set, s.link)) {
      aggregator.Add(s.stack, s.attribute_set, s.time_ns, s.value, s.link);
    }
  }
  return slice;
}

std::vector<uint32_t> SelectSamples(const ProfileBatch& batch, const Query& query) {
  SampleSelector selector(batch.dict, query);
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < batch.samples.size(); ++i) {
    const Sample& s = batch.samples[i];
    if (s.stack < batch.dict.StackCount() && selector.Selects(s.sample_type, s.time_ns, s.attribute_set, s.link)) {
      out.push_back(i);
    }
  }
  return out;
}

Timeline TimelineFromBatch(const ProfileBatch& batch, const Query& query, int bucket_count) {
  int64_t first = 0, last = 0;
  for (size_t i = 0; i < batch.samples.size(); ++i) {
    const int64_t t = batch.samples[i].time_ns;
    first = i == 0 ? t : std::min(first, t);
    last = i == 0 ? t : std::max(last, t);
  }
  Timeline t = EmptyTimeline(TimelineSpan(query, first, last), bucket_count);
  SampleSelector selector(batch.dict, query);
  for (const Sample& s : batch.samples) {
    if (s.stack < batch.dict.StackCount() && selector.Selects(s.sample_type, s.time_ns, s.attribute_set, s.link)) {
      AddToTimeline(&t, s.time_ns, s.value);
    }
  }
  return t;
}

}  // namespace kiln::storage
