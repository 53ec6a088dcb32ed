// The frame-type colours of the SVG exporter: the window's legend colours
// (ui/frame_colors.h) for callers that cannot link the UI, such as the
// library's tests. The app passes ui::NodeColor through
// ExportOptions::node_color instead, so exports match the window exactly.
// Pure functions.
#pragma once

#include <cstdint>
#include <string_view>

#include "storage/model/diff.h"
#include "storage/model/profile_model.h"

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

// Colours of the synthetic root, process and thread nodes.
Rgb RootColor();
Rgb ProcessColor();
Rgb ThreadColor();

// The fill of a diff node (storage::CompareNode): red where its share grew,
// blue where it shrank, grey where unchanged; strong only where the change
// is significant (pale otherwise, however large), stronger the larger it
// is.
Rgb DiffColor(const storage::NodeChange& change);

// Black or white text, whichever reads better on `fill`.
Rgb TextColorOn(Rgb fill);

}  // namespace kiln::capture
