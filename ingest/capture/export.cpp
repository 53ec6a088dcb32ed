// Exporters: ProfileSlice -> OTLP, pprof, folded, SVG.
//
// [SECTION] Shared: frames back into locations
// [SECTION] OTLP
// [SECTION] pprof
// [SECTION] Folded and SVG
// [SECTION] Entry point
#include "ingest/capture/export.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "ingest/capture/frame_palette.h"
#include "ingest/capture/importers.h"
#include "nlohmann/json.hpp"
#include "storage/model/folded.h"
#include "storage/model/query.h"

namespace kiln::capture {
namespace {

// last - first, without signed overflow: imported times can lie anywhere in
// int64 (OTLP's are unsigned), and two far apart overflowed (fuzz_capture).
uint64_t DurationNs(int64_t first_ns, int64_t last_ns) {
  return last_ns > first_ns ? static_cast<uint64_t>(last_ns) - static_cast<uint64_t>(first_ns) : 0;
}

namespace collector = opentelemetry::proto::collector::profiles::v1development;
namespace otlp = opentelemetry::proto::profiles::v1development;
using storage::Frame;
using storage::ProfileSlice;

// ============================================================================
// [SECTION] Shared: frames back into locations
// ============================================================================

// A stack's root-first frames, cut into locations: a location starts at a
// frame that is not inlined and takes the inlined frames after it (the
// model expands a location's lines outermost first).
template <typename F>
void ForEachLocation(const storage::ProfileDictionary& d, uint32_t stack, F&& f) {
  auto frames = d.Stack(stack);
  size_t i = 0;
  while (i < frames.size()) {
    size_t j = i + 1;
    while (j < frames.size() && frames[j] < d.frames.size() && d.frames[frames[j]].inlined &&
           d.frames[frames[j]].executable == d.frames[frames[i]].executable &&
           d.frames[frames[j]].address == d.frames[frames[i]].address) {
      ++j;
    }
    f(frames.begin() + i, frames.begin() + j);
    i = j;
  }
}

std::string_view Str(const storage::ProfileDictionary& d, uint32_t i) {
  return i < d.strings.size() ? std::string_view(d.strings[i]) : std::string_view();
}

bool IsResourceKey(std::string_view key) {
  for (std::string_view p : {"process.", "container.", "service.", "host.", "os.", "k8s."}) {
    if (key.substr(0, p.size()) == p) return true;
  }
  return false;
}

// ============================================================================
// [SECTION] OTLP
// ============================================================================

class OtlpWriter {
 public:
  OtlpWriter(const storage::ProfileDictionary& dict, storage::SampleTypeInfo sample_type, int64_t first_ns,
             int64_t last_ns)
      : d_(dict), sample_type_(std::move(sample_type)), first_ns_(first_ns), last_ns_(last_ns) {
    dict_ = req_.mutable_dictionary();
    dict_->add_string_table();     // ""
    dict_->add_mapping_table();    // empty mapping 0
    dict_->add_location_table();   // empty location 0
    dict_->add_function_table();   // empty function 0
    dict_->add_link_table();       // empty link 0
    dict_->add_attribute_table();  // empty attribute 0
    dict_->add_stack_table();      // empty stack 0
  }

  // One sample per stack weight: a single value, no timestamps; or, when
  // the slice lists its samples (Query::keep_samples), a value per
  // timestamp, in time order, so the timeline survives the export.
  // Listed samples keep their links too: one OTLP sample per (stack
  // weight, link).
  collector::ExportProfilesServiceRequest Build(const ProfileSlice& slice) {
    if (slice.samples.empty()) {
      for (const storage::StackWeight& w : slice.weights) {
        otlp::Sample* out = NewSample(w.attribute_set);
        out->set_stack_index(Stack(w.stack));
        out->add_values(w.weight);
      }
      return std::move(req_);
    }
    std::vector<storage::SliceSample> samples = slice.samples;
    std::stable_sort(samples.begin(), samples.end(),
                     [](const storage::SliceSample& a, const storage::SliceSample& b) { return a.time_ns < b.time_ns; });
    absl::flat_hash_map<std::pair<uint32_t, uint32_t>, otlp::Sample*> of_entry;  // (entry, link) -> sample
    for (const storage::SliceSample& s : samples) {
      otlp::Sample*& out = of_entry[std::pair{s.entry, s.link}];
      if (out == nullptr) {
        const storage::StackWeight& w = slice.weights[s.entry];
        out = NewSample(w.attribute_set);
        out->set_stack_index(Stack(w.stack));
        out->set_link_index(LinkIndex(slice.dict, s.link));
      }
      out->add_values(s.value);
      out->add_timestamps_unix_nano(static_cast<uint64_t>(s.time_ns));
    }
    return std::move(req_);
  }

  // One sample per distinct (stack, attribute set, link) with a value per
  // timestamp: keeps every event's time and link.
  collector::ExportProfilesServiceRequest Build(const storage::ProfileBatch& batch,
                                                const std::vector<uint32_t>& selected) {
    // (stack, attribute set, link) -> its sample.
    absl::flat_hash_map<std::tuple<uint32_t, uint32_t, uint32_t>, otlp::Sample*> samples;
    for (uint32_t i : selected) {
      const storage::Sample& s = batch.samples[i];
      otlp::Sample*& out = samples[std::make_tuple(s.stack, s.attribute_set, s.link)];
      if (out == nullptr) {
        out = NewSample(s.attribute_set);
        out->set_stack_index(Stack(s.stack));
        out->set_link_index(LinkIndex(batch.dict, s.link));
      }
      out->add_values(s.value);
      out->add_timestamps_unix_nano(static_cast<uint64_t>(s.time_ns));
    }
    return std::move(req_);
  }

 private:
  // A new sample in the profile of the attribute set's resource part, with
  // the sample part as attribute indices.
  otlp::Sample* NewSample(uint32_t attribute_set) {
    auto cached = profile_of_set_.find(attribute_set);
    if (cached == profile_of_set_.end()) {
      std::vector<std::pair<std::string, std::string>> resource;
      std::vector<int32_t> sample_attrs;
      if (attribute_set < d_.AttributeSetCount()) {
        for (const storage::Attribute& a : d_.AttributeSet(attribute_set)) {
          std::string_view key = Str(d_, a.key), value = Str(d_, a.value);
          if (IsResourceKey(key)) {
            resource.emplace_back(key, value);
          } else {
            sample_attrs.push_back(Attribute(key, value));
          }
        }
      }
      otlp::Profile*& profile = by_resource_[resource];
      if (profile == nullptr) {
        auto* rp = req_.add_resource_profiles();
        for (auto& [k, v] : resource) {
          auto* kv = rp->mutable_resource()->add_attributes();
          kv->set_key(k);
          kv->mutable_value()->set_string_value(v);
        }
        profile = rp->add_scope_profiles()->add_profiles();
        profile->mutable_sample_type()->set_type_strindex(String(sample_type_.type.type));
        profile->mutable_sample_type()->set_unit_strindex(String(sample_type_.type.unit));
        if (!sample_type_.period_type.empty() || !sample_type_.period_unit.empty()) {
          profile->mutable_period_type()->set_type_strindex(String(sample_type_.period_type));
          profile->mutable_period_type()->set_unit_strindex(String(sample_type_.period_unit));
        }
        profile->set_period(sample_type_.period);
        profile->set_time_unix_nano(static_cast<uint64_t>(first_ns_));
        profile->set_duration_nano(DurationNs(first_ns_, last_ns_));
      }
      cached = profile_of_set_.emplace(attribute_set, std::make_pair(profile, sample_attrs)).first;
    }
    auto* sample = cached->second.first->add_samples();
    for (int32_t a : cached->second.second) sample->add_attribute_indices(a);
    return sample;
  }
  int32_t LinkIndex(const storage::ProfileDictionary& d, uint32_t link) {
    if (link == 0 || link >= d.links.size()) return 0;
    auto [it, added] = links_.try_emplace(link, dict_->link_table_size());
    if (added) {
      auto* l = dict_->add_link_table();
      l->set_trace_id(d.links[link].trace_id);
      l->set_span_id(d.links[link].span_id);
    }
    return it->second;
  }
  int32_t String(std::string_view s) {
    // OTLP's strings are protobuf `string`s: valid UTF-8, or readers
    // (kiln's own included) refuse the whole file.
    auto [it, added] = strings_.try_emplace(std::string(s), dict_->string_table_size());
    if (added) dict_->add_string_table(storage::ToValidUtf8(s));
    return it->second;
  }
  int32_t Attribute(std::string_view key, std::string_view value) {
    std::string k = absl::StrCat(Av(key), std::string(1, '\0'), Av(value));
    auto [it, added] = attributes_.try_emplace(k, dict_->attribute_table_size());
    if (added) {
      auto* kv = dict_->add_attribute_table();
      kv->set_key_strindex(String(key));
      kv->mutable_value()->set_string_value(std::string(value));
    }
    return it->second;
  }
  int32_t Mapping(uint32_t executable) {
    if (executable == 0 || executable >= d_.executables.size()) return 0;
    auto [it, added] = mappings_.try_emplace(executable, dict_->mapping_table_size());
    if (added) {
      const storage::Executable& e = d_.executables[executable];
      auto* m = dict_->add_mapping_table();
      m->set_filename_strindex(String(Str(d_, e.file_name)));
      if (e.htlhash != 0)
        m->add_attribute_indices(Attribute("process.executable.build_id.htlhash", Str(d_, e.htlhash)));
      if (e.gnu_build_id != 0)
        m->add_attribute_indices(Attribute("process.executable.build_id.gnu", Str(d_, e.gnu_build_id)));
      if (e.go_build_id != 0)
        m->add_attribute_indices(Attribute("process.executable.build_id.go", Str(d_, e.go_build_id)));
    }
    return it->second;
  }
  int32_t Function(uint32_t name, uint32_t file) {
    uint64_t key = (uint64_t{name} << 32) | file;
    auto [it, added] = functions_.try_emplace(key, dict_->function_table_size());
    if (added) {
      auto* f = dict_->add_function_table();
      f->set_name_strindex(String(Str(d_, name)));
      f->set_filename_strindex(String(Str(d_, file)));
    }
    return it->second;
  }
  int32_t Location(const uint32_t* begin, const uint32_t* end) {
    std::string key(reinterpret_cast<const char*>(begin), (end - begin) * sizeof(uint32_t));
    auto it = locations_.find(key);
    if (it != locations_.end()) return it->second;
    const Frame& outer = d_.frames[*begin];
    int32_t index = dict_->location_table_size();
    auto* loc = dict_->add_location_table();
    loc->set_mapping_index(Mapping(outer.executable));
    loc->set_address(outer.address);
    // OTLP lines: innermost first, the caller last; our frames are
    // outermost first.
    bool named = false;
    for (const uint32_t* p = end; p != begin;) {
      const Frame& f = d_.frames[*--p];
      if (f.function == 0 && f.file == 0 && f.line == 0) continue;
      named = true;
      auto* line = loc->add_lines();
      line->set_function_index(Function(f.function, f.file));
      line->set_line(f.line);
    }
    (void)named;
    loc->add_attribute_indices(Attribute("profile.frame.type", storage::FrameTypeName(outer.type)));
    locations_.emplace(std::move(key), index);
    return index;
  }
  int32_t Stack(uint32_t stack) {
    auto [it, added] = stacks_.try_emplace(stack, 0);
    if (!added) return it->second;
    if (stack >= d_.StackCount()) return 0;
    std::vector<int32_t> root_first;
    ForEachLocation(d_, stack,
                    [&](const uint32_t* b, const uint32_t* e) { root_first.push_back(Location(b, e)); });
    it->second = dict_->stack_table_size();
    auto* st = dict_->add_stack_table();
    for (auto i = root_first.rbegin(); i != root_first.rend(); ++i) st->add_location_indices(*i);
    return it->second;
  }

  const storage::ProfileDictionary& d_;
  storage::SampleTypeInfo sample_type_;
  int64_t first_ns_, last_ns_;
  collector::ExportProfilesServiceRequest req_;
  otlp::ProfilesDictionary* dict_;
  std::map<std::vector<std::pair<std::string, std::string>>, otlp::Profile*> by_resource_;
  absl::flat_hash_map<uint32_t, std::pair<otlp::Profile*, std::vector<int32_t>>> profile_of_set_;
  absl::flat_hash_map<uint32_t, int32_t> links_;
  absl::flat_hash_map<std::string, int32_t> strings_{{"", 0}};
  absl::flat_hash_map<std::string, int32_t> attributes_;
  absl::flat_hash_map<uint32_t, int32_t> mappings_;
  absl::flat_hash_map<uint64_t, int32_t> functions_;
  absl::flat_hash_map<std::string, int32_t> locations_;
  absl::flat_hash_map<uint32_t, int32_t> stacks_;
};

// ============================================================================
// [SECTION] pprof
// ============================================================================

class PprofWriter {
 public:
  explicit PprofWriter(const ProfileSlice& slice) : s_(slice), d_(slice.dict) { p_.add_string_table(""); }

  perftools::profiles::Profile Build() {
    const storage::SampleTypeInfo& t = s_.sample_type;
    auto* st = p_.add_sample_type();
    st->set_type(String(t.type.type));
    st->set_unit(String(t.type.unit));
    if (!t.period_type.empty() || !t.period_unit.empty()) {
      p_.mutable_period_type()->set_type(String(t.period_type));
      p_.mutable_period_type()->set_unit(String(t.period_unit));
    }
    p_.set_period(t.period);
    p_.set_time_nanos(s_.first_sample_ns);
    p_.set_duration_nanos(static_cast<int64_t>(
        std::min<uint64_t>(DurationNs(s_.first_sample_ns, s_.last_sample_ns), INT64_MAX)));
    std::vector<uint64_t> leaf_first;
    for (const storage::StackWeight& w : s_.weights) {
      auto* sample = p_.add_sample();
      if (w.stack < d_.StackCount()) {
        leaf_first.clear();
        ForEachLocation(d_, w.stack,
                        [&](const uint32_t* b, const uint32_t* e) { leaf_first.push_back(Location(b, e)); });
        for (auto i = leaf_first.rbegin(); i != leaf_first.rend(); ++i) sample->add_location_id(*i);
      }
      sample->add_value(w.weight);
      if (w.attribute_set < d_.AttributeSetCount()) {
        for (const storage::Attribute& a : d_.AttributeSet(w.attribute_set)) {
          auto* label = sample->add_label();
          label->set_key(String(Str(d_, a.key)));
          label->set_str(String(Str(d_, a.value)));
        }
      }
    }
    return std::move(p_);
  }

 private:
  int64_t String(std::string_view s) {
    // pprof's string_table is a protobuf `string` too (see the OTLP writer).
    auto [it, added] = strings_.try_emplace(std::string(s), p_.string_table_size());
    if (added) p_.add_string_table(storage::ToValidUtf8(s));
    return it->second;
  }
  uint64_t Mapping(uint32_t executable) {
    if (executable == 0 || executable >= d_.executables.size()) return 0;
    auto [it, added] = mappings_.try_emplace(executable, 0);
    if (added) {
      const storage::Executable& e = d_.executables[executable];
      auto* m = p_.add_mapping();
      it->second = static_cast<uint64_t>(p_.mapping_size());
      m->set_id(it->second);
      m->set_filename(String(Str(d_, e.file_name)));
      uint32_t id = e.gnu_build_id != 0 ? e.gnu_build_id : e.htlhash != 0 ? e.htlhash : e.go_build_id;
      m->set_build_id(String(Str(d_, id)));
      m->set_has_functions(true);
    }
    return it->second;
  }
  uint64_t Pseudo(const std::string& name) {
    auto [it, added] = pseudo_.try_emplace(name, 0);
    if (added) {
      auto* m = p_.add_mapping();
      it->second = static_cast<uint64_t>(p_.mapping_size());
      m->set_id(it->second);
      m->set_filename(String(name));
    }
    return it->second;
  }
  uint64_t Function(uint32_t name, uint32_t file) {
    uint64_t key = (uint64_t{name} << 32) | file;
    auto [it, added] = functions_.try_emplace(key, p_.function_size() + 1);
    if (added) {
      auto* f = p_.add_function();
      f->set_id(it->second);
      f->set_name(String(Str(d_, name)));
      f->set_system_name(f->name());
      f->set_filename(String(Str(d_, file)));
    }
    return it->second;
  }
  uint64_t Location(const uint32_t* begin, const uint32_t* end) {
    std::string key(reinterpret_cast<const char*>(begin), (end - begin) * sizeof(uint32_t));
    auto it = locations_.find(key);
    if (it != locations_.end()) return it->second;
    const Frame& outer = d_.frames[*begin];
    uint64_t id = static_cast<uint64_t>(p_.location_size()) + 1;
    auto* loc = p_.add_location();
    loc->set_id(id);
    uint64_t mapping = Mapping(outer.executable);
    // pprof has no frame types; kernel and JIT frames keep theirs through
    // the pseudo mappings that pprof tools and our importer recognise.
    if (mapping == 0 && outer.type == storage::FrameType::kKernel) mapping = Pseudo("[kernel.kallsyms]");
    if (mapping == 0 && outer.type == storage::FrameType::kJit) mapping = Pseudo("[jit]");
    loc->set_mapping_id(mapping);
    loc->set_address(outer.address);
    for (const uint32_t* p = end; p != begin;) {  // innermost first
      const Frame& f = d_.frames[*--p];
      if (f.function == 0 && f.file == 0 && f.line == 0) continue;
      auto* line = loc->add_line();
      line->set_function_id(Function(f.function, f.file));
      line->set_line(f.line);
    }
    locations_.emplace(std::move(key), id);
    return id;
  }

  const ProfileSlice& s_;
  const storage::ProfileDictionary& d_;
  perftools::profiles::Profile p_;
  absl::flat_hash_map<std::string, int64_t> strings_{{"", 0}};
  absl::flat_hash_map<uint32_t, uint64_t> mappings_;
  absl::flat_hash_map<std::string, uint64_t> pseudo_;
  absl::flat_hash_map<uint64_t, uint64_t> functions_;
  absl::flat_hash_map<std::string, uint64_t> locations_;
};

// ============================================================================
// [SECTION] Folded and SVG
// ============================================================================

void AppendXmlEscaped(std::string* out, std::string_view s) {
  for (char c : s) {
    switch (c) {
      case '<':
        out->append("&lt;");
        break;
      case '>':
        out->append("&gt;");
        break;
      case '&':
        out->append("&amp;");
        break;
      case '"':
        out->append("&quot;");
        break;
      case '\'':
        out->append("&apos;");
        break;
      default:
        // XML 1.0 forbids most control characters.
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\t') out->push_back(c);
    }
  }
}

std::string ColorText(Rgb c) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "#%02x%02x%02x", c.r, c.g, c.b);
  return buf;
}

}  // namespace

// ============================================================================
// [SECTION] Entry point
// ============================================================================

bool ParseExportFormat(std::string_view name, ExportFormat* format) {
  if (name == "otlp")
    *format = ExportFormat::kOtlp;
  else if (name == "pprof")
    *format = ExportFormat::kPprof;
  else if (name == "folded")
    *format = ExportFormat::kFolded;
  else if (name == "svg")
    *format = ExportFormat::kSvg;
  else
    return false;
  return true;
}

collector::ExportProfilesServiceRequest BuildOtlpRequest(const ProfileSlice& slice) {
  return OtlpWriter(slice.dict, slice.sample_type, slice.first_sample_ns, slice.last_sample_ns).Build(slice);
}

collector::ExportProfilesServiceRequest BuildOtlpRequestFromBatch(const storage::ProfileBatch& batch,
                                                                  const storage::Query& query) {
  std::vector<uint32_t> selected = storage::SelectSamples(batch, query);
  int64_t first = 0, last = 0;
  for (size_t k = 0; k < selected.size(); ++k) {
    int64_t t = batch.samples[selected[k]].time_ns;
    first = k == 0 ? t : std::min(first, t);
    last = k == 0 ? t : std::max(last, t);
  }
  const std::optional<uint32_t> type = batch.dict.SampleTypeIndex(query.sample_type);
  return OtlpWriter(batch.dict,
                    type ? batch.dict.sample_types[*type] : storage::SampleTypeInfo{query.sample_type}, first,
                    last)
      .Build(batch, selected);
}

absl::StatusOr<std::string> ExportBatch(const storage::ProfileBatch& batch, const storage::Query& query,
                                        const ExportOptions& options) {
  // Transformed stacks are aggregates: they have no per-sample times.
  if (options.format == ExportFormat::kOtlp && options.tree.transforms.empty()) {
    std::string bytes;
    if (!BuildOtlpRequestFromBatch(batch, query).SerializeToString(&bytes)) {
      return absl::InternalError("OTLP export: message too large to serialize (2 GiB limit)");
    }
    return GzipCompress(bytes);
  }
  storage::Query selection = query;
  selection.keep_samples = selection.keep_samples || storage::NeedsSamples(options.tree);
  return ExportSlice(storage::SliceFromBatch(batch, selection), options);
}

perftools::profiles::Profile BuildPprofProfile(const ProfileSlice& slice) {
  return PprofWriter(slice).Build();
}

std::string FoldedText(const std::shared_ptr<const ProfileSlice>& slice, const ExportOptions& options) {
  storage::FlameTree tree = storage::BuildFlameTree(slice, options.tree);
  std::string text;
  for (const std::string& line : storage::FoldedLines(tree, {options.annotate})) {
    text += line;
    text += '\n';
  }
  return text;
}

namespace {

// How one node of an SVG flame graph looks: its width weight (children are
// laid out inside their parent by it), fill and tooltip.
struct SvgNodeStyle {
  std::function<double(uint32_t)> weight;
  std::function<Rgb(uint32_t)> fill;
  std::function<std::string(uint32_t)> tooltip;
};

std::string RenderFlameGraphSvg(const storage::FlameTree& tree, const ExportOptions& options,
                                const SvgNodeStyle& style) {
  constexpr int kRow = 17, kTop = 36, kFont = 11;
  constexpr double kCharWidth = 6.6;  // ~ width of an 11px Verdana glyph
  const int width = std::max(options.svg_width, 200);
  const int pad = 10;
  const double usable = width - 2.0 * pad;
  const int height = kTop + (tree.max_depth + 1) * kRow + 20;
  std::string svg;
  svg.reserve(256 + tree.nodes.size() * 160);
  absl::StrAppend(&svg,
                  "<?xml version=\"1.0\" standalone=\"no\"?>\n"
                  "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"",
                  width, "\" height=\"", height, "\" viewBox=\"0 0 ", width, " ", height,
                  "\" font-family=\"Verdana, sans-serif\" font-size=\"", kFont, "\">\n",
                  "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"#f8f8f8\"/>\n", "<text x=\"",
                  width / 2, "\" y=\"22\" text-anchor=\"middle\" font-size=\"16\">");
  AppendXmlEscaped(&svg, options.title);
  svg += "</text>\n";
  const double total = tree.nodes.empty() ? 0 : style.weight(0);
  if (total <= 0) {
    svg += "</svg>\n";
    return svg;
  }
  // x of each node: children are laid out left to right inside the parent.
  std::vector<double> x(tree.nodes.size(), 0.0);
  x[0] = pad;
  for (uint32_t i = 0; i < tree.nodes.size(); ++i) {
    const storage::FlameNode& n = tree.nodes[i];
    const double w = usable * style.weight(i) / total;
    double child_x = x[i];
    for (uint32_t c = 0; c < n.child_count; ++c) {
      uint32_t ci = n.first_child + c;
      x[ci] = child_x;
      child_x += usable * style.weight(ci) / total;
    }
    if (w < 0.1) continue;  // invisible: skip, as the app does
    const Rgb color = style.fill(i);
    const std::string& label = tree.Label(i);
    svg += "<g><title>";
    AppendXmlEscaped(&svg, style.tooltip(i));
    svg += "</title>";
    double y = kTop + n.depth * kRow;
    char rect[160];
    std::snprintf(rect, sizeof(rect),
                  "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%d\" fill=\"%s\" rx=\"2\"/>", x[i], y,
                  w, kRow - 1, ColorText(color).c_str());
    svg += rect;
    size_t fits = static_cast<size_t>((w - 6) / kCharWidth);
    if (fits >= 3) {
      char pos[96];
      std::snprintf(pos, sizeof(pos), "<text x=\"%.2f\" y=\"%.0f\" fill=\"%s\">", x[i] + 3, y + kRow - 5,
                    ColorText(TextColorOn(color)).c_str());
      svg += pos;
      if (label.size() <= fits) {
        AppendXmlEscaped(&svg, label);
      } else {
        // Cut on a UTF-8 boundary and mark the cut.
        size_t cut = fits - 2;
        while (cut > 0 && (static_cast<unsigned char>(label[cut]) & 0xC0) == 0x80) --cut;
        AppendXmlEscaped(&svg, std::string_view(label).substr(0, cut));
        svg += "..";
      }
      svg += "</text>";
    }
    svg += "</g>\n";
  }
  svg += "</svg>\n";
  return svg;
}

std::string Percent(double share) {
  char pct[32];
  std::snprintf(pct, sizeof(pct), "%.2f%%", 100.0 * share);
  return pct;
}

}  // namespace

std::string FlameGraphSvg(const storage::FlameTree& tree, const ExportOptions& options) {
  const storage::SampleType sample_type = tree.slice ? tree.slice->sample_type.type : storage::SampleType{};
  const double total = tree.nodes.empty() ? 0 : static_cast<double>(tree.nodes[0].total);
  SvgNodeStyle style;
  style.weight = [&](uint32_t i) { return static_cast<double>(std::max<int64_t>(tree.nodes[i].total, 0)); };
  style.fill = [&](uint32_t i) {
    const storage::FlameNode& n = tree.nodes[i];
    return options.node_color                      ? options.node_color(n.kind, n.type, tree.Label(i))
           : n.kind == storage::NodeKind::kProcess ? ProcessColor()
           : n.kind == storage::NodeKind::kThread  ? ThreadColor()
           : n.kind == storage::NodeKind::kRoot    ? RootColor()
                                                   : FrameColor(n.type, tree.Label(i));
  };
  style.tooltip = [&](uint32_t i) {
    const storage::FlameNode& n = tree.nodes[i];
    std::string text = absl::StrCat(tree.Label(i), " (", storage::FormatValue(sample_type, n.total), ", ",
                                    Percent(static_cast<double>(n.total) / total));
    if (n.self > 0) absl::StrAppend(&text, ", self ", storage::FormatValue(sample_type, n.self));
    if (n.kind == storage::NodeKind::kFrame) absl::StrAppend(&text, ", ", Av(storage::FrameTypeName(n.type)));
    return text + ")";
  };
  return RenderFlameGraphSvg(tree, options, style);
}

std::string DiffFlameGraphSvg(const storage::DiffTree& diff, const ExportOptions& options, bool normalized) {
  const storage::FlameTree& tree = diff.tree;
  const storage::SampleType sample_type = diff.sample_type.type;
  SvgNodeStyle style;
  // Width: the laid-out tree's (the mean of the node's shares of both
  // sides, so nodes gone from the target stay visible).
  style.weight = [&](uint32_t i) { return static_cast<double>(tree.nodes[i].total) / 1e9; };
  style.fill = [&](uint32_t i) { return DiffColor(storage::CompareNode(diff, i, normalized)); };
  style.tooltip = [&](uint32_t i) {
    const storage::NodeChange c = storage::CompareNode(diff, i, normalized);
    std::string text = absl::StrCat(tree.Label(i), ": base ", storage::FormatValue(sample_type, c.base), " (",
                                    Percent(c.base_share), "), target ", storage::FormatValue(sample_type, c.target),
                                    " (", Percent(c.target_share), "), change ", c.change >= 0 ? "+" : "",
                                    Percent(c.change));
    if (c.added) text += ", new";
    if (c.removed) text += ", gone";
    if (c.significant) absl::StrAppend(&text, ", significant (z ", absl::SixDigits(c.z), ")");
    return text;
  };
  return RenderFlameGraphSvg(tree, options, style);
}

std::string DiffJson(const storage::DiffTree& diff, bool normalized) {
  nlohmann::ordered_json out;
  const storage::SampleType& type = diff.sample_type.type;
  out["sample_type"] = type.type;
  out["unit"] = type.unit;
  out["normalized"] = normalized;
  out["test"] = "two-proportion z-test on sample counts, significant at |z| >= 3.29 (two-sided p < 0.001)";
  out["base"] = {{"total", diff.base_total}, {"samples", diff.base_events}};
  out["target"] = {{"total", diff.target_total}, {"samples", diff.target_events}};
  nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
  storage::ForEachPath(diff.tree, {}, [&](uint32_t i, const std::string& path) {
    const storage::NodeChange c = storage::CompareNode(diff, i, normalized);
    nodes.push_back({{"stack", path},
                     {"base_self", diff.base[i].self},
                     {"target_self", diff.target[i].self},
                     {"base_total", c.base},
                     {"target_total", c.target},
                     {"base_share", c.base_share},
                     {"target_share", c.target_share},
                     {"change", c.change},
                     {"z", c.z},
                     {"significant", c.significant},
                     {"status", c.added ? "new" : c.removed ? "gone" : "both"}});
  });
  out["nodes"] = std::move(nodes);
  return out.dump(1) + "\n";
}

std::string GzipCompress(std::string_view data) {
  z_stream zs{};
  deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out;
  out.resize(deflateBound(&zs, static_cast<uLong>(data.size())) + 64);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

absl::StatusOr<std::string> ExportSlice(const std::shared_ptr<const ProfileSlice>& slice,
                                        const ExportOptions& options) {
  if (slice == nullptr) return absl::InvalidArgumentError("no profile data to export");
  // pprof and OTLP write stacks, so transformed stacks become a slice of
  // their own (folded and svg build their tree with the transforms).
  std::shared_ptr<const ProfileSlice> stacks_slice = slice;
  if (!options.tree.transforms.empty()) {
    stacks_slice = storage::SliceOfStacks(storage::StacksFor(slice, options.tree));
  }
  switch (options.format) {
    case ExportFormat::kOtlp: {
      std::string bytes;
      if (!BuildOtlpRequest(*stacks_slice).SerializeToString(&bytes)) {
        return absl::InternalError("OTLP export: message too large to serialize (2 GiB limit)");
      }
      return GzipCompress(bytes);
    }
    case ExportFormat::kPprof: {
      std::string bytes;
      if (!BuildPprofProfile(*stacks_slice).SerializeToString(&bytes)) {
        return absl::InternalError("pprof export: message too large to serialize (2 GiB limit)");
      }
      return GzipCompress(bytes);
    }
    case ExportFormat::kFolded:
      return FoldedText(slice, options);
    case ExportFormat::kSvg:
      return FlameGraphSvg(storage::BuildFlameTree(slice, options.tree), options);
  }
  return absl::InvalidArgumentError("unknown export format");
}

}  // namespace kiln::capture
