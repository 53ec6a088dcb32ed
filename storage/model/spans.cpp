#include "storage/model/spans.h"

#include <algorithm>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "storage/model/flame_tree.h"

namespace kiln::storage {

std::string HexId(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

std::optional<std::string> BytesOfHex(std::string_view hex) {
  if (hex.empty() || hex.size() % 2 != 0) return std::nullopt;
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out(hex.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i) {
    const int hi = digit(hex[2 * i]), lo = digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out[i] = static_cast<char>(hi * 16 + lo);
  }
  return out;
}

absl::Status CheckSpanFilterValue(std::string_view key, std::string_view value) {
  if (key != attr::kTraceId && key != attr::kSpanId) return absl::OkStatus();
  if (BytesOfHex(value)) return absl::OkStatus();
  return absl::InvalidArgumentError(std::string(key) + " wants an id in hex, as OTLP/JSON writes it (" +
                                    (key == attr::kTraceId ? "32" : "16") + " digits), got \"" +
                                    std::string(value) + "\"");
}

SpanIdentity SpanOf(const ProfileDictionary& dict, uint32_t link, uint32_t attribute_set) {
  SpanIdentity id;
  if (link != 0 && link < dict.links.size()) {
    id.trace = HexId(dict.links[link].trace_id);
    id.span = HexId(dict.links[link].span_id);
  }
  // Labels may spell the ids in upper case; links are lowercase hex.
  auto lower = [&](std::string_view key) {
    std::string v(dict.AttributeValue(attribute_set, key));
    absl::AsciiStrToLower(&v);
    return v;
  };
  if (id.trace.empty()) id.trace = lower(attr::kTraceId);
  if (id.span.empty()) id.span = lower(attr::kSpanId);
  return id;
}

std::shared_ptr<const ProfileSlice> SliceWithSpanAttributes(std::shared_ptr<const ProfileSlice> slice) {
  if (!slice || slice->samples.empty()) return slice;
  const ProfileSlice& in = *slice;
  // Only what was kept sample by sample can be split by link: a slice whose
  // weights hold more (summed hours) is left whole rather than half split.
  const bool linked = std::any_of(in.samples.begin(), in.samples.end(), [&](const SliceSample& s) {
    return s.link != 0 && s.link < in.dict.links.size();
  });
  if (!linked || in.samples.size() != in.total_events) return slice;
  auto out = std::make_shared<ProfileSlice>();
  out->dict = in.dict;
  out->sample_type = in.sample_type;
  out->from_ns = in.from_ns;
  out->to_ns = in.to_ns;
  out->first_sample_ns = in.first_sample_ns;
  out->last_sample_ns = in.last_sample_ns;
  out->total_weight = in.total_weight;
  out->total_events = in.total_events;
  ProfileDictionary& dict = out->dict;
  const uint32_t trace_key = dict.AddString(attr::kTraceId);
  const uint32_t span_key = dict.AddString(attr::kSpanId);
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>, uint32_t> set_of;    // (set, link) -> set
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>, uint32_t> entry_of;  // (stack, set) -> entry
  out->samples.reserve(in.samples.size());
  for (const SliceSample& s : in.samples) {
    if (s.entry >= in.weights.size()) continue;
    const StackWeight& w = in.weights[s.entry];
    uint32_t set = w.attribute_set;
    if (s.link != 0 && s.link < in.dict.links.size()) {
      auto [it, fresh] = set_of.try_emplace(std::pair{set, s.link}, 0);
      if (fresh) {
        const auto span = in.dict.AttributeSet(set);
        std::vector<Attribute> attributes(span.begin(), span.end());
        // Appended last, so they win over a sender's attributes of the same name.
        const Link& link = in.dict.links[s.link];
        if (!link.trace_id.empty()) attributes.push_back({trace_key, dict.AddString(HexId(link.trace_id))});
        if (!link.span_id.empty()) attributes.push_back({span_key, dict.AddString(HexId(link.span_id))});
        it->second = dict.AddAttributeSet(std::move(attributes));
      }
      set = it->second;
    }
    auto [e, added] = entry_of.try_emplace(std::pair{w.stack, set}, static_cast<uint32_t>(out->weights.size()));
    if (added) out->weights.push_back({w.stack, set, 0, 0});
    StackWeight& to = out->weights[e->second];
    to.weight += s.value;
    to.events += 1;
    out->samples.push_back({e->second, s.link, s.time_ns, s.value});
  }
  return out;
}

std::string SpanGroupLabel(const ProfileDictionary& dict, uint32_t attribute_set) {
  const SpanIdentity id = SpanOf(dict, 0, attribute_set);
  if (id.span.empty()) return id.trace.empty() ? std::string(kNoSpan) : "trace " + id.trace;
  const std::string_view name = dict.AttributeValue(attribute_set, attr::kSpanName);
  return name.empty() ? "span " + id.span : std::string(name) + " (span " + id.span + ")";
}

std::optional<std::pair<std::string, std::string>> SpanFilterOfGroupLabel(std::string_view label) {
  auto hex = [](std::string_view id) { return !id.empty() && BytesOfHex(id).has_value(); };
  if (label.rfind("trace ", 0) == 0 && hex(label.substr(6))) {
    return std::pair{std::string(attr::kTraceId), std::string(label.substr(6))};
  }
  if (label.rfind("span ", 0) == 0 && hex(label.substr(5))) {
    return std::pair{std::string(attr::kSpanId), std::string(label.substr(5))};
  }
  const size_t at = label.rfind(" (span ");
  if (at != std::string_view::npos && label.back() == ')') {
    const std::string_view id = label.substr(at + 7, label.size() - at - 8);
    if (hex(id)) return std::pair{std::string(attr::kSpanId), std::string(id)};
  }
  return std::nullopt;
}

std::vector<SpanRow> SpansOf(const ProfileSlice& slice, uint64_t* unspanned) {
  const ProfileDictionary& dict = slice.dict;
  std::vector<SpanRow> rows;
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>, uint32_t> row_of;  // (link, set) -> row
  absl::flat_hash_map<std::pair<std::string, std::string>, uint32_t> row_of_id;
  std::vector<std::vector<uint32_t>> sets_of_row;  // attribute sets seen, for the thread labels
  uint64_t none = 0;
  for (const SliceSample& s : slice.samples) {
    if (s.entry >= slice.weights.size()) continue;
    const uint32_t set = slice.weights[s.entry].attribute_set;
    auto [it, added] = row_of.try_emplace(std::pair{s.link, set}, UINT32_MAX);
    if (added) {
      SpanIdentity id = SpanOf(dict, s.link, set);
      if (!id.empty()) {
        auto [r, new_row] = row_of_id.try_emplace(std::pair{id.trace, id.span}, static_cast<uint32_t>(rows.size()));
        if (new_row) {
          rows.push_back({std::move(id), std::string(dict.AttributeValue(set, attr::kSpanName)), 0, 0, s.time_ns,
                          s.time_ns, {}});
          sets_of_row.emplace_back();
        }
        it->second = r->second;
        sets_of_row[r->second].push_back(set);
        if (rows[r->second].name.empty()) rows[r->second].name = std::string(dict.AttributeValue(set, attr::kSpanName));
      }
    }
    if (it->second == UINT32_MAX) {
      ++none;
      continue;
    }
    SpanRow& row = rows[it->second];
    row.weight += s.value;
    ++row.samples;
    row.first_ns = std::min(row.first_ns, s.time_ns);
    row.last_ns = std::max(row.last_ns, s.time_ns);
  }
  for (size_t r = 0; r < rows.size(); ++r) {
    for (uint32_t set : sets_of_row[r]) rows[r].threads.push_back(ThreadInstanceLabel(dict, set, {}));
    std::sort(rows[r].threads.begin(), rows[r].threads.end());
    rows[r].threads.erase(std::unique(rows[r].threads.begin(), rows[r].threads.end()), rows[r].threads.end());
  }
  std::sort(rows.begin(), rows.end(), [](const SpanRow& a, const SpanRow& b) {
    return std::tie(b.weight, a.id.trace, a.id.span) < std::tie(a.weight, b.id.trace, b.id.span);
  });
  if (unspanned != nullptr) *unspanned = none;
  return rows;
}

}  // namespace kiln::storage
