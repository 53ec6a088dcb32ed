#include "storage/model/sampling.h"

#include <cstdio>
#include <cstdlib>
#include <set>
#include <vector>

#include "storage/model/sample_type.h"

namespace kiln::storage {
namespace {

std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

double ScaledProbability(const ProfileDictionary& dict, uint32_t set) {
  const std::string p(dict.AttributeValue(set, attr::kSamplingProbability));
  if (p.empty()) return 1;
  const double value = std::strtod(p.c_str(), nullptr);
  return ScalesByProbability(value) ? value : 1;
}

SamplingNote SamplingNoteOf(const ProfileSlice& slice) {
  SamplingNote note;
  std::set<std::string> probabilities;
  std::vector<bool> seen(slice.dict.AttributeSetCount(), false);
  for (const StackWeight& w : slice.weights) {
    if (w.weight == 0 || w.attribute_set >= seen.size() || seen[w.attribute_set]) continue;
    seen[w.attribute_set] = true;
    const std::string_view p = slice.dict.AttributeValue(w.attribute_set, attr::kSamplingProbability);
    if (!p.empty()) probabilities.emplace(p);
  }
  // The shares the normalizer scaled by (ingest/otlp_normalizer.cpp: from
  // one in a million up to, not including, 1); 1 says "every event".
  std::string list, factors;
  bool complete = false;
  for (const std::string& p : probabilities) {
    const double value = std::strtod(p.c_str(), nullptr);
    if (value >= 1) complete = true;
    if (!ScalesByProbability(value)) continue;
    list += (list.empty() ? "" : ", ") + p;
    factors += (factors.empty() ? "x" : ", x") + Number(1 / value);
  }
  if (!list.empty()) {
    note.kind = SamplingNote::Kind::kEstimated;
    note.label = "estimated " + factors;
    note.text = "Estimated: the sender recorded a share of these events (probability " + list +
                ") and Kiln scaled the values by " + factors +
                " to estimate the whole. Small values are rough: few events were recorded.";
    return note;
  }
  if (slice.sample_type.type == OffCpuTime() && !complete) {
    note.kind = SamplingNote::Kind::kMaybeSampled;
    note.label = "may be sampled";
    note.text =
        "May be sampled: the sender did not say what share of blocked periods it recorded. The OpenTelemetry "
        "eBPF profiler follows a share set by -off-cpu-threshold without sending it, so these totals may be that "
        "fraction of the real time. kiln-agent sends its share, and Kiln then scales to an estimate.";
  }
  return note;
}

}  // namespace kiln::storage
