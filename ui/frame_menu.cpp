#include "ui/frame_menu.h"

#include <imgui.h>

#include <algorithm>

#include "absl/status/statusor.h"
#include "storage/model/spans.h"
#include "ui/format.h"

namespace kiln::ui {

namespace {

using storage::Transform;

std::string EscapeRegex(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

void Push(SessionState* session, Transform::Kind kind, std::string argument, std::vector<std::string> path = {}) {
  Transform t;
  t.kind = kind;
  t.argument = std::move(argument);
  t.path = std::move(path);
  session->tree.transforms.push_back(std::move(t));
}

}  // namespace

void SelectFunction(SessionState* session, const std::string& function, const std::vector<FunctionAction>* actions) {
  if (session == nullptr) return;
  session->search_text = function.empty() ? std::string() : "=" + function;
  if (function.empty() || actions == nullptr) return;
  for (const FunctionAction& action : *actions) session->SetViewArg(action.view, function);
}

FrameMenuTarget FrameMenuTargetOf(const storage::FlameTree& tree, uint32_t node) {
  FrameMenuTarget t;
  const storage::FlameNode& n = tree.nodes[node];
  t.kind = n.kind;
  t.label = tree.Label(node);
  t.kernel = n.type == storage::FrameType::kKernel;
  for (uint32_t p = node; p != 0; p = tree.nodes[p].parent) {
    if (tree.nodes[p].kind == storage::NodeKind::kFrame) t.path.insert(t.path.begin(), tree.Label(p));
  }
  const storage::ProfileSlice* slice = tree.slice.get();
  if (slice && n.frame != 0 && n.frame < slice->dict.frames.size()) {
    const storage::Frame& f = slice->dict.frames[n.frame];
    if (f.executable != 0) t.executable = slice->dict.strings[slice->dict.executables[f.executable].file_name];
  }
  return t;
}

std::string HidePatternFor(const std::string& function) {
  // The first component of a qualified name: C++/Rust "ns::", Java/Go
  // "pkg/" or "pkg.", as long as something follows it.
  for (std::string_view sep : {"::", "/", "."}) {
    size_t at = function.find(sep);
    if (at != std::string::npos && at > 0 && at + sep.size() < function.size() &&
        function.find_first_of("( <") > at) {
      return "^" + EscapeRegex(function.substr(0, at + sep.size()));
    }
  }
  return "^" + EscapeRegex(function) + "$";
}

void FrameMenu::Open(FrameMenuTarget target) {
  target_ = std::move(target);
  open_requested_ = true;
}

void FrameMenu::Draw(SessionState* session, const std::vector<FunctionAction>* actions) {
  if (open_requested_) {
    ImGui::OpenPopup("##frame_menu");
    open_requested_ = false;
  }
  if (session == nullptr) return;
  using Kind = Transform::Kind;
  const std::string& name = target_.label;
  if (ImGui::BeginPopup("##frame_menu")) {
    ImGui::TextDisabled("%s", ShortenLabel(name, 80).c_str());
    ImGui::Separator();
    if (ImGui::MenuItem("Copy name")) ImGui::SetClipboardText(name.c_str());
    if (target_.kind == storage::NodeKind::kFrame) {
      ImGui::Separator();
      if (ImGui::MenuItem("Focus on function", nullptr, false)) Push(session, Kind::kFocusFunction, name);
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("Every call of it as the root, its callees merged");
      if (!target_.path.empty() && ImGui::MenuItem("Focus on subtree")) {
        Push(session, Kind::kFocusSubtree, "", target_.path);
      }
      if (ImGui::MenuItem("Callers of this function")) Push(session, Kind::kCallersOf, name);
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("Who calls it, merged across call sites, inverted");
      for (const FunctionAction& action : actions ? *actions : std::vector<FunctionAction>{}) {
        if (ImGui::MenuItem(action.label.c_str())) session->OpenView(action.view, name);
        if (ImGui::IsItemHovered() && !action.tooltip.empty()) ImGui::SetTooltip("%s", action.tooltip.c_str());
      }
      if (ImGui::MenuItem("Merge function")) Push(session, Kind::kMerge, name);
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("Remove it; its self time goes to its callers");
      if (ImGui::MenuItem("Hide frames like this...")) {
        std::snprintf(hide_pattern_, sizeof hide_pattern_, "%s", HidePatternFor(name).c_str());
        hide_error_.clear();
        hide_requested_ = true;
      }
      if (ImGui::MenuItem("Collapse recursion")) Push(session, Kind::kCollapseRecursion, name);
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("Everything between it and a recursive call of it goes");
      if (ImGui::MenuItem("Collapse direct recursion only")) Push(session, Kind::kCollapseDirectRecursion, name);
      if (!target_.executable.empty()) {
        std::string exe = target_.executable.substr(target_.executable.rfind('/') + 1);
        if (ImGui::MenuItem(("Collapse " + exe).c_str())) Push(session, Kind::kCollapseLibrary, exe);
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("Its frames in a row become one frame named after it");
      }
      if (target_.kernel && ImGui::MenuItem("Drop kernel frames")) Push(session, Kind::kDropKernel, "");
    } else if (target_.kind == storage::NodeKind::kProcess || target_.kind == storage::NodeKind::kThread) {
      ImGui::Separator();
      const bool process = target_.kind == storage::NodeKind::kProcess;
      const std::string_view prefix = process ? "pid " : "tid ";
      std::string key = process ? "process.executable.name" : "thread.name";
      std::string value = name;
      if (name.rfind(prefix, 0) == 0) {
        key = process ? "process.pid" : "thread.id";
        value = name.substr(prefix.size());
      } else if (const std::string_view pid = process ? storage::InstancePid(name) : ""; !pid.empty()) {
        // One process instance ("python3 [1234]"): its pid, not every python3.
        key = "process.pid";
        value = std::string(pid);
      }
      if (ImGui::MenuItem(process ? "Filter to this process" : "Filter to this thread")) {
        session->AddFilterValue(key, value);
      }
    } else if (target_.kind == storage::NodeKind::kGroup && session->tree.group_by == storage::GroupBy::kAttribute) {
      ImGui::Separator();
      if (ImGui::MenuItem("Filter to this value")) session->AddFilterValue(session->tree.group_attribute, name);
    } else if (target_.kind == storage::NodeKind::kGroup && session->tree.group_by == storage::GroupBy::kSpan) {
      if (const auto filter = storage::SpanFilterOfGroupLabel(name)) {
        ImGui::Separator();
        if (ImGui::MenuItem(filter->first == storage::attr::kSpanId ? "Filter to this span" : "Filter to this trace")) {
          session->AddFilterValue(filter->first, filter->second);
        }
      }
    }
    ImGui::EndPopup();
  }
  if (hide_requested_) {
    ImGui::OpenPopup("##hide_pattern");
    hide_requested_ = false;
  }
  if (ImGui::BeginPopup("##hide_pattern")) {
    ImGui::TextUnformatted("Hide frames whose name matches (RE2, partial match):");
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 30.f);
    if (ImGui::IsWindowAppearing()) ImGui::SetKeyboardFocusHere();
    const bool enter = ImGui::InputText("##pattern", hide_pattern_, sizeof hide_pattern_,
                                        ImGuiInputTextFlags_EnterReturnsTrue);
    if (!hide_error_.empty()) ImGui::TextColored(ImVec4(0.9f, 0.3f, 0.3f, 1.f), "%s", hide_error_.c_str());
    if (ImGui::Button("Hide") || enter) {
      absl::StatusOr<Transform> t = storage::ParseTransform(std::string("hide=") + hide_pattern_);
      if (t.ok()) {
        session->tree.transforms.push_back(*std::move(t));
        ImGui::CloseCurrentPopup();
      } else {
        hide_error_ = std::string(t.status().message());
      }
    }
    ImGui::SameLine();
    if (ImGui::Button("Cancel")) ImGui::CloseCurrentPopup();
    ImGui::EndPopup();
  }
}

void DrawInvertToggle(SessionState* session) {
  auto& transforms = session->tree.transforms;
  const auto is_invert = [](const Transform& t) { return t.kind == Transform::Kind::kInvert; };
  bool inverted = std::count_if(transforms.begin(), transforms.end(), is_invert) % 2 == 1;
  if (ImGui::Checkbox("Inverted", &inverted)) {
    if (inverted) {
      transforms.push_back({Transform::Kind::kInvert, "", {}});
    } else {
      transforms.erase(std::find_if(transforms.rbegin(), transforms.rend(), is_invert).base() - 1);
    }
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Leaf functions as roots, their callers below them (bottom-up)");
}

void DrawBaselinePicker(SessionState* session, const std::vector<std::string>* other_sources) {
  using Kind = SessionState::Baseline::Kind;
  SessionState::Baseline& b = session->baseline;
  std::string current = "Compare...";
  switch (b.kind) {
    case Kind::kNone: break;
    case Kind::kPreviousPeriod: current = "vs previous period"; break;
    case Kind::kRange: current = "vs kept range " + FormatClock(b.range.from_ns) + "-" + FormatClock(b.range.to_ns); break;
    case Kind::kFilters: current = "vs kept filters"; break;
    case Kind::kSource: current = "vs " + b.source; break;
  }
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 14.f);
  if (ImGui::BeginCombo("##baseline", current.c_str())) {
    if (ImGui::Selectable("No comparison", b.kind == Kind::kNone)) b = {};
    if (ImGui::Selectable("Previous period", b.kind == Kind::kPreviousPeriod)) {
      b = {};
      b.kind = Kind::kPreviousPeriod;
    }
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("The same length of time just before the shown range");
    if (ImGui::Selectable("This range as the baseline", b.kind == Kind::kRange)) {
      b = {};
      b.kind = Kind::kRange;
      b.range = session->QueryRange();
    }
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Keep what is shown now; then select another range to compare");
    if (ImGui::Selectable("These filters as the baseline", b.kind == Kind::kFilters)) {
      b = {};
      b.kind = Kind::kFilters;
      b.filters = session->filters;
    }
    if (ImGui::IsItemHovered()) {
      ImGui::SetTooltip("Keep the current filters (say service.version A); then change them (B) to compare");
    }
    if (other_sources != nullptr) {
      for (const std::string& name : *other_sources) {
        if (ImGui::Selectable(("Source: " + name).c_str(), b.kind == Kind::kSource && b.source == name)) {
          b = {};
          b.kind = Kind::kSource;
          b.source = name;
        }
      }
    }
    ImGui::EndCombo();
  }
  if (b.kind != Kind::kNone) {
    ImGui::SameLine();
    ImGui::Checkbox("Shares", &b.normalized);
    if (ImGui::IsItemHovered()) {
      ImGui::SetTooltip("On: colour by the change in each frame's share of its side's total.\n"
                        "Off: by the change in weight.");
    }
  }
}

void DrawCompareAndTransforms(SessionState* session, const std::vector<std::string>* other_sources) {
  if (session == nullptr) return;
  DrawBaselinePicker(session, other_sources);
  if (!session->tree.transforms.empty()) ImGui::SameLine(0, ImGui::GetFontSize());
  DrawTransformChips(session);
}

void DrawTransformChips(SessionState* session) {
  if (session == nullptr || session->tree.transforms.empty()) return;
  ImGui::TextDisabled("Transforms:");
  size_t remove_from = SIZE_MAX;
  for (size_t i = 0; i < session->tree.transforms.size(); ++i) {
    ImGui::SameLine();
    ImGui::PushID(static_cast<int>(i));
    const std::string label = ShortenLabel(storage::TransformLabel(session->tree.transforms[i]), 48);
    if (ImGui::SmallButton((label + "  x").c_str())) remove_from = i;
    if (ImGui::IsItemHovered()) {
      const bool off_cpu_default =
          session->off_cpu_drop_kernel && session->tree.transforms[i].kind == storage::Transform::Kind::kDropKernel;
      ImGui::SetTooltip("%s%s\nClick to remove it%s", storage::TransformSpec(session->tree.transforms[i]).c_str(),
                        off_cpu_default ? "\nOff-CPU time opens with it: every off-CPU stack ends in the kernel's "
                                          "scheduler, so without kernel frames the innermost frame is what blocked"
                                        : "",
                        i + 1 < session->tree.transforms.size() ? " and the ones after it" : "");
    }
    ImGui::PopID();
  }
  ImGui::SameLine();
  if (ImGui::SmallButton("Clear all")) remove_from = 0;
  if (remove_from != SIZE_MAX) session->tree.transforms.resize(remove_from);
}

}  // namespace kiln::ui
