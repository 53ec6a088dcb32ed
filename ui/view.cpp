#include "ui/view.h"

namespace kiln::ui {

void AddViewProducts(const std::vector<View*>& views, const SessionState& session, AnalysisRequest* request) {
  for (const View* view : views) {
    const View::Product product = view->OwnProduct();
    if (product.inputs == nullptr || product.build == nullptr) continue;
    request->view_products[std::string(view->Id())] = {product.inputs(session), product.build, product.uses_stacks};
  }
}

}  // namespace kiln::ui
