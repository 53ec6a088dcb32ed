#include "ingest/capture/frame_palette.h"

#include <algorithm>
#include <array>

namespace kiln::capture {
namespace {

// Indexed by FrameType. Chosen so that the common mixes (native + kernel,
// JVM + JIT + kernel, Python + native) contrast; close to devfiler's and
// perf-flamegraph conventions (kernel orange, JIT green, user code blue).
constexpr std::array<Rgb, storage::kFrameTypeCount> kBase = {{
    {0x9e, 0x9e, 0x9e},  // kUnknown: grey
    {0x5b, 0x8f, 0xd9},  // kNative: blue
    {0xe8, 0x8a, 0x3c},  // kKernel: orange
    {0x4f, 0xc3, 0xc9},  // kGo: cyan
    {0xd9, 0xc8, 0x4a},  // kPython: yellow
    {0x8e, 0x7c, 0xc3},  // kPhp: lavender
    {0x6d, 0xb8, 0x5a},  // kJvm: green
    {0xd2, 0x4d, 0x57},  // kRuby: red
    {0x3e, 0x8e, 0x8e},  // kPerl: teal
    {0xc9, 0xa2, 0x27},  // kV8js: amber
    {0x9b, 0x59, 0xb6},  // kDotnet: purple
    {0xb0, 0x3a, 0x7a},  // kBeam: magenta
    {0x2e, 0x86, 0xab},  // kLuajit: deep blue
    {0x40, 0x40, 0x40},  // kAbortMarker: dark grey
    {0x3f, 0xae, 0x49},  // kJit: bright green
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

Rgb ProcessColor() { return {0xb8, 0xb8, 0xc8}; }
Rgb ThreadColor() { return {0xcc, 0xcc, 0xd8}; }

}  // namespace kiln::capture
