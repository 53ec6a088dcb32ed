#include "ui/spans_view.h"

#include <doctest/doctest.h>

namespace kiln::ui {
namespace {

TEST_CASE("--trace-url: the trace id where the template says, every time; no placeholder, no address") {
  CHECK(TraceUrl("http://localhost:16686/trace/{trace_id}", "0af7651916cd43dd8448eb211c80319c") ==
        "http://localhost:16686/trace/0af7651916cd43dd8448eb211c80319c");
  CHECK(TraceUrl("https://grafana/explore?q={trace_id}&t={trace_id}", "ab") == "https://grafana/explore?q=ab&t=ab");
  CHECK(TraceUrl("https://grafana/explore", "ab") == "");
  CHECK(TraceUrl("", "ab") == "");
}

}  // namespace
}  // namespace kiln::ui
