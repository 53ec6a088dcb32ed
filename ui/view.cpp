#include "ui/view.h"

namespace kiln::ui {

void AddViewProducts(const std::vector<View*>& views, const SessionState& session, std::string_view shown,
                     AnalysisRequest* request) {
  for (const View* view : views) {
    const View::Product product = view->OwnProduct();
    if (product.inputs == nullptr || product.build == nullptr) continue;
    const bool asked = !product.only_while_shown || view->Id() == shown;
    request->view_products[std::string(view->Id())] = {asked ? product.inputs(session) : std::string(), product.build,
                                                        product.base};
  }
}

}  // namespace kiln::ui
