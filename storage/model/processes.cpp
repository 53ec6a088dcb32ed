#include "storage/model/processes.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "storage/model/flame_tree.h"

namespace kiln::storage {

std::vector<ProcessSummary> ProcessesOf(const ProfileSlice& slice) {
  const ProfileDictionary& d = slice.dict;
  std::vector<ProcessSummary> out;
  absl::flat_hash_map<std::string_view, size_t> index_of_pid;
  // Per attribute set, its process's index (or none), looked up once.
  constexpr size_t kNone = SIZE_MAX, kUnseen = SIZE_MAX - 1;
  std::vector<size_t> process_of_set(d.AttributeSetCount(), kUnseen);
  // The name's weight per process: a pid whose name changed (exec) is
  // named after the heavier.
  std::vector<int64_t> name_weight;
  const auto process_of = [&](uint32_t set) {
    if (set >= process_of_set.size()) return kNone;
    size_t& p = process_of_set[set];
    if (p != kUnseen) return p;
    const std::string_view pid = d.AttributeValue(set, attr::kProcessPid);
    if (pid.empty()) return p = kNone;
    auto [it, added] = index_of_pid.try_emplace(pid, out.size());
    if (added) {
      out.push_back({.pid = std::string(pid)});
      name_weight.push_back(-1);
    }
    return p = it->second;
  };
  std::vector<absl::flat_hash_map<uint32_t, int64_t>> set_weights;
  for (const StackWeight& w : slice.weights) {
    const size_t p = process_of(w.attribute_set);
    if (p == kNone) continue;
    out[p].weight += w.weight;
    out[p].events += w.events;
    if (set_weights.size() <= p) set_weights.resize(p + 1);
    set_weights[p][w.attribute_set] += w.weight;
  }
  for (size_t p = 0; p < set_weights.size(); ++p) {
    for (const auto& [set, weight] : set_weights[p]) {
      if (weight > name_weight[p]) {
        name_weight[p] = weight;
        out[p].name = ProcessLabel(d, set);
      }
    }
  }
  for (const SliceSample& s : slice.samples) {
    if (s.entry >= slice.weights.size()) continue;
    const size_t p = process_of(slice.weights[s.entry].attribute_set);
    if (p == kNone) continue;
    ProcessSummary& ps = out[p];
    if (ps.first_ns == 0 || s.time_ns < ps.first_ns) ps.first_ns = s.time_ns;
    ps.last_ns = std::max(ps.last_ns, s.time_ns);
  }
  std::erase_if(out, [](const ProcessSummary& p) { return p.events == 0; });
  std::sort(out.begin(), out.end(), [](const ProcessSummary& a, const ProcessSummary& b) {
    if (a.weight != b.weight) return a.weight > b.weight;
    return a.pid.size() != b.pid.size() ? a.pid.size() < b.pid.size() : a.pid < b.pid;
  });
  return out;
}

}  // namespace kiln::storage
