#include "ui/spans_view.h"

#include <imgui.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

#include "storage/model/spans.h"
#include "storage/store.h"

#include "ui/flame_search.h"
#include "ui/format.h"
#include "ui/theme.h"
#include "ui/widgets.h"

extern char** environ;

namespace kiln::ui {
namespace {

constexpr const char* kId = "spans";

struct SpansResult {
  std::vector<storage::SpanRow> rows;
  uint64_t unspanned = 0;
  size_t traces = 0;
};

// The selection's samples per span. The span filters are left out: the
// list stays whole while one of its spans filters the other views.
std::shared_ptr<const void> BuildSpans(const storage::Store& store, const AnalysisSnapshot& snapshot,
                                       const std::string&) {
  storage::Query q = snapshot.request.query;
  q.keep_samples = true;
  std::erase_if(q.filters, [](const storage::AttributeFilter& f) {
    return f.key == storage::attr::kTraceId || f.key == storage::attr::kSpanId;
  });
  auto slice = store.Run(q);
  if (!slice.ok()) return nullptr;
  auto result = std::make_shared<SpansResult>();
  result->rows = storage::SpansOf(**slice, &result->unspanned);
  std::vector<std::string> traces;
  for (const storage::SpanRow& r : result->rows) traces.push_back(r.id.trace);
  std::sort(traces.begin(), traces.end());
  result->traces = static_cast<size_t>(std::unique(traces.begin(), traces.end()) - traces.begin());
  return result;
}

// The session's filter on `key` becomes exactly `value` (a span or a
// trace replaces the one chosen before; the other span key goes).
void FilterTo(SessionState* session, std::string_view key, const std::string& value) {
  std::erase_if(session->filters, [](const storage::AttributeFilter& f) {
    return f.key == storage::attr::kTraceId || f.key == storage::attr::kSpanId;
  });
  session->filters.push_back({std::string(key), {value}});
  session->live = false;  // a chosen span stays chosen as new data arrives
}

// Opens `url` with the desktop's handler, not waiting for it.
void OpenInBrowser(const std::string& url) {
#ifdef __APPLE__
  const char* opener = "open";
#else
  const char* opener = "xdg-open";
#endif
  char* argv[] = {const_cast<char*>(opener), const_cast<char*>(url.c_str()), nullptr};
  pid_t pid = 0;
  if (posix_spawnp(&pid, opener, nullptr, nullptr, argv, environ) == 0) {
    // xdg-open hands the URL over and exits; reaped here so no zombie stays.
    waitpid(pid, nullptr, WNOHANG);
  }
}

enum Column { kTrace, kSpan, kName, kWeight, kSamples, kFirst, kDuration, kThreads, kColumnCount };

}  // namespace

std::string TraceUrl(const std::string& url_template, const std::string& trace_id) {
  static const std::string kPlaceholder = "{trace_id}";
  if (url_template.find(kPlaceholder) == std::string::npos) return "";
  std::string url = url_template;
  for (size_t at = url.find(kPlaceholder); at != std::string::npos; at = url.find(kPlaceholder, at + trace_id.size())) {
    url.replace(at, kPlaceholder.size(), trace_id);
  }
  return url;
}

View::Product SpansView::OwnProduct() const {
  return {.inputs = [](const SessionState&) { return std::string("spans"); },
          .build = &BuildSpans,
          .base = ViewBase::kSlice,
          .only_while_shown = true};
}

void SpansView::Draw(const ViewContext& context) {
  settled_ = false;
  const AnalysisSnapshot* a = context.analysis;
  SessionState* session = context.session;
  const auto result = a ? a->ViewResult<SpansResult>(std::string(Id())) : nullptr;
  if (!result) {
    DrawLoadingOrError(context);
    return;
  }
  const std::vector<storage::SpanRow>& rows = result->rows;
  if (rows.empty()) {
    ImGui::TextWrapped(
        "No sample in this range names a span. Samples get one from their OTLP link (trace and span ids; the "
        "OpenTelemetry profiler fills them from a thread's trace context) or from labels named trace_id and "
        "span_id (pprof labels, as Go's, Java's and Python's SDKs write them).");
    settled_ = !context.computing;
    return;
  }
  if (result.get() != seen_) {
    seen_ = result.get();
    order_dirty_ = true;
  }
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 20);
  ImGui::InputTextWithHint("##span_search", "Search trace, span, name or thread", search_, sizeof search_);
  if (searched_ != search_) {
    searched_ = search_;
    order_dirty_ = true;
  }
  ImGui::SameLine();
  ImGui::TextDisabled("%zu spans in %zu traces; %s samples in no span. Click a span to filter every view to it, "
                      "its trace id to the whole trace.",
                      rows.size(), result->traces, FormatCount(result->unspanned).c_str());
  std::string shown_span, shown_trace;
  if (session) {
    for (const storage::AttributeFilter& f : session->filters) {
      if (f.key == storage::attr::kSpanId && f.values.size() == 1) shown_span = f.values[0];
      if (f.key == storage::attr::kTraceId && f.values.size() == 1) shown_trace = f.values[0];
    }
  }
  // The trace backend: where the right-click menu's Open trace goes.
  const std::string url_template = context.trace_url ? *context.trace_url : std::string();
  if (!editing_url_) std::snprintf(url_, sizeof url_, "%s", url_template.c_str());
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Trace backend");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 30);
  ImGui::InputTextWithHint("##trace_url", "http://localhost:16686/trace/{trace_id}", url_, sizeof url_);
  editing_url_ = ImGui::IsItemActive();
  if (ImGui::IsItemDeactivatedAfterEdit()) {
    const std::string typed = url_;
    if (typed.empty() || !TraceUrl(typed, "x").empty()) {
      if (context.requests) context.requests->trace_url = typed;
      url_error_.clear();
    } else {
      url_error_ = "The URL needs {trace_id} where the trace id goes";
    }
  }
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip("Where a span's trace opens (right-click a span > Open trace): your Jaeger, Tempo or other "
                      "trace backend's trace page, {trace_id} where the id goes. Kept as a preference.");
  }
  if (!url_error_.empty()) {
    ImGui::SameLine();
    ImGui::TextColored(CurrentPalette().error_text, "%s", url_error_.c_str());
  }

  const ImGuiTableFlags flags = ImGuiTableFlags_Sortable | ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                                ImGuiTableFlags_Resizable | ImGuiTableFlags_ScrollY | ImGuiTableFlags_Hideable |
                                ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable("##spans", kColumnCount, flags)) return;
  const float em = ImGui::GetFontSize();
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("Trace", 0, em * 8);
  ImGui::TableSetupColumn("Span", 0, em * 8);
  ImGui::TableSetupColumn("Name", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableSetupColumn("Weight", ImGuiTableColumnFlags_DefaultSort | ImGuiTableColumnFlags_PreferSortDescending,
                          em * 10);
  ImGui::TableSetupColumn("Samples", ImGuiTableColumnFlags_PreferSortDescending, em * 5);
  ImGui::TableSetupColumn("First", 0, em * 7);
  ImGui::TableSetupColumn("Duration", ImGuiTableColumnFlags_PreferSortDescending, em * 6);
  ImGui::TableSetupColumn("Threads", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableHeadersRow();
  ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs();
  if (order_dirty_ || (specs && specs->SpecsDirty)) {
    order_.clear();
    for (uint32_t i = 0; i < rows.size(); ++i) {
      const storage::SpanRow& r = rows[i];
      bool match = ContainsIgnoringCase(r.id.trace, searched_) || ContainsIgnoringCase(r.id.span, searched_) ||
                   ContainsIgnoringCase(r.name, searched_);
      for (const std::string& t : r.threads) match = match || ContainsIgnoringCase(t, searched_);
      if (match) order_.push_back(i);
    }
    const int column = specs && specs->SpecsCount > 0 ? static_cast<int>(specs->Specs[0].ColumnIndex) : static_cast<int>(kWeight);
    const bool ascending = specs && specs->SpecsCount > 0 && specs->Specs[0].SortDirection == ImGuiSortDirection_Ascending;
    std::stable_sort(order_.begin(), order_.end(), [&](uint32_t x, uint32_t y) {
      const storage::SpanRow &p = rows[ascending ? x : y], &q = rows[ascending ? y : x];
      switch (column) {
        case kTrace: return p.id.trace < q.id.trace;
        case kSpan: return p.id.span < q.id.span;
        case kName: return p.name < q.name;
        case kSamples: return p.samples < q.samples;
        case kFirst: return p.first_ns < q.first_ns;
        case kDuration: return p.last_ns - p.first_ns < q.last_ns - q.first_ns;
        case kThreads: return p.threads.size() < q.threads.size();
        default: return p.weight < q.weight;
      }
    });
    if (specs) specs->SpecsDirty = false;
    order_dirty_ = false;
  }
  int64_t total = 0, heaviest = 1;
  for (const storage::SpanRow& r : rows) {
    total += r.weight;
    heaviest = std::max(heaviest, r.weight);
  }
  const storage::SampleType& type = a->request.query.sample_type;
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(order_.size()));
  while (clipper.Step()) {
    for (int k = clipper.DisplayStart; k < clipper.DisplayEnd; ++k) {
      const storage::SpanRow& r = rows[order_[k]];
      ImGui::PushID(k);
      ImGui::TableNextRow();
      ImGui::TableSetColumnIndex(kTrace);
      if (context.mono_font) ImGui::PushFont(context.mono_font);
      const std::string trace_short = r.id.trace.substr(0, 8);
      if (ImGui::Selectable(trace_short.empty() ? "-" : trace_short.c_str(), !shown_trace.empty() && shown_trace == r.id.trace) &&
          session && !r.id.trace.empty()) {
        FilterTo(session, storage::attr::kTraceId, r.id.trace);
      }
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("trace %s\nClick: filter every view to this trace", r.id.trace.c_str());
      ImGui::TableSetColumnIndex(kSpan);
      const std::string span_short = r.id.span.substr(0, 8);
      const bool selected = !shown_span.empty() && shown_span == r.id.span;
      if (ImGui::Selectable(span_short.empty() ? "-" : span_short.c_str(), selected,
                            ImGuiSelectableFlags_SpanAllColumns | ImGuiSelectableFlags_AllowItemOverlap) &&
          session && !r.id.span.empty()) {
        FilterTo(session, storage::attr::kSpanId, r.id.span);
      }
      if (context.mono_font) ImGui::PopFont();
      if (ImGui::BeginPopupContextItem("##span_menu")) {
        if (ImGui::MenuItem("Filter to this span", nullptr, false, !r.id.span.empty()) && session) {
          FilterTo(session, storage::attr::kSpanId, r.id.span);
        }
        if (ImGui::MenuItem("Filter to this trace", nullptr, false, !r.id.trace.empty()) && session) {
          FilterTo(session, storage::attr::kTraceId, r.id.trace);
        }
        if (ImGui::MenuItem("Copy trace id")) ImGui::SetClipboardText(r.id.trace.c_str());
        if (ImGui::MenuItem("Copy span id")) ImGui::SetClipboardText(r.id.span.c_str());
        const std::string url = TraceUrl(url_template, r.id.trace);
        if (ImGui::MenuItem("Open trace", nullptr, false, !url.empty() && !r.id.trace.empty())) OpenInBrowser(url);
        if (url.empty() && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) {
          ImGui::SetTooltip("Type your trace backend's URL above (with {trace_id}), or start kiln with --trace-url");
        }
        ImGui::EndPopup();
      }
      if (ImGui::IsItemHovered()) {
        ImGui::SetTooltip("span %s of trace %s\nClick: filter every view to this span; right-click for more",
                          r.id.span.c_str(), r.id.trace.c_str());
      }
      ImGui::TableSetColumnIndex(kName);
      ImGui::TextUnformatted(r.name.c_str());
      ImGui::TableSetColumnIndex(kWeight);
      // The bar against the heaviest span (thousands of spans each hold a
      // sliver of the whole); the text says the share of every span's weight.
      const double share = total > 0 ? static_cast<double>(r.weight) / total : 0;
      InlineBar(static_cast<double>(r.weight) / heaviest, CurrentPalette().total_bar,
                FormatValue(type, r.weight) + "  " + FormatPercent(share));
      ImGui::TableSetColumnIndex(kSamples);
      ImGui::TextUnformatted(FormatCount(r.samples).c_str());
      ImGui::TableSetColumnIndex(kFirst);
      ImGui::TextUnformatted(FormatClock(r.first_ns, true).c_str());
      ImGui::TableSetColumnIndex(kDuration);
      ImGui::TextUnformatted(FormatDuration(r.last_ns - r.first_ns).c_str());
      ImGui::TableSetColumnIndex(kThreads);
      std::string threads;
      for (const std::string& t : r.threads) threads += (threads.empty() ? "" : ", ") + t;
      FittedCellText(threads, 0);
      ImGui::PopID();
    }
  }
  ImGui::EndTable();
  settled_ = !context.computing;
}

}  // namespace kiln::ui
