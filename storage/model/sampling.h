// Whether a slice's values are estimates scaled up from a share of events
// its sender recorded (kiln-agent's off-CPU at -off-cpu-threshold 0.1: one
// blocked period in ten, values x10), or may be a share nobody said: the
// note the window shows beside the sample type. Pure (model_test).
#pragma once

#include <string>

#include "storage/model/profile_model.h"

namespace kiln::storage {

struct SamplingNote {
  enum class Kind { kNone, kEstimated, kMaybeSampled };
  Kind kind = Kind::kNone;
  std::string label;  // short: "estimated x10", "may be sampled"
  std::string text;   // the whole sentence, for a tooltip
  bool operator==(const SamplingNote&) const = default;
};

// kEstimated when samples with weight carry attr::kSamplingProbability
// (the normalizer scaled them by its inverse); else kMaybeSampled for
// off-CPU time, which the OpenTelemetry eBPF profiler records with a
// probability it does not send; else kNone.
SamplingNote SamplingNoteOf(const ProfileSlice& slice);

// Whether the normalizer scales a profile's values by 1 / `probability`
// (attr::kSamplingProbability): from one in a million up to, not
// including, 1. Below that it is not a rate anyone uses; 1 is every event.
inline bool ScalesByProbability(double probability) { return probability >= 1e-6 && probability < 1; }
// The probability attribute set `set`'s values were scaled by, 1 when
// they were not (no attribute, or one ScalesByProbability refuses).
double ScaledProbability(const ProfileDictionary& dict, uint32_t set);

}  // namespace kiln::storage
