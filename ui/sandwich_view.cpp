#include "ui/sandwich_view.h"

#include <imgui.h>

#include <cstdio>

#include "storage/model/flame_tree.h"
#include "ui/frame_menu.h"
#include "ui/widgets.h"

namespace kiln::ui {

namespace {

constexpr const char* kId = "sandwich";

// Worker thread: the function's callers and callees from the request's
// stacks (transforms applied), as storage::Sandwich.
std::shared_ptr<const void> BuildSandwichOf(const storage::Store&, const AnalysisSnapshot& snapshot,
                                            const std::string& function) {
  if (!snapshot.stacks) return nullptr;
  return std::make_shared<const storage::Sandwich>(storage::BuildSandwich(*snapshot.stacks, function));
}

}  // namespace

std::vector<View::Flag> SandwichView::Flags() const {
  return {{.name = "--sandwich", .help = "Open the Sandwich view's function (exact name)", .key = kId}};
}

std::vector<FunctionAction> SandwichView::FunctionActions() const {
  return {{.view = kId, .label = "Show in Sandwich", .tooltip = "Its callers above it and its callees below, each merged"}};
}

View::Product SandwichView::OwnProduct() const {
  return {.inputs = [](const SessionState& session) { return session.ViewArg(kId); }, .build = &BuildSandwichOf};
}

void SandwichView::Draw(const ViewContext& context) {
  settled_ = false;
  SessionState* session = context.session;
  if (session && session->ViewArg(kId) != function_) {
    std::snprintf(function_, sizeof function_, "%s", session->ViewArg(kId).c_str());
  }
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 30.f);
  if (ImGui::InputTextWithHint("##function", "Function (exact name; or right-click a frame > Show in Sandwich)",
                               function_, sizeof function_, ImGuiInputTextFlags_EnterReturnsTrue) &&
      session) {
    session->view_args[kId] = function_;
  }
  if (session) {
    ImGui::SameLine();
    DrawTransformChips(session);
  }
  if (function_[0] == 0) {
    ImGui::Spacing();
    ImGui::TextDisabled("Pick a function: right-click it in the Flamegraph, Call tree or Top functions.");
    settled_ = true;
    return;
  }
  const AnalysisSnapshot* a = context.analysis;
  const auto sandwich = a ? a->ViewResult<storage::Sandwich>(kId) : nullptr;
  if (!a || a->ViewInputs(kId) != function_ || !sandwich) {
    DrawLoadingOrError(context);
    return;
  }
  if (sandwich->callers.nodes.empty() || sandwich->callers.nodes[0].total == 0) {
    ImGui::TextDisabled("No stack in the selection goes through \"%s\".", function_);
    settled_ = !context.computing;
    return;
  }
  // The tables keep their trees: shared with the result, not copied.
  const std::shared_ptr<const storage::FlameTree> callers(sandwich, &sandwich->callers);
  const std::shared_ptr<const storage::FlameTree> callees(sandwich, &sandwich->callees);
  const storage::SampleType type = a->request.query.sample_type;
  // Callers above (the function at the top of each, its callers below it
  // as an inverted tree reads), callees below; each half scrolls alone.
  const float half = (ImGui::GetContentRegionAvail().y - ImGui::GetTextLineHeightWithSpacing() * 2) / 2;
  ImGui::TextDisabled("Callers of %s (merged across call sites; its own recursion collapsed)", function_);
  callers_.Draw("##callers", callers, type, session, context.function_actions, half);
  ImGui::TextDisabled("Callees of %s (merged across call sites; each sample counted once)", function_);
  callees_.Draw("##callees", callees, type, session, context.function_actions, 0);
  settled_ = !context.computing;
}

}  // namespace kiln::ui
