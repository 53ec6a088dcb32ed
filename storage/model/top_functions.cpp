#include "storage/model/top_functions.h"

#include <algorithm>
#include <tuple>

#include "absl/container/flat_hash_map.h"

namespace kiln::storage {

std::vector<TopFunctionRow> BuildTopFunctions(const ProfileSlice& slice, bool show_inline) {
  const ProfileDictionary& dict = slice.dict;
  std::vector<TopFunctionRow> rows;
  // frame -> row, resolved once per frame.
  constexpr uint32_t kUnset = UINT32_MAX;
  std::vector<uint32_t> row_of_frame(dict.frames.size(), kUnset);
  absl::flat_hash_map<std::tuple<std::string, uint32_t, uint8_t>, uint32_t> row_ids;
  auto row_for = [&](uint32_t f) {
    if (row_of_frame[f] != kUnset) return row_of_frame[f];
    const Frame& frame = dict.frames[f];
    std::string label = FrameLabel(dict, f);
    uint32_t exe_name = dict.executables[frame.executable].file_name;
    auto [it, added] = row_ids.try_emplace(
        std::make_tuple(label, exe_name, static_cast<uint8_t>(frame.type)),
        static_cast<uint32_t>(rows.size()));
    if (added) {
      TopFunctionRow row;
      row.function = std::move(label);
      row.file = dict.strings[frame.file];
      row.executable = dict.strings[exe_name];
      row.type = frame.type;
      rows.push_back(std::move(row));
    }
    row_of_frame[f] = it->second;
    return it->second;
  };
  // A recursive function counts once per stack toward total: `seen` holds
  // the index of the last weight entry that added to each row.
  std::vector<size_t> seen;
  for (size_t wi = 0; wi < slice.weights.size(); ++wi) {
    const StackWeight& w = slice.weights[wi];
    uint32_t leaf = kUnset;
    for (uint32_t f : dict.Stack(w.stack)) {
      if (!show_inline && dict.frames[f].inlined) continue;
      uint32_t r = row_for(f);
      if (seen.size() < rows.size()) seen.resize(rows.size(), SIZE_MAX);
      if (seen[r] != wi) {
        seen[r] = wi;
        rows[r].total += w.weight;
      }
      leaf = r;
    }
    if (leaf != kUnset) rows[leaf].self += w.weight;
  }
  std::sort(rows.begin(), rows.end(), [](const TopFunctionRow& a, const TopFunctionRow& b) {
    if (a.self != b.self) return a.self > b.self;
    if (a.total != b.total) return a.total > b.total;
    return a.function < b.function;
  });
  return rows;
}

std::vector<ExecutableRow> BuildExecutableTable(const ProfileSlice& slice) {
  const ProfileDictionary& dict = slice.dict;
  std::vector<ExecutableRow> rows(dict.executables.size());
  for (size_t i = 1; i < dict.executables.size(); ++i) {
    const Executable& e = dict.executables[i];
    rows[i].file_name = dict.strings[e.file_name];
    rows[i].htlhash = dict.strings[e.htlhash];
    rows[i].gnu_build_id = dict.strings[e.gnu_build_id];
    rows[i].go_build_id = dict.strings[e.go_build_id];
  }
  for (size_t f = 1; f < dict.frames.size(); ++f) {
    const Frame& frame = dict.frames[f];
    if (frame.executable == 0) continue;
    rows[frame.executable].frames++;
    if (frame.function == 0) rows[frame.executable].unsymbolized_frames++;
  }
  std::vector<size_t> seen(rows.size(), SIZE_MAX);
  for (size_t wi = 0; wi < slice.weights.size(); ++wi) {
    const StackWeight& w = slice.weights[wi];
    for (uint32_t f : dict.Stack(w.stack)) {
      uint32_t e = dict.frames[f].executable;
      if (e == 0 || seen[e] == wi) continue;
      seen[e] = wi;
      rows[e].weight += w.weight;
    }
  }
  if (!rows.empty()) rows.erase(rows.begin());  // the empty executable 0
  std::sort(rows.begin(), rows.end(), [](const ExecutableRow& a, const ExecutableRow& b) {
    if (a.weight != b.weight) return a.weight > b.weight;
    return a.file_name < b.file_name;
  });
  return rows;
}

}  // namespace kiln::storage
