// The frame-type colour palette shared by the app's flame graph and the
// SVG exporter, so an exported SVG looks like the window. Pure functions.
#pragma once

#include <cstdint>
#include <string_view>

#include "storage/profile_model.h"

namespace kiln::capture {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Rgb&) const = default;
};

// The base colour of a frame type (kernel orange, native blue, JIT green...).
Rgb FrameTypeColor(storage::FrameType type);

// The colour of one node: the type's base colour varied slightly by a hash
// of the label so that neighbouring frames stay distinguishable; the same
// label always gets the same colour.
Rgb FrameColor(storage::FrameType type, std::string_view label);

// Colours of the synthetic process and thread nodes.
Rgb ProcessColor();
Rgb ThreadColor();

}  // namespace kiln::capture
