#include "ingest/capture/frame_palette.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace kiln::capture {
namespace {

// Indexed by FrameType. The same base colours as the window's legend
// (ui/frame_colors.cpp); ExportOptions::node_color lets the app hand its
// own function in so an exported SVG matches the window exactly.
constexpr std::array<Rgb, storage::kFrameTypeCount> kBase = {{
    {0x8c, 0x8c, 0x8c},  // kUnknown: grey
    {0xe8, 0xa3, 0x3d},  // kNative: amber
    {0xe0, 0x55, 0x4b},  // kKernel: red
    {0x3f, 0xb8, 0xcc},  // kGo: cyan
    {0x5c, 0xb8, 0x4d},  // kPython: green
    {0x8e, 0x7c, 0xe8},  // kPhp: violet
    {0x4f, 0x86, 0xdc},  // kJvm: blue
    {0xd0, 0x4f, 0x86},  // kRuby: pink
    {0x8a, 0x9c, 0xb4},  // kPerl: slate
    {0xd4, 0xcb, 0x45},  // kV8js: yellow
    {0xa8, 0x5f, 0xc8},  // kDotnet: purple
    {0xc0, 0x74, 0x36},  // kBeam: brown
    {0x3a, 0x9e, 0x6e},  // kLuajit: sea green
    {0xf0, 0x50, 0xe0},  // kAbortMarker: magenta
    {0xe8, 0x80, 0x58},  // kJit: salmon
}};

}  // namespace

Rgb FrameTypeColor(storage::FrameType type) {
  auto i = static_cast<size_t>(type);
  return i < kBase.size() ? kBase[i] : kBase[0];
}

Rgb FrameColor(storage::FrameType type, std::string_view label) {
  // FNV-1a: stable across runs and platforms (std::hash is not).
  uint32_t h = 2166136261u;
  for (char c : label) h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
  int delta = static_cast<int>(h % 41) - 20;  // -20..+20 brightness
  Rgb base = FrameTypeColor(type);
  auto adjust = [&](uint8_t v) { return static_cast<uint8_t>(std::clamp(v + delta, 0, 255)); };
  return {adjust(base.r), adjust(base.g), adjust(base.b)};
}

Rgb RootColor() { return {0x5f, 0x68, 0x78}; }
Rgb ProcessColor() { return {0x70, 0x7d, 0x90}; }
Rgb ThreadColor() { return {0x84, 0x91, 0xa3}; }

Rgb DiffColor(const storage::NodeChange& change) {
  // The window's stops (ui::DiffColor), strength from storage::DiffStrength.
  constexpr Rgb kSame{0xd0, 0xd0, 0xd0}, kMore{0xe0, 0x3a, 0x2f}, kLess{0x2e, 0x6c, 0xd6};
  const double signed_strength = storage::DiffStrength(change);
  const double strength = std::abs(signed_strength);
  const Rgb to = signed_strength >= 0 ? kMore : kLess;
  auto mix = [&](uint8_t a, uint8_t b) {
    return static_cast<uint8_t>(std::lround(a + (static_cast<double>(b) - a) * strength));
  };
  return {mix(kSame.r, to.r), mix(kSame.g, to.g), mix(kSame.b, to.b)};
}

Rgb TextColorOn(Rgb fill) {
  // Rec. 601 luma, as the window decides.
  float luma = 0.299f * fill.r + 0.587f * fill.g + 0.114f * fill.b;
  return luma > 110.f ? Rgb{0x10, 0x10, 0x10} : Rgb{0xf2, 0xf2, 0xf2};
}

}  // namespace kiln::capture
