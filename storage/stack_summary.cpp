#include "storage/stack_summary.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "storage/varint.h"

namespace kiln::storage {

namespace {

absl::Status Corrupt(std::string_view what) {
  return absl::DataLossError(absl::StrCat("stack summary: ", std::string(what)));
}

}  // namespace

void StackSummaryBuilder::Add(const BlockSample& s) {
  const int64_t offset = BucketOf(s.time_ns) - summary_.hour * kBucketsPerSummary;
  if (offset < 0 || offset >= kBucketsPerSummary) return;
  summary_.samples += 1;
  Sum& st = stacks_[Key(s.attribute_set, s.stack)];
  st.weight += s.value;
  st.events += 1;
  Sum& b = buckets_[Key(s.attribute_set, static_cast<uint32_t>(offset))];
  b.weight += s.value;
  b.events += 1;
  auto [it, added] =
      sets_.try_emplace(s.attribute_set, StackSummary::Set{s.attribute_set, s.time_ns, s.time_ns});
  if (!added) {
    it->second.first_ns = std::min(it->second.first_ns, s.time_ns);
    it->second.last_ns = std::max(it->second.last_ns, s.time_ns);
  }
}

StackSummary StackSummaryBuilder::Finish() && {
  StackSummary& out = summary_;
  for (const auto& [set, info] : sets_) out.sets.push_back(info);
  std::sort(out.sets.begin(), out.sets.end(), [](const StackSummary::Set& a, const StackSummary::Set& b) {
    return a.attribute_set < b.attribute_set;
  });
  auto to_weights = [&out](const absl::flat_hash_map<uint64_t, Sum>& sums,
                           std::vector<StackSummary::Weight>* w) {
    // A part no smaller than half the samples saves too little to be worth
    // its disk: the query reads the samples instead.
    if (sums.size() * 2 > out.samples) return false;
    w->reserve(sums.size());
    for (const auto& [key, sum] : sums) {
      w->push_back({static_cast<uint32_t>(key >> 32), static_cast<uint32_t>(key), sum.weight, sum.events});
    }
    std::sort(w->begin(), w->end(), [](const StackSummary::Weight& a, const StackSummary::Weight& b) {
      return std::tie(a.attribute_set, a.key) < std::tie(b.attribute_set, b.key);
    });
    return true;
  };
  out.has_stacks = to_weights(stacks_, &out.stacks);
  out.has_buckets = to_weights(buckets_, &out.buckets);
  return std::move(out);
}

namespace {

void PutWeights(std::string* v, const std::vector<StackSummary::Weight>& weights) {
  PutVarint(v, weights.size());
  uint32_t set = 0, key = 0;
  for (const StackSummary::Weight& w : weights) {
    PutVarint(v, w.attribute_set - set);
    if (w.attribute_set != set) key = 0;
    PutVarint(v, w.key - key);
    PutVarint(v, ZigZag(w.weight));
    PutVarint(v, w.events);
    set = w.attribute_set;
    key = w.key;
  }
}

bool GetWeights(VarintReader* r, std::vector<StackSummary::Weight>* out, uint64_t key_limit) {
  uint64_t n = 0;
  if (!r->Count(&n, 4)) return false;
  out->resize(n);
  uint64_t set = 0, key = 0;
  for (StackSummary::Weight& w : *out) {
    const uint64_t set_delta = r->Next();
    const uint64_t key_delta = r->Next();
    // Bounded before adding, so a damaged delta cannot wrap around.
    if (set_delta > UINT32_MAX || key_delta > UINT32_MAX) return false;
    if (set_delta != 0) key = 0;
    set += set_delta;
    key += key_delta;
    w.weight = UnZigZag(r->Next());
    w.events = r->Next();
    if (!r->ok || set > UINT32_MAX || key >= key_limit) return false;
    w.attribute_set = static_cast<uint32_t>(set);
    w.key = static_cast<uint32_t>(key);
  }
  return true;
}

}  // namespace

std::string EncodeStackSummary(const StackSummary& summary) {
  std::string v;
  v.push_back(static_cast<char>(kStackSummaryVersion));
  PutVarint(&v, summary.samples);
  PutVarint(&v, (summary.has_stacks ? 1 : 0) | (summary.has_buckets ? 2 : 0));
  PutVarint(&v, summary.sets.size());
  const int64_t start = summary.hour * kSummaryNs;
  uint32_t set = 0;
  for (const StackSummary::Set& s : summary.sets) {
    PutVarint(&v, s.attribute_set - set);
    PutVarint(&v, ZigZag(s.first_ns - start));
    PutVarint(&v, static_cast<uint64_t>(s.last_ns - s.first_ns));
    set = s.attribute_set;
  }
  if (summary.has_stacks) PutWeights(&v, summary.stacks);
  if (summary.has_buckets) PutWeights(&v, summary.buckets);
  return v;
}

absl::Status DecodeStackSummary(std::string_view bytes, int64_t hour, StackSummary* out) {
  *out = StackSummary{};
  out->hour = hour;
  if (bytes.empty()) return Corrupt("empty");
  if (static_cast<uint8_t>(bytes[0]) != kStackSummaryVersion) {
    return Corrupt(absl::StrCat("unknown version ", static_cast<int>(static_cast<uint8_t>(bytes[0]))));
  }
  VarintReader r{bytes.data() + 1, bytes.data() + bytes.size()};
  out->samples = r.Next();
  const uint64_t flags = r.Next();
  out->has_stacks = (flags & 1) != 0;
  out->has_buckets = (flags & 2) != 0;
  uint64_t n = 0;
  if (!r.ok || flags > 3 || !r.Count(&n, 3)) return Corrupt("truncated header");
  out->sets.resize(n);
  const int64_t start = hour * kSummaryNs;
  uint64_t set = 0;
  for (StackSummary::Set& s : out->sets) {
    const uint64_t set_delta = r.Next();
    const int64_t first = UnZigZag(r.Next());
    const uint64_t length = r.Next();
    // Every sample time lies in the hour: checked before any arithmetic.
    if (!r.ok || set_delta > UINT32_MAX || first < 0 || first >= kSummaryNs ||
        length >= static_cast<uint64_t>(kSummaryNs - first)) {
      return Corrupt("bad attribute set entry");
    }
    set += set_delta;
    if (set > UINT32_MAX) return Corrupt("bad attribute set entry");
    s.attribute_set = static_cast<uint32_t>(set);
    s.first_ns = start + first;
    s.last_ns = s.first_ns + static_cast<int64_t>(length);
  }
  if (out->has_stacks && !GetWeights(&r, &out->stacks, uint64_t{UINT32_MAX} + 1))
    return Corrupt("bad stack entry");
  if (out->has_buckets && !GetWeights(&r, &out->buckets, kBucketsPerSummary))
    return Corrupt("bad bucket entry");
  if (r.p != r.end) return Corrupt("trailing bytes");
  return absl::OkStatus();
}

}  // namespace kiln::storage
