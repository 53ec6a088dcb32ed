// Finds where a protobuf message that failed to parse stops being valid, so
// an INVALID_ARGUMENT answer can name the field and the byte offset instead
// of saying "parse error". Walks the wire format guided by the message's
// descriptor (no parsing into objects, no allocation proportional to input).
//
// Threads: pure function. Cost: linear in the input; nesting is bounded like
// protobuf's own parser (100 levels).
#pragma once

#include <string>
#include <string_view>

#include "google/protobuf/descriptor.h"

namespace kiln::ingest {

// Describes the first problem in `bytes` as an encoding of `descriptor`,
// e.g. "resource_profiles[0].scope_profiles[0].profiles[1].samples[3]
// (field 5, timestamps_unix_nano) at byte offset 1234: 3 bytes left for a
// fixed64". Returns "" when the walk finds no problem (the caller then falls
// back to a generic message).
std::string LocateDecodeError(std::string_view bytes, const google::protobuf::Descriptor* descriptor);

}  // namespace kiln::ingest
