// Colours of flame graph nodes: one base colour per frame type (what the
// legend shows), varied in hue and brightness by a hash of the node's label
// so that neighbouring nodes of the same type stay distinguishable.
// Pure functions, callable from any thread; no ImGui dependency.
#pragma once

#include <cstdint>
#include <string_view>

#include "storage/model/flame_tree.h"
#include "storage/model/profile_model.h"

namespace kiln::ui {

// Packed colour in ImGui's ImU32 layout (0xAABBGGRR), so it can be handed to
// ImDrawList unchanged.
using Rgba = uint32_t;

constexpr Rgba PackRgba(uint8_t r, uint8_t g, uint8_t b, uint8_t a = 255) {
  return static_cast<Rgba>(r) | (static_cast<Rgba>(g) << 8) | (static_cast<Rgba>(b) << 16) |
         (static_cast<Rgba>(a) << 24);
}
constexpr uint8_t RedOf(Rgba c) { return c & 0xff; }
constexpr uint8_t GreenOf(Rgba c) { return (c >> 8) & 0xff; }
constexpr uint8_t BlueOf(Rgba c) { return (c >> 16) & 0xff; }
constexpr uint8_t AlphaOf(Rgba c) { return (c >> 24) & 0xff; }

// Human name for the legend and tooltips ("Kernel", "Native", "Python", ...).
std::string_view FrameTypeDisplayName(storage::FrameType type);

// The legend colour of a frame type. Every type has a distinct colour.
Rgba FrameTypeColor(storage::FrameType type);

// Colour of the synthetic nodes above the frames (root, process, thread).
Rgba NodeKindColor(storage::NodeKind kind);

// FNV-1a of the label: stable across runs so colours do not flicker when a
// new snapshot arrives.
uint32_t LabelHash(std::string_view label);

// The fill colour of one node: the type colour with hue shifted by up to
// +-kHueJitter turns and value scaled by 1 +- kValueJitter, chosen by the
// label hash. Same label and type, same colour.
inline constexpr float kHueJitter = 0.025f;
inline constexpr float kValueJitter = 0.12f;
Rgba NodeColor(storage::NodeKind kind, storage::FrameType type, std::string_view label);

// `c` blended towards `background` by `amount` (0 = unchanged, 1 = background);
// used to dim nodes that do not match a search.
Rgba BlendTowards(Rgba c, Rgba background, float amount);

// A diff node's fill for storage::DiffStrength: grey at 0, red towards +1
// (grew), blue towards -1 (shrank). The SVG export uses the same stops.
Rgba DiffColor(double strength);

// Black or white, whichever reads better on `fill`.
Rgba TextColorOn(Rgba fill);

}  // namespace kiln::ui
