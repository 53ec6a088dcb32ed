// Spans tab (issue 31): the traces and spans the selection's samples were
// taken in (OTLP links, or span_id / trace_id labels), with each span's
// weight, samples, first and last time and threads; sortable and
// searchable. Clicking a span filters every view to its samples
// (span_id=HEX, a filter chip like any other), its trace id to the
// trace's; the right-click menu opens the trace in the user's trace
// backend (its URL with {trace_id}: --trace-url, or typed in this view and
// kept as a preference).
// Its table is this view's own product (storage::SpansOf over the
// selection's samples, the span filters left out so the list stays).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ui/view.h"

namespace kiln::ui {

class SpansView : public View {
 public:
  std::string_view Id() const override { return "spans"; }
  std::string_view Title() const override { return "Spans"; }
  void Draw(const ViewContext& context) override;
  bool Settled() const override { return settled_; }
  Product OwnProduct() const override;

 private:
  const void* seen_ = nullptr;  // the result order_ is for
  std::vector<uint32_t> order_;  // filtered, sorted rows
  char search_[128] = {};
  char url_[512] = {};  // the trace backend field
  bool editing_url_ = false;
  std::string url_error_;
  std::string searched_;
  bool order_dirty_ = true;
  bool settled_ = false;
};

// The address of a trace in the user's trace backend: `url_template`
// with "{trace_id}" (every occurrence) replaced by the id; "" when the
// template has no such placeholder.
std::string TraceUrl(const std::string& url_template, const std::string& trace_id);

}  // namespace kiln::ui
