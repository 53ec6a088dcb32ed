#include "ui/call_tree_view.h"

#include <imgui.h>

#include <cstdio>

#include "ui/widgets.h"

namespace kiln::ui {

namespace {

storage::SampleType TypeOf(const ViewContext& context) {
  return context.analysis ? context.analysis->request.query.sample_type : storage::SampleType{};
}

}  // namespace

void CallTreeView::Draw(const ViewContext& context) {
  settled_ = false;
  if (context.session) {
    DrawInvertToggle(context.session);
    ImGui::SameLine();
    ImGui::TextDisabled("Arrows move, Right/Left open and close, right-click for more");
    DrawTransformChips(context.session);
  }
  if (!context.analysis || !context.analysis->tree) {
    DrawLoadingOrError(context);
    return;
  }
  table_.Draw("##calltree", context.analysis->tree, TypeOf(context), context.session);
  settled_ = !context.computing;
}

void SandwichView::Draw(const ViewContext& context) {
  settled_ = false;
  SessionState* session = context.session;
  if (session && session->sandwich_function != function_) {
    std::snprintf(function_, sizeof function_, "%s", session->sandwich_function.c_str());
  }
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 30.f);
  if (ImGui::InputTextWithHint("##function", "Function (exact name; or right-click a frame > Show in Sandwich)",
                               function_, sizeof function_, ImGuiInputTextFlags_EnterReturnsTrue) &&
      session) {
    session->sandwich_function = function_;
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
  if (!a || a->request.sandwich_function != function_ || !a->callers_tree || !a->callees_tree) {
    DrawLoadingOrError(context);
    return;
  }
  if (a->callers_tree->nodes[0].total == 0) {
    ImGui::TextDisabled("No stack in the selection goes through \"%s\".", function_);
    settled_ = !context.computing;
    return;
  }
  // Callers above (the function at the top of each, its callers below it
  // as an inverted tree reads), callees below; each half scrolls alone.
  const float half = (ImGui::GetContentRegionAvail().y - ImGui::GetTextLineHeightWithSpacing() * 2) / 2;
  ImGui::TextDisabled("Callers of %s (merged across call sites; its own recursion collapsed)", function_);
  callers_.Draw("##callers", a->callers_tree, TypeOf(context), session, half);
  ImGui::TextDisabled("Callees of %s (merged across call sites; each sample counted once)", function_);
  callees_.Draw("##callees", a->callees_tree, TypeOf(context), session, 0);
  settled_ = !context.computing;
}

}  // namespace kiln::ui
