#include "ui/call_tree_view.h"

#include <imgui.h>

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
  table_.Draw("##calltree", context.analysis->tree, TypeOf(context), context.session, context.function_actions);
  settled_ = !context.computing;
}

}  // namespace kiln::ui
