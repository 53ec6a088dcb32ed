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

#include <imgui.h>

#include <cmath>

#include "ui/theme.h"

namespace kiln::ui {

TEST_CASE("a hovered tab does not look like the open one, in both themes") {
  ImGui::CreateContext();
  auto distance = [](const ImVec4& a, const ImVec4& b) {
    return std::sqrt((a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y) + (a.z - b.z) * (a.z - b.z));
  };
  for (const bool light : {false, true}) {
    CAPTURE(light);
    ApplyTheme(1.f, light);
    const ImVec4* c = ImGui::GetStyle().Colors;
    // Nearer the closed tabs than the open one (an orange hover read as a second open tab).
    CHECK(distance(c[ImGuiCol_TabHovered], c[ImGuiCol_Tab]) < distance(c[ImGuiCol_TabHovered], c[ImGuiCol_TabActive]));
    CHECK(distance(c[ImGuiCol_TabHovered], c[ImGuiCol_TabActive]) > 0.3f);
  }
  ImGui::DestroyContext();
}

}  // namespace kiln::ui
