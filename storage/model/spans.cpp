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
    for (uint32_t set : sets_of_row[r]) {
      std::string label = ProcessLabel(dict, set);
      const std::string_view tid = dict.AttributeValue(set, attr::kThreadId);
      const std::string_view thread = dict.AttributeValue(set, attr::kThreadName);
      if (!thread.empty() || !tid.empty()) {
        label += " \xc2\xb7 " + (thread.empty() ? "tid " + std::string(tid) : std::string(thread));
      }
      rows[r].threads.push_back(std::move(label));
    }
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
