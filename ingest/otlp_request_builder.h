// OtlpRequestBuilder: builds ExportProfilesServiceRequests the way an OTLP
// sender does (per-request dictionary, empty element 0 in every table,
// interned strings). For tests and benchmarks; not used by the receiver.
//
// Threads: one builder per thread. Lifetime: returned pointers point into
// `request` and live as long as the builder (until `request` is moved out).
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb.h"

namespace kiln::ingest {

class OtlpRequestBuilder {
 public:
  using Request = opentelemetry::proto::collector::profiles::v1development::ExportProfilesServiceRequest;
  using Profile = opentelemetry::proto::profiles::v1development::Profile;
  using Sample = opentelemetry::proto::profiles::v1development::Sample;
  using ResourceProfiles = opentelemetry::proto::profiles::v1development::ResourceProfiles;
  using AnyValue = opentelemetry::proto::common::v1::AnyValue;

  // One line of a location: a function and a source line.
  struct LineSpec {
    LineSpec(std::string_view function_name, std::string_view file_name = {}, int64_t line_number = 0)
        : function(function_name), file(file_name), line(line_number) {}
    std::string_view function;
    std::string_view file;
    int64_t line;
  };

  OtlpRequestBuilder() {
    auto* d = request.mutable_dictionary();
    d->add_string_table();  // ""
    strings_.emplace("", 0);
    d->add_mapping_table();
    d->add_location_table();
    d->add_function_table();
    d->add_link_table();
    d->add_attribute_table();
    d->add_stack_table();
  }

  int32_t String(std::string_view s) {
    auto it = strings_.find(absl::string_view(s.data(), s.size()));
    if (it != strings_.end()) return it->second;
    auto* d = request.mutable_dictionary();
    int32_t index = d->string_table_size();
    d->add_string_table(std::string(s));
    strings_.emplace(std::string(s), index);
    return index;
  }

  int32_t Attribute(std::string_view key, const AnyValue& value) {
    auto* d = request.mutable_dictionary();
    auto* a = d->add_attribute_table();
    a->set_key_strindex(String(key));
    *a->mutable_value() = value;
    return d->attribute_table_size() - 1;
  }
  int32_t StringAttribute(std::string_view key, std::string_view value) {
    std::string k = AttributeKey(key, value);
    auto it = string_attributes_.find(k);
    if (it != string_attributes_.end()) return it->second;
    AnyValue v;
    v.set_string_value(std::string(value));
    int32_t index = Attribute(key, v);
    string_attributes_.emplace(std::move(k), index);
    return index;
  }
  int32_t IntAttribute(std::string_view key, int64_t value) {
    AnyValue v;
    v.set_int_value(value);
    return Attribute(key, v);
  }

  int32_t Mapping(std::string_view filename, std::string_view htlhash = {}) {
    auto* d = request.mutable_dictionary();
    auto* m = d->add_mapping_table();
    m->set_filename_strindex(String(filename));
    if (!htlhash.empty()) {
      m->add_attribute_indices(StringAttribute("process.executable.build_id.htlhash", htlhash));
    }
    return d->mapping_table_size() - 1;
  }

  int32_t Function(std::string_view name, std::string_view file = {}) {
    auto* d = request.mutable_dictionary();
    auto* f = d->add_function_table();
    f->set_name_strindex(String(name));
    f->set_filename_strindex(String(file));
    return d->function_table_size() - 1;
  }

  // `lines` innermost first, as OTLP orders them.
  int32_t Location(int32_t mapping, uint64_t address, std::vector<LineSpec> lines,
                   std::string_view frame_type = "native") {
    std::vector<int32_t> functions;
    for (const LineSpec& l : lines) functions.push_back(Function(l.function, l.file));
    auto* d = request.mutable_dictionary();
    auto* loc = d->add_location_table();
    loc->set_mapping_index(mapping);
    loc->set_address(address);
    for (size_t i = 0; i < lines.size(); ++i) {
      auto* line = loc->add_lines();
      line->set_function_index(functions[i]);
      line->set_line(lines[i].line);
    }
    if (!frame_type.empty()) {
      loc->add_attribute_indices(StringAttribute("profile.frame.type", frame_type));
    }
    return d->location_table_size() - 1;
  }

  // Leaf first, as OTLP orders them.
  int32_t Stack(const std::vector<int32_t>& leaf_first_locations) {
    auto* d = request.mutable_dictionary();
    auto* s = d->add_stack_table();
    for (int32_t l : leaf_first_locations) s->add_location_indices(l);
    return d->stack_table_size() - 1;
  }

  int32_t Link(std::string trace_id, std::string span_id) {
    auto* d = request.mutable_dictionary();
    auto* l = d->add_link_table();
    l->set_trace_id(std::move(trace_id));
    l->set_span_id(std::move(span_id));
    return d->link_table_size() - 1;
  }

  ResourceProfiles* Resource(std::initializer_list<std::pair<std::string_view, std::string_view>> attrs) {
    auto* rp = request.add_resource_profiles();
    for (const auto& [k, v] : attrs) {
      auto* kv = rp->mutable_resource()->add_attributes();
      kv->set_key(std::string(k));
      kv->mutable_value()->set_string_value(std::string(v));
    }
    return rp;
  }

  Profile* AddProfile(ResourceProfiles* rp, std::string_view type = "samples",
                      std::string_view unit = "count", std::string_view period_type = "cpu",
                      std::string_view period_unit = "nanoseconds", uint64_t time_unix_nano = 0) {
    auto* scope = rp->scope_profiles_size() > 0 ? rp->mutable_scope_profiles(0) : rp->add_scope_profiles();
    auto* p = scope->add_profiles();
    p->mutable_sample_type()->set_type_strindex(String(type));
    p->mutable_sample_type()->set_unit_strindex(String(unit));
    if (!period_type.empty()) p->mutable_period_type()->set_type_strindex(String(period_type));
    if (!period_unit.empty()) p->mutable_period_type()->set_unit_strindex(String(period_unit));
    p->set_time_unix_nano(time_unix_nano);
    return p;
  }

  static Sample* AddSample(Profile* p, int32_t stack, std::vector<int32_t> attributes,
                           std::vector<uint64_t> timestamps, std::vector<int64_t> values = {}) {
    auto* s = p->add_samples();
    s->set_stack_index(stack);
    for (int32_t a : attributes) s->add_attribute_indices(a);
    for (uint64_t t : timestamps) s->add_timestamps_unix_nano(t);
    for (int64_t v : values) s->add_values(v);
    return s;
  }

  Request request;

 private:
  static std::string AttributeKey(std::string_view k, std::string_view v) {
    std::string s(k);
    s.push_back('\0');
    s.append(v);
    return s;
  }
  absl::flat_hash_map<std::string, int32_t> strings_;
  absl::flat_hash_map<std::string, int32_t> string_attributes_;
};

// Re-encodes every attribute key and string value of `request` the way the
// Collector's encoders write them since OTLP v1.10: as references into the
// dictionary's string table (KeyValue.key_strindex, AnyValue.
// string_value_strindex), nested values included.
inline void ToStringReferences(OtlpRequestBuilder::Request* request) {
  auto* strings = request->mutable_dictionary()->mutable_string_table();
  auto index_of = [&](const std::string& text) {
    for (int i = 0; i < strings->size(); ++i) {
      if (strings->Get(i) == text) return i;
    }
    *strings->Add() = text;
    return strings->size() - 1;
  };
  std::function<void(OtlpRequestBuilder::AnyValue*)> value = [&](OtlpRequestBuilder::AnyValue* v) {
    if (v->value_case() == OtlpRequestBuilder::AnyValue::kStringValue) {
      v->set_string_value_strindex(index_of(v->string_value()));  // clears string_value (oneof)
    } else if (v->value_case() == OtlpRequestBuilder::AnyValue::kArrayValue) {
      for (auto& e : *v->mutable_array_value()->mutable_values()) value(&e);
    } else if (v->value_case() == OtlpRequestBuilder::AnyValue::kKvlistValue) {
      for (auto& kv : *v->mutable_kvlist_value()->mutable_values()) {
        kv.set_key_strindex(index_of(kv.key()));
        kv.clear_key();
        value(kv.mutable_value());
      }
    }
  };
  auto key_values = [&](google::protobuf::RepeatedPtrField<opentelemetry::proto::common::v1::KeyValue>* kvs) {
    for (auto& kv : *kvs) {
      kv.set_key_strindex(index_of(kv.key()));
      kv.clear_key();
      value(kv.mutable_value());
    }
  };
  for (auto& rp : *request->mutable_resource_profiles()) {
    key_values(rp.mutable_resource()->mutable_attributes());
    for (auto& sp : *rp.mutable_scope_profiles()) key_values(sp.mutable_scope()->mutable_attributes());
  }
  for (auto& a : *request->mutable_dictionary()->mutable_attribute_table()) value(a.mutable_value());
}

}  // namespace kiln::ingest
