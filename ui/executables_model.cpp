#include "ui/executables_model.h"

#include <algorithm>
#include <unordered_map>

namespace kiln::ui {

using storage::SymbolStatus;

SymbolStatus StatusOfExecutable(const SymbolStatusMap& statuses, std::string_view htlhash,
                                std::string_view gnu_build_id) {
  const SymbolStatus* best = nullptr;
  for (const std::string& key : storage::SymbolKeys(htlhash, gnu_build_id)) {
    const auto it = statuses.find(key);
    if (it == statuses.end()) continue;
    const SymbolStatus& s = it->second;
    if (!best) {
      best = &s;
      continue;
    }
    const bool s_table = s.state == SymbolStatus::State::kSymbolized;
    const bool best_table = best->state == SymbolStatus::State::kSymbolized;
    if (s_table != best_table ? s_table : s.updated_ns > best->updated_ns) best = &s;
  }
  return best ? *best : SymbolStatus{};
}

std::string SourceKind(std::string_view source) {
  for (std::string_view cut : {" /", " http://", " https://", " file://", ": "}) {
    const size_t at = source.find(cut);
    if (at != std::string_view::npos) source = source.substr(0, at);
  }
  return std::string(source);
}

std::string SymbolStatusText(const SymbolStatus& status) {
  switch (status.state) {
    case SymbolStatus::State::kNotAttempted:
      return "not attempted";
    case SymbolStatus::State::kSymbolized: {
      std::string text = "symbols from " + SourceKind(status.source);
      text +=
          " with " + std::to_string(status.functions) + (status.functions == 1 ? " function" : " functions");
      return text;
    }
    case SymbolStatus::State::kNoSymbols:
      return "no symbols found";
    case SymbolStatus::State::kFailed:
      return "failed: " + (status.detail.empty() ? std::string("unknown reason") : status.detail);
  }
  return "?";
}

std::string ExecutableStatusText(const SymbolStatusMap& statuses, const storage::ExecutableRow& row) {
  if (row.htlhash.empty() && row.gnu_build_id.empty()) return "no id (cannot be matched)";
  return SymbolStatusText(StatusOfExecutable(statuses, row.htlhash, row.gnu_build_id));
}

std::vector<UnsymbolizedAddress> UnsymbolizedAddresses(const storage::ProfileSlice& slice,
                                                       const storage::ExecutableRow& row) {
  const storage::ProfileDictionary& dict = slice.dict;
  // Both branches string_view: `cond ? strings[i] : ""` would make a
  // temporary std::string and return a view of it.
  auto str = [&](uint32_t i) -> std::string_view {
    return i < dict.strings.size() ? std::string_view(dict.strings[i]) : std::string_view();
  };
  std::vector<bool> executable_matches(dict.executables.size(), false);
  for (size_t e = 1; e < dict.executables.size(); ++e) {
    const storage::Executable& x = dict.executables[e];
    executable_matches[e] = str(x.file_name) == row.file_name && str(x.htlhash) == row.htlhash &&
                            str(x.gnu_build_id) == row.gnu_build_id;
  }
  // Frame index -> slot in `out`, for unnamed frames of the executable.
  std::unordered_map<uint64_t, size_t> slot_of_address;
  std::vector<int64_t> frame_slot(dict.frames.size(), -1);
  std::vector<UnsymbolizedAddress> out;
  for (size_t f = 1; f < dict.frames.size(); ++f) {
    const storage::Frame& frame = dict.frames[f];
    if (frame.function != 0 || frame.executable >= executable_matches.size() ||
        !executable_matches[frame.executable]) {
      continue;
    }
    auto [it, inserted] = slot_of_address.emplace(frame.address, out.size());
    if (inserted) out.push_back({frame.address, 0});
    frame_slot[f] = static_cast<int64_t>(it->second);
  }
  if (out.empty()) return out;
  // Counted once per (stack, attribute set) entry, like a function's total.
  std::vector<size_t> last_entry(out.size(), SIZE_MAX);
  for (size_t i = 0; i < slice.weights.size(); ++i) {
    const storage::StackWeight& w = slice.weights[i];
    if (w.stack >= dict.StackCount()) continue;
    for (uint32_t f : dict.Stack(w.stack)) {
      if (f >= frame_slot.size() || frame_slot[f] < 0) continue;
      const size_t slot = static_cast<size_t>(frame_slot[f]);
      if (last_entry[slot] == i) continue;
      last_entry[slot] = i;
      out[slot].weight += w.weight;
    }
  }
  std::sort(out.begin(), out.end(), [](const UnsymbolizedAddress& a, const UnsymbolizedAddress& b) {
    return a.weight != b.weight ? a.weight > b.weight : a.address < b.address;
  });
  return out;
}

}  // namespace kiln::ui
