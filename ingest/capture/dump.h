#pragma once
// `kiln dump`: every sample of a capture as a reader can check it, for
// people debugging what a producer sends. Text: one block per sample (its
// sample type, value with unit, time, attributes, link, and its stack leaf
// first with function, file:line, frame type and executable). JSON: one
// object per line. Pure functions of a normalized batch.

#include <string>

#include "storage/model/profile_model.h"

namespace kiln::capture {

// The block for sample `s` of `batch`, ending in a blank line. `number` is
// shown ("sample 3").
std::string DumpSampleText(const storage::ProfileBatch& batch, const storage::Sample& s, uint64_t number);

// One JSON object, no newline: sample_type, unit, value, time_unix_nano,
// time (RFC 3339, UTC), attributes (object), trace_id / span_id (hex, when
// linked), stack (leaf first: function, file, line, type, executable,
// address as hex, inlined).
std::string DumpSampleJson(const storage::ProfileBatch& batch, const storage::Sample& s);

}  // namespace kiln::capture
