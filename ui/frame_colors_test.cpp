#include "ui/frame_colors.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <set>

namespace kiln::ui {
namespace {

using storage::FrameType;
using storage::NodeKind;

int Distance(Rgba a, Rgba b) {
  return std::abs(RedOf(a) - RedOf(b)) + std::abs(GreenOf(a) - GreenOf(b)) + std::abs(BlueOf(a) - BlueOf(b));
}

TEST_CASE("every frame type has its own legend colour and name") {
  std::set<Rgba> colors;
  std::set<std::string_view> names;
  for (int t = 0; t < storage::kFrameTypeCount; ++t) {
    colors.insert(FrameTypeColor(static_cast<FrameType>(t)));
    names.insert(FrameTypeDisplayName(static_cast<FrameType>(t)));
  }
  CHECK(colors.size() == storage::kFrameTypeCount);
  CHECK(names.size() == storage::kFrameTypeCount);
  CHECK(FrameTypeDisplayName(FrameType::kKernel) == "Kernel");
  // Out-of-range values (from a newer store) fall back to Unknown.
  CHECK(FrameTypeColor(static_cast<FrameType>(200)) == FrameTypeColor(FrameType::kUnknown));
}

TEST_CASE("node colours vary by name but stay near the type colour") {
  const Rgba a = NodeColor(NodeKind::kFrame, FrameType::kKernel, "do_syscall_64");
  const Rgba b = NodeColor(NodeKind::kFrame, FrameType::kKernel, "entry_SYSCALL_64");
  CHECK(a != b);
  CHECK(a == NodeColor(NodeKind::kFrame, FrameType::kKernel, "do_syscall_64"));
  for (Rgba c : {a, b}) {
    CHECK(Distance(c, FrameTypeColor(FrameType::kKernel)) < 100);
    CHECK(Distance(c, FrameTypeColor(FrameType::kPython)) > 150);
  }
  // Grouping nodes are not jittered.
  CHECK(NodeColor(NodeKind::kProcess, FrameType::kUnknown, "x") == NodeKindColor(NodeKind::kProcess));
}

TEST_CASE("packing, blending and text contrast") {
  const Rgba c = PackRgba(10, 20, 30, 40);
  CHECK(RedOf(c) == 10);
  CHECK(GreenOf(c) == 20);
  CHECK(BlueOf(c) == 30);
  CHECK(AlphaOf(c) == 40);
  CHECK(c == 0x281e140au);  // ImU32 layout
  CHECK(BlendTowards(PackRgba(200, 100, 0), PackRgba(0, 0, 0), 0.5f) == PackRgba(100, 50, 0));
  CHECK(TextColorOn(PackRgba(240, 200, 80)) == PackRgba(0x10, 0x10, 0x10));
  CHECK(TextColorOn(PackRgba(20, 20, 40)) == PackRgba(0xf2, 0xf2, 0xf2));
}

}  // namespace
}  // namespace kiln::ui
