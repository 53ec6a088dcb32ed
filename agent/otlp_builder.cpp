#include "otlp_builder.h"

#include <map>
#include <random>
#include <tuple>
#include <unordered_map>

namespace kiln::agent {
namespace {

namespace pb = opentelemetry::proto::profiles::v1development;
namespace common = opentelemetry::proto::common::v1;

// Interns everything a request's ProfilesDictionary holds. Each table starts
// with its empty element at index 0, as the spec's convention asks.
class DictionaryBuilder {
 public:
  explicit DictionaryBuilder(pb::ProfilesDictionary* dict) : dict_(dict) {
    dict_->add_string_table("");
    dict_->add_mapping_table();
    dict_->add_location_table();
    dict_->add_function_table();
    dict_->add_link_table();
    dict_->add_attribute_table();
    dict_->add_stack_table();
    strings_.emplace("", 0);
  }

  std::int32_t String(std::string_view s) {
    auto it = strings_.find(std::string(s));
    if (it != strings_.end()) return it->second;
    auto index = static_cast<std::int32_t>(dict_->string_table_size());
    dict_->add_string_table(std::string(s));
    strings_.emplace(std::string(s), index);
    return index;
  }

  std::int32_t StringAttribute(std::string_view key, std::string_view value) {
    auto k = std::make_tuple(String(key), std::string(value), std::int64_t{0}, false);
    auto it = attributes_.find(k);
    if (it != attributes_.end()) return it->second;
    auto index = static_cast<std::int32_t>(dict_->attribute_table_size());
    auto* kv = dict_->add_attribute_table();
    kv->set_key_strindex(std::get<0>(k));
    kv->mutable_value()->set_string_value(std::string(value));
    attributes_.emplace(std::move(k), index);
    return index;
  }

  std::int32_t IntAttribute(std::string_view key, std::int64_t value) {
    auto k = std::make_tuple(String(key), std::string(), value, true);
    auto it = attributes_.find(k);
    if (it != attributes_.end()) return it->second;
    auto index = static_cast<std::int32_t>(dict_->attribute_table_size());
    auto* kv = dict_->add_attribute_table();
    kv->set_key_strindex(std::get<0>(k));
    kv->mutable_value()->set_int_value(value);
    attributes_.emplace(std::move(k), index);
    return index;
  }

  std::int32_t MappingIndex(const std::shared_ptr<const Mapping>& m) {
    if (!m) return 0;
    auto it = mappings_.find(m.get());
    if (it != mappings_.end()) return it->second;
    auto index = static_cast<std::int32_t>(dict_->mapping_table_size());
    auto* out = dict_->add_mapping_table();
    out->set_memory_start(m->start);
    out->set_memory_limit(m->limit);
    out->set_file_offset(m->file_offset);
    out->set_filename_strindex(String(m->file->file_name));
    if (!m->file->htlhash.empty())
      out->add_attribute_indices(StringAttribute("process.executable.build_id.htlhash", m->file->htlhash));
    if (!m->file->gnu_build_id.empty())
      out->add_attribute_indices(StringAttribute("process.executable.build_id.gnu", m->file->gnu_build_id));
    mappings_.emplace(m.get(), index);
    return index;
  }

  std::int32_t FunctionIndex(std::string_view name, std::string_view file_name) {
    auto key = std::make_pair(String(name), String(file_name));
    auto it = functions_.find(key);
    if (it != functions_.end()) return it->second;
    auto index = static_cast<std::int32_t>(dict_->function_table_size());
    auto* f = dict_->add_function_table();
    f->set_name_strindex(key.first);
    f->set_system_name_strindex(key.first);
    f->set_filename_strindex(key.second);
    functions_.emplace(key, index);
    return index;
  }

  std::int32_t LocationIndex(const Frame& frame) {
    std::int32_t mapping = MappingIndex(frame.mapping);
    // A JIT address is named by the perf map of its process; the same
    // address in another process (or after its code was freed) is other code.
    // A Python frame's address is its code object: each line is a location.
    auto key = std::make_tuple(mapping, frame.address, frame.function + '\n' + frame.file, frame.type, frame.line);
    auto it = locations_.find(key);
    if (it != locations_.end()) return it->second;
    auto index = static_cast<std::int32_t>(dict_->location_table_size());
    auto* loc = dict_->add_location_table();
    loc->set_mapping_index(mapping);
    loc->set_address(frame.address);
    if (!frame.function.empty()) {
      auto* line = loc->add_lines();
      line->set_function_index(FunctionIndex(frame.function, frame.file));
      if (frame.line > 0) line->set_line(frame.line);
    }
    loc->add_attribute_indices(StringAttribute("profile.frame.type", FrameTypeName(frame.type)));
    locations_.emplace(std::move(key), index);
    return index;
  }

  std::int32_t StackIndex(const std::vector<std::int32_t>& locations) {
    auto it = stacks_.find(locations);
    if (it != stacks_.end()) return it->second;
    auto index = static_cast<std::int32_t>(dict_->stack_table_size());
    auto* s = dict_->add_stack_table();
    for (std::int32_t l : locations) s->add_location_indices(l);
    stacks_.emplace(locations, index);
    return index;
  }

 private:
  pb::ProfilesDictionary* dict_;
  std::unordered_map<std::string, std::int32_t> strings_;
  std::map<std::tuple<std::int32_t, std::string, std::int64_t, bool>, std::int32_t> attributes_;
  std::unordered_map<const Mapping*, std::int32_t> mappings_;
  std::map<std::pair<std::int32_t, std::int32_t>, std::int32_t> functions_;
  std::map<std::tuple<std::int32_t, std::uint64_t, std::string, FrameType, std::int64_t>, std::int32_t> locations_;
  std::map<std::vector<std::int32_t>, std::int32_t> stacks_;
};

void AddResourceString(google::protobuf::RepeatedPtrField<common::KeyValue>* attrs, std::string_view key,
                       std::string_view value) {
  auto* kv = attrs->Add();
  kv->set_key(std::string(key));
  kv->mutable_value()->set_string_value(std::string(value));
}

std::string RandomProfileId() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string id(16, '\0');
  for (int i = 0; i < 2; ++i) {
    std::uint64_t v = rng();
    for (int b = 0; b < 8; ++b) id[static_cast<std::size_t>(i * 8 + b)] = static_cast<char>(v >> (8 * b));
  }
  return id;
}

}  // namespace

ExportRequest BuildExportRequest(const ProfileBatch& batch, std::string_view agent_version) {
  ExportRequest request;
  DictionaryBuilder dict(request.mutable_dictionary());
  const std::int32_t samples_str = dict.String("samples");
  const std::int32_t count_str = dict.String("count");
  const std::int32_t cpu_str = dict.String("cpu");
  const std::int32_t ns_str = dict.String("nanoseconds");
  const std::int32_t off_cpu_str = dict.String("off_cpu");
  const std::int64_t period = batch.samples_per_second > 0 ? 1000000000LL / batch.samples_per_second : 0;
  // The off-CPU profiles' sampling probability, once in the table: every
  // off-CPU profile points at it (kiln scales by it; others see an
  // attribute).
  std::int32_t probability_attribute = 0;
  if (batch.off_cpu_probability > 0) {
    probability_attribute = request.dictionary().attribute_table_size();
    auto* kv = request.mutable_dictionary()->add_attribute_table();
    kv->set_key_strindex(dict.String(kSamplingProbabilityKey));
    kv->mutable_value()->set_double_value(batch.off_cpu_probability);
  }

  for (const ProcessProfile& process : batch.processes) {
    if (process.samples.empty() && process.off_cpu.empty()) continue;
    auto* rp = request.add_resource_profiles();
    auto* attrs = rp->mutable_resource()->mutable_attributes();
    {
      auto* kv = attrs->Add();
      kv->set_key("process.pid");
      kv->mutable_value()->set_int_value(process.pid);
    }
    AddResourceString(attrs, "process.executable.name", process.executable_name);
    if (!process.executable_path.empty())
      AddResourceString(attrs, "process.executable.path", process.executable_path);
    if (!process.container_id.empty()) AddResourceString(attrs, "container.id", process.container_id);
    if (!batch.host_name.empty()) AddResourceString(attrs, "host.name", batch.host_name);
    for (const auto& [key, value] : batch.resource_attributes) AddResourceString(attrs, key, value);

    auto* sp = rp->add_scope_profiles();
    sp->mutable_scope()->set_name(kAgentScopeName);
    sp->mutable_scope()->set_version(std::string(agent_version));
    // Process-local stack index -> dictionary stack index, built on demand.
    std::vector<std::int32_t> stack_map(process.stacks.size(), -1);
    std::vector<std::int32_t> locations;
    // One profile per sample type, as the OpenTelemetry eBPF profiler sends
    // them: samples/count (period cpu/nanoseconds) for the ticks, and
    // off_cpu/nanoseconds whose values are the times blocked.
    auto add_profile = [&](const std::vector<SampleGroup>& groups, std::int32_t type, std::int32_t unit,
                           bool with_period) {
      auto* profile = sp->add_profiles();
      profile->mutable_sample_type()->set_type_strindex(type);
      profile->mutable_sample_type()->set_unit_strindex(unit);
      if (with_period) {
        profile->mutable_period_type()->set_type_strindex(cpu_str);
        profile->mutable_period_type()->set_unit_strindex(ns_str);
        profile->set_period(period);
      }
      profile->set_time_unix_nano(batch.start_unix_ns);
      profile->set_duration_nano(
          batch.end_unix_ns > batch.start_unix_ns ? batch.end_unix_ns - batch.start_unix_ns : 0);
      profile->set_profile_id(RandomProfileId());
      for (const SampleGroup& group : groups) {
        if (group.stack < 0 || static_cast<std::size_t>(group.stack) >= process.stacks.size()) continue;
        std::int32_t& stack_index = stack_map[static_cast<std::size_t>(group.stack)];
        if (stack_index < 0) {
          locations.clear();
          for (const Frame& f : process.stacks[static_cast<std::size_t>(group.stack)].frames)
            locations.push_back(dict.LocationIndex(f));
          stack_index = dict.StackIndex(locations);
        }
        auto* sample = profile->add_samples();
        sample->set_stack_index(stack_index);
        sample->add_attribute_indices(dict.StringAttribute("thread.name", group.thread_name));
        sample->add_attribute_indices(dict.IntAttribute("thread.id", group.tid));
        sample->add_attribute_indices(dict.IntAttribute("cpu.logical_number", group.cpu));
        for (std::uint64_t ts : group.timestamps_unix_ns) sample->add_timestamps_unix_nano(ts);
        for (std::int64_t v : group.values) sample->add_values(v);
      }
    };
    if (!process.samples.empty()) add_profile(process.samples, samples_str, count_str, true);
    if (!process.off_cpu.empty()) {
      add_profile(process.off_cpu, off_cpu_str, ns_str, false);
      if (probability_attribute > 0)
        sp->mutable_profiles(sp->profiles_size() - 1)->add_attribute_indices(probability_attribute);
    }
  }
  return request;
}

}  // namespace kiln::agent
