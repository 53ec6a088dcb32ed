#include "ui/frame_colors.h"

#include <algorithm>
#include <cmath>

namespace kiln::ui {

using storage::FrameType;
using storage::NodeKind;

namespace {

struct TypeStyle {
  std::string_view name;
  Rgba color;
};

// Indexed by FrameType's value. Hues are spread so that the common mixes
// (kernel + native + one runtime) are told apart at a glance, and all are
// bright enough to carry black text on a dark background.
constexpr TypeStyle kTypeStyles[storage::kFrameTypeCount] = {
    {"Unknown", PackRgba(0x8c, 0x8c, 0x8c)},       // kUnknown
    {"Native", PackRgba(0xe8, 0xa3, 0x3d)},        // kNative: amber
    {"Kernel", PackRgba(0xe0, 0x55, 0x4b)},        // kKernel: red
    {"Go", PackRgba(0x3f, 0xb8, 0xcc)},            // kGo: cyan
    {"Python", PackRgba(0x5c, 0xb8, 0x4d)},        // kPython: green
    {"PHP", PackRgba(0x8e, 0x7c, 0xe8)},           // kPhp: violet
    {"JVM", PackRgba(0x4f, 0x86, 0xdc)},           // kJvm: blue
    {"Ruby", PackRgba(0xd0, 0x4f, 0x86)},          // kRuby: pink
    {"Perl", PackRgba(0x8a, 0x9c, 0xb4)},          // kPerl: slate
    {"JavaScript", PackRgba(0xd4, 0xcb, 0x45)},    // kV8js: yellow
    {".NET", PackRgba(0xa8, 0x5f, 0xc8)},          // kDotnet: purple
    {"BEAM", PackRgba(0xc0, 0x74, 0x36)},          // kBeam: brown
    {"LuaJIT", PackRgba(0x3a, 0x9e, 0x6e)},        // kLuajit: sea green
    {"Abort marker", PackRgba(0xf0, 0x50, 0xe0)},  // kAbortMarker: magenta
    {"JIT", PackRgba(0xe8, 0x80, 0x58)},           // kJit: salmon
};

const TypeStyle& StyleOf(FrameType type) {
  const auto index = static_cast<size_t>(type);
  return index < std::size(kTypeStyles) ? kTypeStyles[index] : kTypeStyles[0];
}

struct Hsv {
  float h, s, v;
};

Hsv ToHsv(Rgba c) {
  const float r = RedOf(c) / 255.f, g = GreenOf(c) / 255.f, b = BlueOf(c) / 255.f;
  const float max = std::max({r, g, b}), min = std::min({r, g, b});
  const float d = max - min;
  float h = 0;
  if (d > 0) {
    if (max == r) {
      h = std::fmod((g - b) / d, 6.f);
    } else if (max == g) {
      h = (b - r) / d + 2.f;
    } else {
      h = (r - g) / d + 4.f;
    }
    h /= 6.f;
    if (h < 0) h += 1.f;
  }
  return {h, max > 0 ? d / max : 0.f, max};
}

Rgba FromHsv(Hsv hsv, uint8_t alpha) {
  float h = hsv.h - std::floor(hsv.h);
  const float s = std::clamp(hsv.s, 0.f, 1.f), v = std::clamp(hsv.v, 0.f, 1.f);
  const float c = v * s;
  const float hp = h * 6.f;
  const float x = c * (1.f - std::fabs(std::fmod(hp, 2.f) - 1.f));
  float r = 0, g = 0, b = 0;
  switch (static_cast<int>(hp) % 6) {
    case 0:
      r = c, g = x;
      break;
    case 1:
      r = x, g = c;
      break;
    case 2:
      g = c, b = x;
      break;
    case 3:
      g = x, b = c;
      break;
    case 4:
      r = x, b = c;
      break;
    default:
      r = c, b = x;
      break;
  }
  const float m = v - c;
  auto to8 = [](float f) { return static_cast<uint8_t>(std::lround(std::clamp(f, 0.f, 1.f) * 255.f)); };
  return PackRgba(to8(r + m), to8(g + m), to8(b + m), alpha);
}

}  // namespace

std::string_view FrameTypeDisplayName(FrameType type) { return StyleOf(type).name; }

Rgba FrameTypeColor(FrameType type) { return StyleOf(type).color; }

Rgba NodeKindColor(NodeKind kind) {
  switch (kind) {
    case NodeKind::kRoot:
      return PackRgba(0x5f, 0x68, 0x78);
    case NodeKind::kProcess:
    case NodeKind::kGroup:
      return PackRgba(0x70, 0x7d, 0x90);
    case NodeKind::kThread:
      return PackRgba(0x84, 0x91, 0xa3);
    case NodeKind::kFrame:
      break;
  }
  return FrameTypeColor(FrameType::kUnknown);
}

uint32_t LabelHash(std::string_view label) {
  uint32_t h = 2166136261u;
  for (unsigned char c : label) {
    h ^= c;
    h *= 16777619u;
  }
  return h;
}

Rgba NodeColor(NodeKind kind, FrameType type, std::string_view label) {
  const Rgba base = kind == NodeKind::kFrame ? FrameTypeColor(type) : NodeKindColor(kind);
  if (kind != NodeKind::kFrame) return base;
  const uint32_t h = LabelHash(label);
  // Two independent values in [-1, 1] from different bits of the hash.
  const float a = static_cast<float>(h & 0xffff) / 32767.5f - 1.f;
  const float b = static_cast<float>(h >> 16) / 32767.5f - 1.f;
  Hsv hsv = ToHsv(base);
  hsv.h += a * kHueJitter;
  hsv.v *= 1.f + b * kValueJitter;
  return FromHsv(hsv, AlphaOf(base));
}

Rgba BlendTowards(Rgba c, Rgba background, float amount) {
  amount = std::clamp(amount, 0.f, 1.f);
  auto mix = [amount](uint8_t x, uint8_t y) {
    return static_cast<uint8_t>(std::lround(x + (static_cast<float>(y) - x) * amount));
  };
  return PackRgba(mix(RedOf(c), RedOf(background)), mix(GreenOf(c), GreenOf(background)),
                  mix(BlueOf(c), BlueOf(background)), AlphaOf(c));
}

Rgba TextColorOn(Rgba fill) {
  // Rec. 601 luma; the threshold favours black text on the mid-bright fills.
  const float luma = 0.299f * RedOf(fill) + 0.587f * GreenOf(fill) + 0.114f * BlueOf(fill);
  return luma > 110.f ? PackRgba(0x10, 0x10, 0x10) : PackRgba(0xf2, 0xf2, 0xf2);
}

Rgba DiffColor(double strength) {
  constexpr Rgba kSame = PackRgba(0xd0, 0xd0, 0xd0);
  const Rgba to = strength >= 0 ? PackRgba(0xe0, 0x3a, 0x2f) : PackRgba(0x2e, 0x6c, 0xd6);
  const float amount = static_cast<float>(std::min(1.0, std::abs(strength)));
  return BlendTowards(kSame, to, amount);
}

}  // namespace kiln::ui
