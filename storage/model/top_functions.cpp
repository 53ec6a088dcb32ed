#include "storage/model/top_functions.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "storage/model/diff.h"

namespace kiln::storage {

std::vector<TopFunctionRow> BuildTopFunctions(std::shared_ptr<const ProfileSlice> slice, bool show_inline) {
  return BuildTopFunctions(StacksOf(std::move(slice), show_inline));
}

std::vector<TopFunctionRow> BuildTopFunctions(const Stacks& stacks) {
  const FunctionTable& functions = *stacks.functions;
  std::vector<TopFunctionRow> rows(functions.size());
  const ProfileDictionary* dict = stacks.slice ? &stacks.slice->dict : nullptr;
  for (uint32_t id = 0; id < functions.size(); ++id) {
    const StackFunction& f = functions[id];
    TopFunctionRow& row = rows[id];
    row.function = f.name;
    row.executable = f.executable;
    row.type = f.type;
    if (dict != nullptr && f.frame != 0) row.file = dict->strings[dict->frames[f.frame].file];
  }
  // A recursive function counts once per stack toward total: `seen` holds
  // the index of the last stack that added to each row.
  std::vector<size_t> seen(rows.size(), SIZE_MAX);
  for (size_t i = 0; i < stacks.size(); ++i) {
    auto [begin, end] = stacks.Stack(i);
    for (const uint32_t* p = begin; p != end; ++p) {
      if (seen[*p] != i) {
        seen[*p] = i;
        rows[*p].total += stacks.weights[i];
        rows[*p].total_events += stacks.events[i];
      }
    }
    if (begin != end) {
      rows[*(end - 1)].self += stacks.weights[i];
      rows[*(end - 1)].self_events += stacks.events[i];
    }
  }
  // Functions no stack holds any more (a transform removed them) are not
  // shown.
  size_t kept = 0;
  for (size_t id = 0; id < rows.size(); ++id) {
    if (seen[id] == SIZE_MAX) continue;
    if (kept != id) rows[kept] = std::move(rows[id]);  // never onto itself: that empties a string
    ++kept;
  }
  rows.resize(kept);
  std::sort(rows.begin(), rows.end(), [](const TopFunctionRow& a, const TopFunctionRow& b) {
    if (a.self != b.self) return a.self > b.self;
    if (a.total != b.total) return a.total > b.total;
    return a.function < b.function;
  });
  return rows;
}

std::vector<DiffFunctionRow> BuildDiffTopFunctions(const Stacks& base, const Stacks& target) {
  std::vector<DiffFunctionRow> rows;
  absl::flat_hash_map<std::tuple<std::string, std::string, uint8_t>, size_t> index;
  auto totals_of = [](const Stacks& s) {
    Proportion p;
    for (int64_t w : s.weights) p.total_weight += w;
    for (uint64_t e : s.events) p.total_events += e;
    return p;
  };
  const Proportion base_all = totals_of(base), target_all = totals_of(target);
  const double base_total = static_cast<double>(std::max<int64_t>(base_all.total_weight, 1));
  const double target_total = static_cast<double>(std::max<int64_t>(target_all.total_weight, 1));
  std::vector<uint64_t> base_events, target_events;  // per row: total_events of each side
  for (int side = 0; side < 2; ++side) {
    for (const TopFunctionRow& r : BuildTopFunctions(side == 0 ? base : target)) {
      auto [it, added] =
          index.try_emplace(std::make_tuple(r.function, r.executable, static_cast<uint8_t>(r.type)), rows.size());
      if (added) {
        rows.push_back({r.function, r.executable, r.type});
        base_events.push_back(0);
        target_events.push_back(0);
      }
      DiffFunctionRow& row = rows[it->second];
      if (side == 0) {
        row.base_self = r.self;
        row.base_total = r.total;
        base_events[it->second] = r.total_events;
      } else {
        row.target_self = r.self;
        row.target_total = r.total;
        target_events[it->second] = r.total_events;
      }
    }
  }
  const Stacks& typed = target.slice ? target : base;
  const SampleType type = typed.slice ? typed.slice->sample_type.type : SampleType{};
  for (size_t i = 0; i < rows.size(); ++i) {
    DiffFunctionRow& r = rows[i];
    Proportion b = base_all, t = target_all;
    b.weight = r.base_total;
    b.events = base_events[i];
    t.weight = r.target_total;
    t.events = target_events[i];
    r.z = ShareChangeZ(type, b, t);
    r.significant = std::abs(r.z) >= kSignificantZ;
    r.base_self_share = static_cast<double>(r.base_self) / base_total;
    r.base_total_share = static_cast<double>(r.base_total) / base_total;
    r.target_self_share = static_cast<double>(r.target_self) / target_total;
    r.target_total_share = static_cast<double>(r.target_total) / target_total;
  }
  std::stable_sort(rows.begin(), rows.end(), [](const DiffFunctionRow& a, const DiffFunctionRow& b) {
    return a.target_total_share - a.base_total_share > b.target_total_share - b.base_total_share;
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
