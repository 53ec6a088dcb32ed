#include "app/mcp_tools.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "ingest/capture/capture.h"
#include "storage/model/spans.h"
#include "storage/model/flame_tree.h"
#include "storage/model/folded.h"
#include "storage/model/processes.h"
#include "storage/model/sample_type.h"
#include "storage/model/source_lines.h"
#include "storage/model/time_text.h"
#include "storage/model/top_functions.h"

namespace kiln::app {

namespace {

using json = nlohmann::json;
using storage::FormatValue;

constexpr int64_t kOpen = std::numeric_limits<int64_t>::min();
constexpr int64_t kOpenEnd = std::numeric_limits<int64_t>::max();
// Hard caps on what one answer lists: an assistant's context is small.
constexpr int64_t kMaxRows = 500;
constexpr int64_t kMaxFoldedLines = 5000;

struct Answer {
  std::string text;
  json data = json::object();
};

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string Percent(double share) { return absl::StrFormat("%.1f%%", share * 100.0); }

double Share(int64_t part, int64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

// --- Arguments ------------------------------------------------------------

// A filter's value: one string, or several (any of them matches).
json FilterValueSchema() {
  json one = {{"type", "string"}};
  json several = {{"type", "array"}, {"items", one}};
  return {{"anyOf", json::array({one, several})}};
}

// The schema pieces every tool that reads samples takes.
json SelectionProperties() {
  return {
      {"sample_type",
       {{"type", "string"},
        {"description",
         "What to weigh: a type name (cpu, samples, off_cpu, alloc_space) or type/unit; see sample_types. "
         "Default: on-CPU samples when stored, else the first type (a capture's own default)."}}},
      {"last",
       {{"type", "string"},
        {"description",
         "Only the most recent span, like 15m, 2h or 1d (back from now for a store, from the end of the data "
         "for a capture). Not with from/to."}}},
      {"from",
       {{"type", "string"},
        {"description", "Start, inclusive: RFC 3339 (2026-11-29T07:00:00Z), Unix ns, or now-15m. Default: open."}}},
      {"to", {{"type", "string"}, {"description", "End, exclusive, in the same forms. Default: open."}}},
      {"filters",
       {{"type", "object"},
        {"description",
         "Attribute filters, KEY: VALUE or KEY: [VALUES] (values of one key OR, keys AND), e.g. "
         "{\"process.executable.name\": \"python3\"}. See attribute_values for keys and values. "
         "trace_id and span_id (lowercase hex) select the samples taken in those traces or spans."},
        {"additionalProperties", FilterValueSchema()}}},
  };
}

json Schema(json properties, std::vector<std::string> required = {}) {
  json schema = {{"type", "object"}, {"properties", std::move(properties)}, {"additionalProperties", false}};
  if (!required.empty()) schema["required"] = required;
  return schema;
}

json LimitProperty(int64_t default_value, int64_t max, const std::string& what) {
  return {{"type", "integer"},
          {"minimum", 1},
          {"maximum", max},
          {"description", absl::StrCat("How many ", what, " to list (default ", default_value, ", at most ", max, ")")}};
}

absl::Status CheckKnown(const json& args, const json& schema) {
  if (!args.is_object()) return absl::InvalidArgumentError("arguments must be an object");
  const json& properties = schema["properties"];
  for (const auto& [key, value] : args.items()) {
    if (!properties.contains(key)) {
      std::vector<std::string> known;
      for (const auto& [k, v] : properties.items()) known.push_back(k);
      return absl::InvalidArgumentError(
          absl::StrCat("unknown argument \"", key, "\" (this tool takes: ", absl::StrJoin(known, ", "), ")"));
    }
  }
  if (schema.contains("required")) {
    for (const json& key : schema["required"]) {
      if (!args.contains(key.get<std::string>())) {
        return absl::InvalidArgumentError(absl::StrCat("missing argument \"", key.get<std::string>(), "\""));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> StringArg(const json& args, const std::string& key, std::string fallback = "") {
  if (!args.contains(key) || args[key].is_null()) return fallback;
  if (!args[key].is_string()) return absl::InvalidArgumentError(absl::StrCat("\"", key, "\" must be a string"));
  return args[key].get<std::string>();
}

absl::StatusOr<int64_t> IntArg(const json& args, const std::string& key, int64_t fallback, int64_t max) {
  if (!args.contains(key) || args[key].is_null()) return fallback;
  const json& v = args[key];
  if (!v.is_number_integer() && !(v.is_number_float() && std::floor(v.get<double>()) == v.get<double>())) {
    return absl::InvalidArgumentError(absl::StrCat("\"", key, "\" must be an integer"));
  }
  const int64_t n = v.is_number_integer() ? v.get<int64_t>() : static_cast<int64_t>(v.get<double>());
  if (n < 1 || n > max) return absl::InvalidArgumentError(absl::StrCat("\"", key, "\" must be 1..", max));
  return n;
}

absl::StatusOr<bool> BoolArg(const json& args, const std::string& key, bool fallback) {
  if (!args.contains(key) || args[key].is_null()) return fallback;
  if (!args[key].is_boolean()) return absl::InvalidArgumentError(absl::StrCat("\"", key, "\" must be true or false"));
  return args[key].get<bool>();
}

// What samples a call reads, and how to say so.
struct Selection {
  storage::Query query;
  std::string filters_text;  // "" or "process.pid=12"
};

absl::StatusOr<Selection> Select(const json& args, storage::Store& store,
                                 const std::optional<storage::SampleType>& capture_default, int64_t now_ns,
                                 const std::vector<storage::AttributeFilter>& extra_filters = {}) {
  Selection sel;
  // The sample type, as `kiln export` picks it.
  absl::StatusOr<std::string> type = StringArg(args, "sample_type");
  if (!type.ok()) return type.status();
  const std::vector<storage::SampleType> stored = store.Stats().Types();
  if (type->empty()) {
    sel.query.sample_type = capture_default ? *capture_default : storage::OnCpuOrFirst(stored);
  } else if (std::optional<storage::SampleType> t = storage::FindSampleType(*type, stored)) {
    sel.query.sample_type = *t;
  } else {
    return absl::NotFoundError(absl::StrCat("no sample type \"", *type, "\" here (there are: ",
                                            storage::SampleTypeList(stored), ")"));
  }
  // The range.
  absl::StatusOr<std::string> last = StringArg(args, "last");
  absl::StatusOr<std::string> from = StringArg(args, "from");
  absl::StatusOr<std::string> to = StringArg(args, "to");
  for (const auto* s : {&last, &from, &to}) {
    if (!s->ok()) return s->status();
  }
  if (!last->empty()) {
    if (!from->empty() || !to->empty()) return absl::InvalidArgumentError("give \"last\" or \"from\"/\"to\", not both");
    absl::StatusOr<int64_t> d = storage::ParseDurationNs(*last);
    if (!d.ok()) return d.status();
    sel.query.from_ns = now_ns - *d;
  }
  for (const auto& [text, target] : {std::pair{&*from, &sel.query.from_ns}, {&*to, &sel.query.to_ns}}) {
    if (text->empty()) continue;
    absl::StatusOr<int64_t> t = storage::ParseTimeRelative(*text, now_ns);
    if (!t.ok()) return t.status();
    *target = *t;
  }
  if (sel.query.from_ns >= sel.query.to_ns) return absl::InvalidArgumentError("\"from\" must come before \"to\"");
  // Filters.
  if (args.contains("filters") && !args["filters"].is_null()) {
    const json& f = args["filters"];
    if (!f.is_object()) return absl::InvalidArgumentError("\"filters\" must be an object of KEY: VALUE or KEY: [VALUES]");
    for (const auto& [key, value] : f.items()) {
      storage::AttributeFilter filter{key, {}};
      if (value.is_string()) {
        filter.values.push_back(value.get<std::string>());
      } else if (value.is_array() && !value.empty() &&
                 std::all_of(value.begin(), value.end(), [](const json& v) { return v.is_string(); })) {
        for (const json& v : value) filter.values.push_back(v.get<std::string>());
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("filter \"", key, "\" must be a string or a non-empty list of strings"));
      }
      for (const std::string& v : filter.values) {
        if (absl::Status s = storage::CheckSpanFilterValue(key, v); !s.ok()) {
          return absl::InvalidArgumentError(absl::StrCat("filter ", s.message()));
        }
      }
      sel.query.filters.push_back(std::move(filter));
    }
  }
  sel.query.filters.insert(sel.query.filters.end(), extra_filters.begin(), extra_filters.end());
  std::vector<std::string> parts;
  for (const storage::AttributeFilter& f : sel.query.filters) {
    parts.push_back(absl::StrCat(f.key, "=", absl::StrJoin(f.values, "|")));
  }
  sel.filters_text = absl::StrJoin(parts, ", ");
  return sel;
}

std::string RangeText(int64_t from_ns, int64_t to_ns) {
  if (from_ns == kOpen && to_ns == kOpenEnd) return "all stored time";
  return absl::StrCat(from_ns == kOpen ? "the start" : storage::FormatTime(from_ns), " to ",
                      to_ns == kOpenEnd ? "the end" : storage::FormatTime(to_ns));
}

// The facts every answer over samples starts with: what, when, how much.
json SliceFacts(const storage::ProfileSlice& slice, const Selection& sel) {
  const storage::SampleType& t = sel.query.sample_type;
  json facts = {{"sample_type", storage::SampleTypeName(t)},
                {"unit", t.unit},
                {"total", slice.total_weight},
                {"total_text", FormatValue(t, slice.total_weight)},
                {"samples", slice.total_events},
                {"from", sel.query.from_ns == kOpen ? json(nullptr) : json(storage::FormatTime(sel.query.from_ns))},
                {"to", sel.query.to_ns == kOpenEnd ? json(nullptr) : json(storage::FormatTime(sel.query.to_ns))}};
  if (slice.total_events > 0) {
    facts["first_sample"] = storage::FormatTime(slice.first_sample_ns);
    facts["last_sample"] = storage::FormatTime(slice.last_sample_ns);
  }
  if (!sel.filters_text.empty()) facts["filters"] = sel.filters_text;
  return facts;
}

std::string SliceHeader(const storage::ProfileSlice& slice, const Selection& sel, int64_t now_ns,
                        storage::Store& store) {
  const storage::SampleType& t = sel.query.sample_type;
  std::string text = absl::StrCat(storage::SampleTypeName(t), " (", storage::SampleTypeLabel(t), ", unit ", t.unit,
                                  ") over ", RangeText(sel.query.from_ns, sel.query.to_ns));
  if (!sel.filters_text.empty()) absl::StrAppend(&text, ", filters ", sel.filters_text);
  absl::StrAppend(&text, ": ", FormatValue(t, slice.total_weight), " in ", slice.total_events, " samples");
  if (slice.total_events > 0) {
    absl::StrAppend(&text, " (", storage::FormatTime(slice.first_sample_ns), " .. ",
                    storage::FormatTime(slice.last_sample_ns), ")");
  }
  absl::StrAppend(&text, "\n");
  if (slice.total_events == 0) {
    // Say why nothing matched: a range past the data is the usual reason.
    const storage::StoreStats st = store.Stats();
    if (st.samples == 0) {
      absl::StrAppend(&text, "The store holds no samples.\n");
    } else {
      absl::StrAppend(&text, "Nothing matched. The stored samples span ", storage::FormatTime(st.first_sample_ns),
                      " .. ", storage::FormatTime(st.last_sample_ns), " (the last one ",
                      storage::FormatDuration(std::max<int64_t>(0, now_ns - st.last_sample_ns)), " before now).\n");
    }
  }
  return text;
}

std::string TruncationText(size_t shown, size_t of, const std::string& what, const std::string& how) {
  if (shown >= of) return "";
  return absl::StrCat("TRUNCATED: showing ", shown, " of ", of, " ", what, "; ", how, ".\n");
}

// The function a caller named: exactly, else the one function containing
// the text (case-insensitive); several or none is an error listing some.
absl::StatusOr<std::string> ResolveFunction(const storage::Stacks& stacks, const std::string& wanted) {
  std::vector<std::string> matches;
  const storage::FunctionTable& table = *stacks.functions;
  for (uint32_t i = 0; i < table.size(); ++i) {
    if (table[i].name == wanted) return wanted;
  }
  const std::string lower = absl::AsciiStrToLower(wanted);
  for (uint32_t i = 0; i < table.size(); ++i) {
    if (absl::StrContains(absl::AsciiStrToLower(table[i].name), lower) &&
        std::find(matches.begin(), matches.end(), table[i].name) == matches.end()) {
      matches.push_back(table[i].name);
    }
  }
  if (matches.size() == 1) return matches[0];
  if (matches.empty()) {
    return absl::NotFoundError(absl::StrCat("no function named or containing \"", wanted,
                                            "\" in the selected samples (top_functions lists them)"));
  }
  std::sort(matches.begin(), matches.end());
  const size_t n = matches.size();
  if (matches.size() > 10) matches.resize(10);
  return absl::InvalidArgumentError(absl::StrCat("\"", wanted, "\" matches ", n, " functions; name one exactly: ",
                                                 absl::StrJoin(matches, " | "), n > 10 ? " | ..." : ""));
}

// A path of frames cut to `max_frames`: the outermost two, a marker, the
// innermost rest (where the time is).
std::vector<std::string> ShortenPath(std::vector<std::string> frames, size_t max_frames, size_t* omitted) {
  *omitted = 0;
  if (frames.size() <= max_frames || max_frames < 4) return frames;
  const size_t keep_tail = max_frames - 3;
  *omitted = frames.size() - 2 - keep_tail;
  std::vector<std::string> out(frames.begin(), frames.begin() + 2);
  out.push_back(absl::StrCat("... ", *omitted, " frames ..."));
  out.insert(out.end(), frames.end() - static_cast<ptrdiff_t>(keep_tail), frames.end());
  return out;
}

struct WeightedPath {
  int64_t weight = 0;
  std::vector<std::string> frames;
};

// The paths to the tree's leaves (nodes with self weight), heaviest first.
std::vector<WeightedPath> HeaviestPaths(const storage::FlameTree& tree) {
  std::vector<WeightedPath> paths;
  storage::ForEachPath(tree, {}, [&](uint32_t node, const std::string& path) {
    if (tree.nodes[node].self > 0) paths.push_back({tree.nodes[node].self, absl::StrSplit(path, ';')});
  });
  std::stable_sort(paths.begin(), paths.end(),
                   [](const WeightedPath& a, const WeightedPath& b) { return a.weight > b.weight; });
  return paths;
}

std::string FunctionRowText(const storage::SampleType& t, const storage::TopFunctionRow& r, int64_t total) {
  std::string line = absl::StrFormat("%6s self %6s total  %s", Percent(Share(r.self, total)),
                                     Percent(Share(r.total, total)), r.function);
  absl::StrAppend(&line, "  (", FormatValue(t, r.self), " self, ", FormatValue(t, r.total), " total");
  // The executable's file name (the full path is in the structured rows).
  if (!r.executable.empty()) absl::StrAppend(&line, "; ", r.executable.substr(r.executable.rfind('/') + 1));
  if (!r.file.empty()) absl::StrAppend(&line, "; ", r.file);
  absl::StrAppend(&line, ")\n");
  return line;
}

}  // namespace

// --- The source -----------------------------------------------------------

absl::StatusOr<std::unique_ptr<McpTools>> McpTools::Open(const std::string& data_dir, const std::string& input) {
  std::unique_ptr<McpTools> tools(new McpTools());
  tools->clock_ = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  if (!input.empty()) {
    tools->main_capture_ = input;
    absl::StatusOr<Source> s = tools->Capture(input);
    if (!s.ok()) return s.status();
  } else {
    tools->data_dir_ = data_dir;
    absl::StatusOr<Source> s = tools->Main();
    if (!s.ok()) return s.status();
  }
  return tools;
}

absl::StatusOr<McpTools::Source> McpTools::Main() {
  if (!main_capture_.empty()) return Capture(main_capture_);
  // A read-only store sees what was written when it opened: open it again
  // when that is more than a second ago (a live kiln keeps writing).
  const int64_t now = SteadyNowNs();
  if (store_ == nullptr || now - store_opened_ns_ > 1'000'000'000) {
    store_.reset();
    auto store = storage::Store::Open(data_dir_, storage::Store::Mode::kReadOnly);
    if (!store.ok()) return store.status();
    store_ = *std::move(store);
    store_opened_ns_ = now;
  }
  return Source{store_.get(), data_dir_, false, clock_(), std::nullopt};
}

absl::StatusOr<McpTools::Source> McpTools::Capture(const std::string& path) {
  auto it = captures_.find(path);
  if (it == captures_.end()) {
    absl::StatusOr<capture::ImportedCapture> imported = capture::ImportFile(path);
    if (!imported.ok()) return imported.status();
    auto store = capture::TemporaryStore::Create();
    if (!store.ok()) return store.status();
    if (absl::Status s = (*store)->store().Write(imported->batch); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat(path, ": ", s.message()));
    }
    it = captures_.emplace(path, CaptureStore{*std::move(store), imported->default_sample_type}).first;
  }
  storage::Store& store = it->second.store->store();
  // A capture's "now" is the end of its data: "last 15m" of a capture
  // means its last 15 minutes, whenever it was recorded.
  const int64_t end = store.Stats().last_sample_ns + 1;
  return Source{&store, path, true, end, it->second.default_type};
}

// --- The tools ------------------------------------------------------------

namespace {

struct Tool {
  std::string name;
  std::string description;
  json schema;
};

std::vector<Tool> BuildTools();

// Built once: Call and Has look tools up by name on every request.
const std::vector<Tool>& Tools() {
  static const std::vector<Tool> tools = BuildTools();
  return tools;
}

std::vector<Tool> BuildTools() {
  auto with = [](json extra) {
    json p = SelectionProperties();
    p.update(extra);
    return p;
  };
  json side = Schema({{"input", {{"type", "string"}, {"description", "A capture file for this side instead of the store"}}},
                      {"last", SelectionProperties()["last"]},
                      {"from", SelectionProperties()["from"]},
                      {"to", SelectionProperties()["to"]},
                      {"filters", SelectionProperties()["filters"]}});
  return {
      {"sample_types",
       "What the data holds: each sample type (what a weight measures, its unit), how many samples of it, "
       "which one the other tools use by default, and the time span. Ask this first.",
       Schema(json::object())},
      {"sources",
       "Where the samples come from: hosts, senders (agents' addresses), services and the heaviest processes "
       "(name and pid) of the default sample type.",
       Schema({{"limit", LimitProperty(20, kMaxRows, "processes")}})},
      {"attribute_values",
       "The attribute keys samples carry (no key), or the values of one key: what filters can select.",
       Schema({{"key", {{"type", "string"}, {"description", "An attribute key, e.g. process.executable.name"}}},
               {"limit", LimitProperty(50, kMaxRows, "values")}})},
      {"top_functions",
       "The hottest functions: self weight (time spent in the function itself) and total weight (in it or "
       "what it calls), in the sample type's unit and as a share of the selection. With no arguments: the "
       "default sample type over all stored time, hottest self first.",
       Schema(with({{"limit", LimitProperty(20, kMaxRows, "functions")},
                    {"sort", {{"type", "string"}, {"enum", {"self", "total"}}, {"description", "Order by self (default) or total"}}},
                    {"match", {{"type", "string"}, {"description", "Only functions whose name contains this (case-insensitive)"}}}}))},
      {"hot_paths",
       "How a function is reached and where its time goes: the heaviest call paths from the outermost "
       "frame into the function (callers) and from it to where the time is spent (callees), long paths "
       "shortened in the middle.",
       Schema(with({{"function", {{"type", "string"}, {"description", "The function: its exact name, or text only one function's name contains"}}},
                    {"limit", LimitProperty(10, 100, "paths per side")},
                    {"max_frames", {{"type", "integer"}, {"minimum", 4}, {"maximum", 200}, {"description", "Longest path shown before its middle is cut (default 12)"}}}}),
              {"function"})},
      {"diff",
       "What changed between two selections (two time ranges of the store, or two capture files): the "
       "functions whose share of the total grew and shrank most, each with a two-proportion z and whether the "
       "change is more than sampling noise (|z| >= 3.29), as Kiln's diff flame graph marks it.",
       Schema({{"base", side},
               {"target", side},
               {"sample_type", SelectionProperties()["sample_type"]},
               {"filters", SelectionProperties()["filters"]},
               {"limit", LimitProperty(10, kMaxRows, "functions per direction")},
               {"significant_only", {{"type", "boolean"}, {"description", "Only changes beyond sampling noise (default false)"}}}},
              {"base", "target"})},
      {"source_lines",
       "Where in its source a function spends its weight: per-line self and total weight of its hottest "
       "lines, with the line's text when the source file is readable here.",
       Schema(with({{"function", {{"type", "string"}, {"description", "The function: its exact name, or text only one function's name contains"}}},
                    {"limit", LimitProperty(20, kMaxRows, "lines")}}),
              {"function"})},
      {"flamegraph",
       "The selection as folded stacks (\"outer;...;leaf weight\", one line per distinct stack), heaviest "
       "lines first and capped: the whole shape in text.",
       Schema(with({{"group_by", {{"type", "string"}, {"description", std::string(storage::kGroupByChoices) + "; default none. span: the trace span each sample was taken in"}}},
                    {"limit", LimitProperty(200, kMaxFoldedLines, "lines")}}))},
  };
}

}  // namespace

json McpTools::List() const {
  json tools = json::array();
  for (const Tool& t : Tools()) {
    tools.push_back({{"name", t.name},
                     {"description", t.description},
                     {"inputSchema", t.schema},
                     {"annotations", {{"readOnlyHint", true}, {"openWorldHint", false}}}});
  }
  return tools;
}

bool McpTools::Has(const std::string& name) const {
  for (const Tool& t : Tools()) {
    if (t.name == name) return true;
  }
  return false;
}

namespace {

using Context = McpTools::Source;

absl::StatusOr<Answer> SampleTypes(const Context& c) {
  const storage::StoreStats st = c.store->Stats();
  const std::vector<storage::SampleType> types = st.Types();
  const storage::SampleType def = c.default_type ? *c.default_type : storage::OnCpuOrFirst(types);
  Answer a;
  a.text = absl::StrCat(c.capture ? "Capture " : "Store ", c.name, ": ", st.samples, " samples");
  if (st.samples > 0) {
    absl::StrAppend(&a.text, " from ", storage::FormatTime(st.first_sample_ns), " to ",
                    storage::FormatTime(st.last_sample_ns));
  }
  absl::StrAppend(&a.text, "\n");
  json rows = json::array();
  for (const storage::SampleTypeCount& t : st.sample_types) {
    const bool is_default = t.info.type == def;
    absl::StrAppend(&a.text, storage::SampleTypeName(t.info.type), is_default ? " (default)" : "", ": ",
                    storage::SampleTypeLabel(t.info.type), ", unit ", t.info.type.unit, ", ", t.samples, " samples\n");
    rows.push_back({{"name", storage::SampleTypeName(t.info.type)},
                    {"type", t.info.type.type},
                    {"unit", t.info.type.unit},
                    {"label", storage::SampleTypeLabel(t.info.type)},
                    {"samples", t.samples},
                    {"default", is_default}});
  }
  a.data = {{"source", c.name},
            {"capture", c.capture},
            {"samples", st.samples},
            {"sample_types", rows},
            {"default_sample_type", storage::SampleTypeName(def)}};
  if (st.samples > 0) {
    a.data["first_sample"] = storage::FormatTime(st.first_sample_ns);
    a.data["last_sample"] = storage::FormatTime(st.last_sample_ns);
  }
  return a;
}

absl::StatusOr<Answer> Sources(const Context& c, const json& args) {
  absl::StatusOr<int64_t> limit = IntArg(args, "limit", 20, kMaxRows);
  if (!limit.ok()) return limit.status();
  Answer a;
  for (const std::string& key : {std::string(storage::attr::kHostName), std::string(storage::attr::kKilnSender),
                                std::string(storage::attr::kServiceName)}) {
    const std::vector<std::string> values = c.store->AttributeValues(key, kMaxRows + 1);
    json list = json::array();
    for (size_t i = 0; i < values.size() && i < kMaxRows; ++i) list.push_back(values[i]);
    a.data[key] = list;
    if (!values.empty()) {
      absl::StrAppend(&a.text, key, ": ", absl::StrJoin(list.begin(), list.end(), ", ",
                                                      [](std::string* out, const json& v) { out->append(v.get<std::string>()); }),
                      values.size() > kMaxRows ? " (TRUNCATED)" : "", "\n");
    }
  }
  absl::StatusOr<Selection> sel = Select(json::object(), *c.store, c.default_type, c.now_ns);
  if (!sel.ok()) return sel.status();
  absl::StatusOr<std::shared_ptr<const storage::ProfileSlice>> slice = c.store->Run(sel->query);
  if (!slice.ok()) return slice.status();
  const std::vector<storage::ProcessSummary> processes = storage::ProcessesOf(**slice);
  const storage::SampleType& t = sel->query.sample_type;
  if (processes.empty()) {
    absl::StrAppend(&a.text, "No sample names its process (no process.pid attribute).\n");
  } else {
    absl::StrAppend(&a.text, "Processes by ", storage::SampleTypeName(t), " (", processes.size(), "):\n");
  }
  json rows = json::array();
  for (size_t i = 0; i < processes.size() && i < static_cast<size_t>(*limit); ++i) {
    const storage::ProcessSummary& p = processes[i];
    absl::StrAppend(&a.text, absl::StrFormat("%6s  %s [%s]  %s\n", Percent(Share(p.weight, (*slice)->total_weight)),
                                             p.name, p.pid, FormatValue(t, p.weight)));
    rows.push_back({{"pid", p.pid}, {"name", p.name}, {"weight", p.weight}, {"share", Share(p.weight, (*slice)->total_weight)}});
  }
  absl::StrAppend(&a.text, TruncationText(rows.size(), processes.size(), "processes", "raise limit"));
  a.data["sample_type"] = storage::SampleTypeName(t);
  a.data["processes"] = rows;
  a.data["processes_total"] = processes.size();
  a.data["truncated"] = rows.size() < processes.size();
  return a;
}

absl::StatusOr<Answer> AttributeValues(const Context& c, const json& args) {
  absl::StatusOr<std::string> key = StringArg(args, "key");
  absl::StatusOr<int64_t> limit = IntArg(args, "limit", 50, kMaxRows);
  if (!key.ok()) return key.status();
  if (!limit.ok()) return limit.status();
  Answer a;
  if (key->empty()) {
    const std::vector<std::string> keys = c.store->AttributeKeys();
    json rows = json::array();
    a.text = absl::StrCat(keys.size(), " attribute keys (values seen, up to 1000 counted):\n");
    for (const std::string& k : keys) {
      const size_t n = c.store->AttributeValues(k, 1001).size();
      absl::StrAppend(&a.text, "  ", k, ": ", n > 1000 ? "over 1000" : absl::StrCat(n), " values\n");
      rows.push_back({{"key", k}, {"values", n > 1000 ? json("over 1000") : json(n)}});
    }
    a.data = {{"keys", rows}};
    return a;
  }
  const std::vector<std::string> values = c.store->AttributeValues(*key, static_cast<size_t>(*limit) + 1);
  const bool truncated = values.size() > static_cast<size_t>(*limit);
  json list = json::array();
  for (size_t i = 0; i < values.size() && i < static_cast<size_t>(*limit); ++i) list.push_back(values[i]);
  a.text = values.empty() ? absl::StrCat("No sample carries \"", *key, "\" (attribute_values with no key lists the keys).\n")
                          : absl::StrCat(*key, ": ", list.size(), truncated ? "+" : "", " values\n");
  for (const json& v : list) absl::StrAppend(&a.text, "  ", v.get<std::string>(), "\n");
  if (truncated) absl::StrAppend(&a.text, "TRUNCATED: more values exist; raise limit.\n");
  a.data = {{"key", *key}, {"values", list}, {"truncated", truncated}};
  return a;
}

absl::StatusOr<Answer> TopFunctions(const Context& c, const json& args) {
  absl::StatusOr<Selection> sel = Select(args, *c.store, c.default_type, c.now_ns);
  if (!sel.ok()) return sel.status();
  absl::StatusOr<int64_t> limit = IntArg(args, "limit", 20, kMaxRows);
  absl::StatusOr<std::string> sort = StringArg(args, "sort", "self");
  absl::StatusOr<std::string> match = StringArg(args, "match");
  if (!limit.ok()) return limit.status();
  if (!sort.ok()) return sort.status();
  if (!match.ok()) return match.status();
  if (*sort != "self" && *sort != "total") return absl::InvalidArgumentError("\"sort\" must be self or total");
  absl::StatusOr<std::shared_ptr<const storage::ProfileSlice>> slice = c.store->Run(sel->query);
  if (!slice.ok()) return slice.status();
  std::vector<storage::TopFunctionRow> rows = storage::BuildTopFunctions(*slice);
  if (!match->empty()) {
    const std::string lower = absl::AsciiStrToLower(*match);
    std::erase_if(rows, [&](const storage::TopFunctionRow& r) {
      return !absl::StrContains(absl::AsciiStrToLower(r.function), lower);
    });
  }
  if (*sort == "total") {
    std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.total > b.total; });
  }
  const int64_t total = (*slice)->total_weight;
  const storage::SampleType& t = sel->query.sample_type;
  Answer a;
  a.text = SliceHeader(**slice, *sel, c.now_ns, *c.store);
  json list = json::array();
  for (size_t i = 0; i < rows.size() && i < static_cast<size_t>(*limit); ++i) {
    const storage::TopFunctionRow& r = rows[i];
    absl::StrAppend(&a.text, FunctionRowText(t, r, total));
    list.push_back({{"function", r.function},
                    {"executable", r.executable},
                    {"file", r.file},
                    {"frame_type", std::string(storage::FrameTypeName(r.type))},
                    {"self", r.self},
                    {"total", r.total},
                    {"self_share", Share(r.self, total)},
                    {"total_share", Share(r.total, total)}});
  }
  absl::StrAppend(&a.text, TruncationText(list.size(), rows.size(), "functions", "raise limit or narrow with match"));
  a.data = SliceFacts(**slice, *sel);
  a.data["functions"] = list;
  a.data["functions_total"] = rows.size();
  a.data["truncated"] = list.size() < rows.size();
  return a;
}

json PathsJson(const std::vector<WeightedPath>& paths, size_t limit, size_t max_frames, int64_t whole, bool reverse,
               const storage::SampleType& t, std::string* text) {
  json list = json::array();
  for (size_t i = 0; i < paths.size() && i < limit; ++i) {
    std::vector<std::string> frames = paths[i].frames;
    if (reverse) std::reverse(frames.begin(), frames.end());
    size_t omitted = 0;
    frames = ShortenPath(std::move(frames), max_frames, &omitted);
    absl::StrAppend(text, absl::StrFormat("  %6s  %s  (%s)\n", Percent(Share(paths[i].weight, whole)),
                                          absl::StrJoin(frames, " -> "), FormatValue(t, paths[i].weight)));
    list.push_back({{"frames", frames},
                    {"weight", paths[i].weight},
                    {"share", Share(paths[i].weight, whole)},
                    {"frames_omitted", omitted}});
  }
  absl::StrAppend(text, TruncationText(list.size(), paths.size(), "paths", "raise limit"));
  return list;
}

absl::StatusOr<Answer> HotPaths(const Context& c, const json& args) {
  absl::StatusOr<Selection> sel = Select(args, *c.store, c.default_type, c.now_ns);
  if (!sel.ok()) return sel.status();
  absl::StatusOr<std::string> wanted = StringArg(args, "function");
  absl::StatusOr<int64_t> limit = IntArg(args, "limit", 10, 100);
  absl::StatusOr<int64_t> max_frames = IntArg(args, "max_frames", 12, 200);
  if (!wanted.ok()) return wanted.status();
  if (!limit.ok()) return limit.status();
  if (!max_frames.ok()) return max_frames.status();
  if (*max_frames < 4) return absl::InvalidArgumentError("\"max_frames\" must be 4..200");
  absl::StatusOr<std::shared_ptr<const storage::ProfileSlice>> slice = c.store->Run(sel->query);
  if (!slice.ok()) return slice.status();
  const storage::Stacks stacks = storage::StacksOf(*slice);
  absl::StatusOr<std::string> function = ResolveFunction(stacks, *wanted);
  if (!function.ok()) return function.status();
  const storage::Sandwich sandwich = storage::BuildSandwich(stacks, *function);
  const storage::SampleType& t = sel->query.sample_type;
  const int64_t whole = (*slice)->total_weight;
  const int64_t fn_total = sandwich.callers.nodes.empty() ? 0 : sandwich.callers.nodes[0].total;
  // The callees tree holds the function under its root: its self there is
  // the weight of the stacks that end in it (no second table needed).
  int64_t fn_self = 0;
  for (const storage::FlameNode& n : sandwich.callees.nodes) {
    if (n.depth == 1) fn_self += n.self;
  }
  Answer a;
  a.text = SliceHeader(**slice, *sel, c.now_ns, *c.store);
  absl::StrAppend(&a.text, *function, ": ", Percent(Share(fn_total, whole)), " total (", FormatValue(t, fn_total),
                  "), ", Percent(Share(fn_self, whole)), " self (", FormatValue(t, fn_self), ")\n");
  // Callers: the tree holds the function at its root and its callers
  // below, so a path read root first is innermost first; shown outermost
  // first, as a stack is read.
  absl::StrAppend(&a.text, "Heaviest paths into it (outermost frame first):\n");
  json callers = PathsJson(HeaviestPaths(sandwich.callers), static_cast<size_t>(*limit),
                           static_cast<size_t>(*max_frames), whole, true, t, &a.text);
  absl::StrAppend(&a.text, "Heaviest paths from it (to where the time is spent):\n");
  json callees = PathsJson(HeaviestPaths(sandwich.callees), static_cast<size_t>(*limit),
                           static_cast<size_t>(*max_frames), whole, false, t, &a.text);
  a.data = SliceFacts(**slice, *sel);
  a.data["function"] = *function;
  a.data["function_total"] = fn_total;
  a.data["function_self"] = fn_self;
  a.data["callers"] = callers;
  a.data["callees"] = callees;
  return a;
}

absl::StatusOr<Answer> SourceLines(const Context& c, const json& args) {
  absl::StatusOr<Selection> sel = Select(args, *c.store, c.default_type, c.now_ns);
  if (!sel.ok()) return sel.status();
  absl::StatusOr<std::string> wanted = StringArg(args, "function");
  absl::StatusOr<int64_t> limit = IntArg(args, "limit", 20, kMaxRows);
  if (!wanted.ok()) return wanted.status();
  if (!limit.ok()) return limit.status();
  absl::StatusOr<std::shared_ptr<const storage::ProfileSlice>> slice = c.store->Run(sel->query);
  if (!slice.ok()) return slice.status();
  absl::StatusOr<std::string> function = ResolveFunction(storage::StacksOf(*slice), *wanted);
  if (!function.ok()) return function.status();
  const std::vector<storage::FunctionSource> files = storage::SourceLinesOf(**slice, *function);
  const storage::SampleType& t = sel->query.sample_type;
  const int64_t whole = (*slice)->total_weight;
  Answer a;
  a.text = SliceHeader(**slice, *sel, c.now_ns, *c.store);
  json out = json::array();
  size_t budget = static_cast<size_t>(*limit), lines_total = 0, shown = 0;
  for (const storage::FunctionSource& f : files) lines_total += f.lines.size();
  if (files.empty()) absl::StrAppend(&a.text, *function, ": its frames name no source file or line.\n");
  for (const storage::FunctionSource& f : files) {
    // The file's text, when it is here (built on this machine).
    std::vector<std::string> source;
    if (std::ifstream in(f.file); in) {
      for (std::string line; std::getline(in, line) && source.size() < 200000;) source.push_back(line);
    }
    absl::StrAppend(&a.text, *function, " in ", f.file.empty() ? "(no file)" : f.file, ": ",
                    Percent(Share(f.total, whole)), " total, ", Percent(Share(f.self, whole)), " self",
                    source.empty() ? " (file not readable here)" : "", "\n");
    std::vector<storage::SourceLineWeight> lines = f.lines;
    std::stable_sort(lines.begin(), lines.end(), [](const auto& x, const auto& y) { return x.total > y.total; });
    json rows = json::array();
    for (const storage::SourceLineWeight& l : lines) {
      if (budget == 0) break;
      --budget;
      ++shown;
      json row = {{"line", l.line}, {"self", l.self}, {"total", l.total}, {"total_share", Share(l.total, whole)}};
      std::string code;
      if (l.line >= 1 && static_cast<size_t>(l.line) <= source.size()) {
        code = std::string(absl::StripAsciiWhitespace(source[static_cast<size_t>(l.line) - 1]));
        row["text"] = code;
      }
      absl::StrAppend(&a.text, absl::StrFormat("  line %5d  %6s total %6s self  (%s)%s%s\n", l.line,
                                               Percent(Share(l.total, whole)), Percent(Share(l.self, whole)),
                                               FormatValue(t, l.total), code.empty() ? "" : "  ", code));
      rows.push_back(std::move(row));
    }
    out.push_back({{"file", f.file}, {"self", f.self}, {"total", f.total}, {"readable", !source.empty()}, {"lines", rows}});
  }
  absl::StrAppend(&a.text, TruncationText(shown, lines_total, "lines", "raise limit"));
  a.data = SliceFacts(**slice, *sel);
  a.data["function"] = *function;
  a.data["files"] = out;
  a.data["truncated"] = shown < lines_total;
  return a;
}

absl::StatusOr<Answer> Flamegraph(const Context& c, const json& args) {
  absl::StatusOr<Selection> sel = Select(args, *c.store, c.default_type, c.now_ns);
  if (!sel.ok()) return sel.status();
  absl::StatusOr<std::string> group_by = StringArg(args, "group_by", "none");
  absl::StatusOr<int64_t> limit = IntArg(args, "limit", 200, kMaxFoldedLines);
  if (!group_by.ok()) return group_by.status();
  if (!limit.ok()) return limit.status();
  storage::FlameTreeOptions options;
  if (!storage::ParseGroupBy(*group_by, &options)) {
    return absl::InvalidArgumentError("\"group_by\" wants " + std::string(storage::kGroupByChoices));
  }
  sel->query.keep_samples = storage::NeedsSamples(options);  // a span is each sample's own
  absl::StatusOr<std::shared_ptr<const storage::ProfileSlice>> slice = c.store->Run(sel->query);
  if (!slice.ok()) return slice.status();
  const storage::FlameTree tree = storage::BuildFlameTree(*slice, options);
  std::vector<WeightedPath> paths = HeaviestPaths(tree);
  Answer a;
  a.text = SliceHeader(**slice, *sel, c.now_ns, *c.store);
  int64_t shown_weight = 0;
  json lines = json::array();
  std::string folded;
  for (size_t i = 0; i < paths.size() && i < static_cast<size_t>(*limit); ++i) {
    std::string line = absl::StrCat(absl::StrJoin(paths[i].frames, ";"), " ", paths[i].weight);
    absl::StrAppend(&folded, line, "\n");
    lines.push_back(std::move(line));
    shown_weight += paths[i].weight;
  }
  const int64_t whole = tree.nodes.empty() ? 0 : tree.nodes[0].total;
  absl::StrAppend(&a.text, "Folded stacks, heaviest first (weights in ", sel->query.sample_type.unit, "):\n", folded);
  if (lines.size() < paths.size()) {
    absl::StrAppend(&a.text, "TRUNCATED: showing ", lines.size(), " of ", paths.size(), " stacks (",
                    Percent(Share(shown_weight, whole)), " of the weight); raise limit or narrow the selection.\n");
  }
  a.data = SliceFacts(**slice, *sel);
  a.data["folded"] = lines;
  a.data["stacks_total"] = paths.size();
  a.data["shown_weight"] = shown_weight;
  a.data["truncated"] = lines.size() < paths.size();
  return a;
}

}  // namespace

namespace {

json DiffRowJson(const storage::DiffFunctionRow& r) {
  return {{"function", r.function},
          {"executable", r.executable},
          {"base_total", r.base_total},
          {"target_total", r.target_total},
          {"base_total_share", r.base_total_share},
          {"target_total_share", r.target_total_share},
          {"base_self_share", r.base_self_share},
          {"target_self_share", r.target_self_share},
          {"change", r.target_total_share - r.base_total_share},
          {"z", r.z},
          {"significant", r.significant}};
}

std::string DiffRowText(const storage::DiffFunctionRow& r) {
  return absl::StrFormat("  %+6.1f pts  %5s -> %5s total  z=%+.1f%s  %s%s\n",
                         (r.target_total_share - r.base_total_share) * 100.0, Percent(r.base_total_share),
                         Percent(r.target_total_share), r.z, r.significant ? " significant" : " (noise)", r.function,
                         r.executable.empty() ? "" : absl::StrCat("  [", r.executable, "]"));
}

using CaptureOpener = std::function<absl::StatusOr<Context>(const std::string& path)>;

absl::StatusOr<Answer> Diff(const Context& main, const json& args, const CaptureOpener& open_capture) {
  absl::StatusOr<int64_t> limit = IntArg(args, "limit", 10, kMaxRows);
  absl::StatusOr<bool> significant_only = BoolArg(args, "significant_only", false);
  if (!limit.ok()) return limit.status();
  if (!significant_only.ok()) return significant_only.status();
  struct Side {
    std::string name;
    Context context;
    Selection selection;
    std::shared_ptr<const storage::ProfileSlice> slice;
  };
  std::vector<Side> sides;
  for (const char* name : {"base", "target"}) {
    const json& side = args[name];
    if (!side.is_object()) return absl::InvalidArgumentError(absl::StrCat("\"", name, "\" must be an object"));
    for (const auto& [key, value] : side.items()) {
      if (key != "input" && key != "last" && key != "from" && key != "to" && key != "filters") {
        return absl::InvalidArgumentError(absl::StrCat("\"", name, "\" takes input, last, from, to and filters, not \"",
                                                       key, "\" (sample_type is shared: give it beside base and target)"));
      }
    }
    absl::StatusOr<std::string> input = StringArg(side, "input");
    if (!input.ok()) return input.status();
    Context c = main;
    if (!input->empty()) {
      absl::StatusOr<Context> opened = open_capture(*input);
      if (!opened.ok()) return absl::Status(opened.status().code(), absl::StrCat(name, ": ", opened.status().message()));
      c = *opened;
    }
    // The side's own range and filters, with the shared type and filters.
    json selection = side;
    selection.erase("input");
    if (args.contains("sample_type")) selection["sample_type"] = args["sample_type"];
    std::vector<storage::AttributeFilter> shared;
    if (args.contains("filters")) {
      absl::StatusOr<Selection> common = Select({{"filters", args["filters"]}}, *c.store, c.default_type, c.now_ns);
      if (!common.ok()) return common.status();
      shared = common->query.filters;
    }
    absl::StatusOr<Selection> sel = Select(selection, *c.store, c.default_type, c.now_ns, shared);
    if (!sel.ok()) return absl::Status(sel.status().code(), absl::StrCat(name, ": ", sel.status().message()));
    absl::StatusOr<std::shared_ptr<const storage::ProfileSlice>> slice = c.store->Run(sel->query);
    if (!slice.ok()) return slice.status();
    sides.push_back({name, c, *std::move(sel), *std::move(slice)});
  }
  const storage::SampleType& bt = sides[0].selection.query.sample_type;
  const storage::SampleType& tt = sides[1].selection.query.sample_type;
  if (!(bt == tt)) {
    return absl::InvalidArgumentError(absl::StrCat("the sides hold different sample types (",
                                                   storage::SampleTypeName(bt), " and ", storage::SampleTypeName(tt),
                                                   "); name one with sample_type"));
  }
  std::vector<storage::DiffFunctionRow> rows =
      storage::BuildDiffTopFunctions(storage::StacksOf(sides[0].slice), storage::StacksOf(sides[1].slice));
  if (*significant_only) std::erase_if(rows, [](const auto& r) { return !r.significant; });
  Answer a;
  for (const Side& s : sides) {
    absl::StrAppend(&a.text, s.name, " (", s.context.name, "): ",
                    SliceHeader(*s.slice, s.selection, s.context.now_ns, *s.context.store));
  }
  absl::StrAppend(&a.text, "Change in each function's share of the total (|z| >= 3.29 is beyond sampling noise):\n");
  // Rows are sorted by the change, largest growth first.
  json grew = json::array(), shrank = json::array();
  size_t grew_of = 0, shrank_of = 0;
  for (const storage::DiffFunctionRow& r : rows) {
    const double change = r.target_total_share - r.base_total_share;
    if (change > 0) ++grew_of;
    if (change < 0) ++shrank_of;
  }
  absl::StrAppend(&a.text, "Grew most:\n");
  for (const storage::DiffFunctionRow& r : rows) {
    if (grew.size() >= static_cast<size_t>(*limit) || !(r.target_total_share - r.base_total_share > 0)) break;
    absl::StrAppend(&a.text, DiffRowText(r));
    grew.push_back(DiffRowJson(r));
  }
  absl::StrAppend(&a.text, TruncationText(grew.size(), grew_of, "functions that grew", "raise limit"));
  absl::StrAppend(&a.text, "Shrank most:\n");
  for (auto it = rows.rbegin(); it != rows.rend(); ++it) {
    if (shrank.size() >= static_cast<size_t>(*limit) || !(it->target_total_share - it->base_total_share < 0)) break;
    absl::StrAppend(&a.text, DiffRowText(*it));
    shrank.push_back(DiffRowJson(*it));
  }
  absl::StrAppend(&a.text, TruncationText(shrank.size(), shrank_of, "functions that shrank", "raise limit"));
  a.data = {{"base", SliceFacts(*sides[0].slice, sides[0].selection)},
            {"target", SliceFacts(*sides[1].slice, sides[1].selection)},
            {"grew", grew},
            {"shrank", shrank},
            {"grew_total", grew_of},
            {"shrank_total", shrank_of},
            {"truncated", grew.size() < grew_of || shrank.size() < shrank_of}};
  return a;
}

}  // namespace

json McpTools::Call(const std::string& name, const json& arguments) {
  const json args = arguments.is_null() ? json::object() : arguments;
  absl::StatusOr<Answer> answer = absl::InternalError("no tool");
  for (const Tool& t : Tools()) {
    if (t.name != name) continue;
    if (absl::Status s = CheckKnown(args, t.schema); !s.ok()) {
      answer = s;
      break;
    }
    absl::StatusOr<Source> main = Main();
    if (!main.ok()) {
      answer = main.status();
      break;
    }
    const Context& c = *main;
    if (name == "sample_types") answer = SampleTypes(c);
    if (name == "sources") answer = Sources(c, args);
    if (name == "attribute_values") answer = AttributeValues(c, args);
    if (name == "top_functions") answer = TopFunctions(c, args);
    if (name == "hot_paths") answer = HotPaths(c, args);
    if (name == "source_lines") answer = SourceLines(c, args);
    if (name == "flamegraph") answer = Flamegraph(c, args);
    if (name == "diff") {
      answer = Diff(c, args, [this](const std::string& path) { return Capture(path); });
    }
  }
  if (!answer.ok()) {
    return {{"content", json::array({{{"type", "text"}, {"text", absl::StrCat("kiln: ", answer.status().message())}}})},
            {"isError", true}};
  }
  return {{"content", json::array({{{"type", "text"}, {"text", answer->text}}})},
          {"structuredContent", answer->data},
          {"isError", false}};
}

}  // namespace kiln::app
