// Tests for NormalizeExportRequest: shapes, inline expansion, attribute
// merging, frame types, and every validation error with its message.
#include "ingest/otlp_normalizer.h"

#include <doctest/doctest.h>

#include <functional>
#include <random>
#include <string>

#include "google/protobuf/stubs/logging.h"
#include "ingest/message_text.h"
#include "ingest/otlp_request_builder.h"

namespace kiln::ingest {
namespace {

using storage::FrameType;
namespace collector = opentelemetry::proto::collector::profiles::v1development;
namespace common = opentelemetry::proto::common::v1;

// One line per sample: "<type/unit> t=<ns> v=<value> <root;...;leaf> {k=v,...}".
// Inlined frames carry a trailing '*'.
std::string Print(const NormalizeResult& r) {
  const storage::ProfileDictionary& d = r.batch.dict;
  std::string out;
  for (const storage::Sample& s : r.batch.samples) {
    CatAppend(&out, storage::SampleTypeName(d.sample_types[s.sample_type].type), " t=", s.time_ns, " v=", s.value, " ");
    bool first = true;
    for (uint32_t f : d.Stack(s.stack)) {
      if (!first) out += ';';
      first = false;
      out += storage::FrameLabel(d, f);
      if (d.frames[f].inlined) out += '*';
    }
    out += " {";
    first = true;
    for (const storage::Attribute& a : d.AttributeSet(s.attribute_set)) {
      if (!first) out += ',';
      first = false;
      CatAppend(&out, d.strings[a.key], "=", d.strings[a.value]);
    }
    out += "}\n";
  }
  return out;
}

// A small agent-like request: one process, one on-CPU profile, two stacks.
struct Fixture {
  OtlpRequestBuilder b;
  int32_t exe, libc, vmlinux;
  int32_t loc_main, loc_work, loc_kernel, loc_py;
  int32_t stack_a, stack_b;
  int32_t thread_name, thread_id;

  Fixture() {
    exe = b.Mapping("/usr/bin/app", "0123456789ABCDEF0123456789abcdef");
    libc = b.Mapping("/lib/libc.so.6");
    vmlinux = b.Mapping("vmlinux");
    loc_main = b.Location(exe, 0x1000, {{"main", "app.c", 10}});
    loc_work = b.Location(libc, 0x2000, {});
    loc_kernel = b.Location(vmlinux, 0xffff0000, {{"do_syscall_64"}}, "kernel");
    loc_py = b.Location(0, 0, {{"handler", "app.py", 42}}, "cpython");
    stack_a = b.Stack({loc_kernel, loc_work, loc_main});
    stack_b = b.Stack({loc_py, loc_main});
    thread_name = b.StringAttribute("thread.name", "worker");
    thread_id = b.IntAttribute("thread.id", 77);
  }
};

TEST_CASE("agent-shaped on-CPU request: root-first stacks, merged attributes, executables") {
  Fixture f;
  auto* rp = f.b.Resource({{"process.pid", "1234"}, {"service.name", "svc"}});
  auto* p = f.b.AddProfile(rp);
  OtlpRequestBuilder::AddSample(p, f.stack_a, {f.thread_name, f.thread_id}, {100, 200});
  OtlpRequestBuilder::AddSample(p, f.stack_b, {f.thread_name}, {300});

  NormalizeResult r = NormalizeExportRequest(f.b.request);
  CHECK(r.accepted_profiles == 1);
  CHECK(r.rejected_profiles == 0);
  CHECK(r.error_message.empty());
  CHECK(Print(r) ==
        "samples/count t=100 v=1 main;libc.so.6+0x2000;do_syscall_64 "
        "{process.pid=1234,service.name=svc,thread.id=77,thread.name=worker}\n"
        "samples/count t=200 v=1 main;libc.so.6+0x2000;do_syscall_64 "
        "{process.pid=1234,service.name=svc,thread.id=77,thread.name=worker}\n"
        "samples/count t=300 v=1 main;handler {process.pid=1234,service.name=svc,thread.name=worker}\n");

  const storage::ProfileDictionary& d = r.batch.dict;
  auto frames = d.Stack(r.batch.samples[0].stack);
  REQUIRE(frames.size() == 3);
  const storage::Frame& main_frame = d.frames[frames[0]];
  CHECK(main_frame.type == FrameType::kNative);
  CHECK(main_frame.address == 0x1000);
  CHECK(d.strings[main_frame.file] == "app.c");
  CHECK(main_frame.line == 10);
  const storage::Executable& exe = d.executables[main_frame.executable];
  CHECK(d.strings[exe.file_name] == "/usr/bin/app");
  CHECK(d.strings[exe.htlhash] == "0123456789abcdef0123456789abcdef");  // lowercased
  CHECK(d.frames[frames[2]].type == FrameType::kKernel);
  auto py = d.Stack(r.batch.samples[2].stack);
  CHECK(d.frames[py[1]].type == FrameType::kPython);
  CHECK(d.frames[py[1]].executable == 0);
  // Same stack and attributes: one batch stack, one attribute set.
  CHECK(r.batch.samples[0].stack == r.batch.samples[1].stack);
  CHECK(r.batch.samples[0].attribute_set == r.batch.samples[1].attribute_set);
  CHECK(d.StackCount() == 3);  // empty + 2
}

TEST_CASE("inline expansion: outermost line first, inner lines marked inlined") {
  OtlpRequestBuilder b;
  int32_t m = b.Mapping("/bin/x");
  // OTLP: lines innermost first; `outer` is the real function.
  int32_t loc = b.Location(m, 0x42, {{"inner", "x.h", 3}, {"middle", "x.h", 7}, {"outer", "x.c", 9}});
  int32_t root = b.Location(m, 0x10, {{"start"}});
  int32_t stack = b.Stack({loc, root});
  auto* p = b.AddProfile(b.Resource({}));
  OtlpRequestBuilder::AddSample(p, stack, {}, {5});
  NormalizeResult r = NormalizeExportRequest(b.request);
  CHECK(Print(r) == "samples/count t=5 v=1 start;outer;middle*;inner* {}\n");
  auto frames = r.batch.dict.Stack(r.batch.samples[0].stack);
  CHECK(r.batch.dict.frames[frames[1]].line == 9);
  CHECK(r.batch.dict.frames[frames[3]].line == 3);
  CHECK(r.batch.dict.frames[frames[3]].address == 0x42);
}

TEST_CASE("the three sample shapes") {
  Fixture f;
  auto* rp = f.b.Resource({});
  auto* on = f.b.AddProfile(rp);
  OtlpRequestBuilder::AddSample(on, f.stack_b, {}, {10, 20, 30});  // timestamps only
  auto* agg = f.b.AddProfile(rp, "samples", "count", "", "", 5000);
  OtlpRequestBuilder::AddSample(agg, f.stack_b, {}, {}, {17});  // one value, profile time
  auto* off = f.b.AddProfile(rp, "off_cpu", "nanoseconds", "", "");
  OtlpRequestBuilder::AddSample(off, f.stack_b, {}, {40, 50}, {1000, 2000});  // value per ts
  NormalizeResult r = NormalizeExportRequest(f.b.request);
  CHECK(r.accepted_profiles == 3);
  CHECK(Print(r) ==
        "samples/count t=10 v=1 main;handler {}\n"
        "samples/count t=20 v=1 main;handler {}\n"
        "samples/count t=30 v=1 main;handler {}\n"
        "samples/count t=5000 v=17 main;handler {}\n"
        "off_cpu/nanoseconds t=40 v=1000 main;handler {}\n"
        "off_cpu/nanoseconds t=50 v=2000 main;handler {}\n");
}

TEST_CASE("a profile that says its sampling probability is scaled to an estimate of the whole") {
  Fixture f;
  auto* rp = f.b.Resource({});
  auto* off = f.b.AddProfile(rp, "off_cpu", "nanoseconds", "", "");
  OtlpRequestBuilder::AnyValue p;
  p.set_double_value(0.1);  // kiln-agent -off-cpu-threshold 0.1
  off->add_attribute_indices(f.b.Attribute("kiln.sampling.probability", p));
  OtlpRequestBuilder::AddSample(off, f.stack_b, {}, {40, 50}, {1000, 2001});
  // The same without it: kept as sent.
  auto* plain = f.b.AddProfile(rp, "off_cpu", "nanoseconds", "", "");
  OtlpRequestBuilder::AddSample(plain, f.stack_b, {}, {60}, {1000});
  // Nonsense probabilities (0, 1e-9, above 1, a string) scale nothing.
  for (double bad : {0.0, 1e-9, 1.5}) {
    auto* odd = f.b.AddProfile(rp, "off_cpu", "nanoseconds", "", "");
    OtlpRequestBuilder::AnyValue v;
    v.set_double_value(bad);
    odd->add_attribute_indices(f.b.Attribute("kiln.sampling.probability", v));
    OtlpRequestBuilder::AddSample(odd, f.stack_b, {}, {70}, {5});
  }
  NormalizeResult r = NormalizeExportRequest(f.b.request);
  REQUIRE(r.batch.samples.size() == 6);
  CHECK(r.batch.samples[0].value == 10000);
  CHECK(r.batch.samples[1].value == 20010);
  CHECK(r.batch.samples[2].value == 1000);
  for (int i = 3; i < 6; ++i) CHECK(r.batch.samples[i].value == 5);
  // The probability stays on the scaled samples, so the window can say so.
  CHECK(r.batch.dict.AttributeValue(r.batch.samples[0].attribute_set, "kiln.sampling.probability") == "0.1");
  CHECK(r.batch.dict.AttributeValue(r.batch.samples[2].attribute_set, "kiln.sampling.probability").empty());
}

TEST_CASE("sample types are kept as sent, with their period; unknown ones are not folded together") {
  struct Case {
    const char *type, *unit, *ptype, *punit;
  };
  const Case cases[] = {
      {"samples", "count", "cpu", "nanoseconds"}, {"samples", "count", "", ""},
      {"off_cpu", "nanoseconds", "", ""},          {"sched_off_cpu", "count", "", ""},
      {"events", "count", "", ""},                 {"alloc_space", "bytes", "space", "bytes"},
      {"gc_pause", "milliseconds", "", ""},
  };
  for (const Case& c : cases) {
    CAPTURE(c.type);
    Fixture f;
    auto* p = f.b.AddProfile(f.b.Resource({}), c.type, c.unit, c.ptype, c.punit);
    p->set_period(4096);
    OtlpRequestBuilder::AddSample(p, f.stack_a, {}, {1});
    NormalizeResult r = NormalizeExportRequest(f.b.request);
    REQUIRE(r.batch.samples.size() == 1);
    const storage::SampleTypeInfo& t = r.batch.dict.sample_types[r.batch.samples[0].sample_type];
    CHECK(t.type == storage::SampleType{c.type, c.unit});
    CHECK(t.period_type == c.ptype);
    CHECK(t.period_unit == c.punit);
    CHECK(t.period == 4096);
  }
  // Two unknown types in one request stay two types.
  Fixture f;
  OtlpRequestBuilder::AddSample(f.b.AddProfile(f.b.Resource({}), "gc_pause", "milliseconds", "", ""), f.stack_a,
                                {}, {3});
  OtlpRequestBuilder::AddSample(f.b.AddProfile(f.b.Resource({}), "alloc_space", "bytes", "", ""), f.stack_a, {},
                                {4096});
  NormalizeResult r = NormalizeExportRequest(f.b.request);
  REQUIRE(r.batch.samples.size() == 2);
  CHECK(r.batch.samples[0].sample_type != r.batch.samples[1].sample_type);
}

TEST_CASE("attribute keys and values by string-table reference give the same batch as inline ones") {
  Fixture f;
  auto* rp = f.b.Resource({{"process.pid", "1234"}, {"service.name", "svc"}, {"container.id", "c0ffee"}});
  OtlpRequestBuilder::AnyValue list;
  list.mutable_array_value()->add_values()->set_string_value("x");
  list.mutable_array_value()->add_values()->set_int_value(2);
  auto* nested = list.mutable_array_value()->add_values()->mutable_kvlist_value()->add_values();
  nested->set_key("k");
  nested->mutable_value()->set_string_value("v");
  const int32_t list_attr = f.b.Attribute("custom.list", list);
  auto* p = f.b.AddProfile(rp);
  auto* scope_attr = rp->mutable_scope_profiles(0)->mutable_scope()->add_attributes();
  scope_attr->set_key("scope.flavour");
  scope_attr->mutable_value()->set_string_value("vanilla");
  OtlpRequestBuilder::AddSample(p, f.stack_a, {f.thread_name, f.thread_id, list_attr}, {100, 200});
  OtlpRequestBuilder::AddSample(p, f.stack_b, {f.thread_name}, {300});

  collector::ExportProfilesServiceRequest by_reference = f.b.request;
  ToStringReferences(&by_reference);
  // The re-encoding really uses the v1.10 fields: no inline key is left.
  REQUIRE(by_reference.resource_profiles(0).resource().attributes(0).key().empty());
  REQUIRE(by_reference.resource_profiles(0).resource().attributes(0).key_strindex() > 0);
  REQUIRE(by_reference.dictionary().attribute_table(f.thread_name).value().value_case() ==
          common::AnyValue::kStringValueStrindex);
  // ... and survives the wire.
  collector::ExportProfilesServiceRequest decoded;
  REQUIRE(decoded.ParseFromString(by_reference.SerializeAsString()));

  NormalizeResult inline_form = NormalizeExportRequest(f.b.request);
  NormalizeResult reference_form = NormalizeExportRequest(decoded);
  CHECK(reference_form.rejected_profiles == 0);
  CHECK(Print(inline_form) ==
        "samples/count t=100 v=1 main;libc.so.6+0x2000;do_syscall_64 "
        "{container.id=c0ffee,custom.list=[\"x\",2,{\"k\":\"v\"}],process.pid=1234,scope.flavour=vanilla,"
        "service.name=svc,thread.id=77,thread.name=worker}\n"
        "samples/count t=200 v=1 main;libc.so.6+0x2000;do_syscall_64 "
        "{container.id=c0ffee,custom.list=[\"x\",2,{\"k\":\"v\"}],process.pid=1234,scope.flavour=vanilla,"
        "service.name=svc,thread.id=77,thread.name=worker}\n"
        "samples/count t=300 v=1 main;handler {container.id=c0ffee,process.pid=1234,scope.flavour=vanilla,"
        "service.name=svc,thread.name=worker}\n");
  CHECK(Print(reference_form) == Print(inline_form));
  // Mapping attributes (build ids) and location attributes (frame types)
  // resolve too.
  const auto& d = reference_form.batch.dict;
  REQUIRE(d.executables.size() == inline_form.batch.dict.executables.size());
  for (size_t i = 0; i < d.executables.size(); ++i) {
    CHECK(d.strings[d.executables[i].htlhash] ==
          inline_form.batch.dict.strings[inline_form.batch.dict.executables[i].htlhash]);
  }
  for (size_t i = 0; i < d.frames.size(); ++i) CHECK(d.frames[i].type == inline_form.batch.dict.frames[i].type);
}

TEST_CASE("string-table references out of range reject the profile by name, the others stay") {
  for (int where = 0; where < 4; ++where) {
    CAPTURE(where);
    Fixture f;
    auto* bad_rp = f.b.Resource({{"process.pid", "1"}});
    auto* good_rp = f.b.Resource({{"process.pid", "2"}});
    int32_t bad_attr = f.b.StringAttribute("thread.name", "bad");
    OtlpRequestBuilder::AddSample(f.b.AddProfile(bad_rp), f.stack_a, {bad_attr}, {1});
    OtlpRequestBuilder::AddSample(f.b.AddProfile(good_rp), f.stack_b, {}, {2});
    const int32_t past = f.b.request.dictionary().string_table_size() + 5;
    std::string expected;
    auto* resource_kv = f.b.request.mutable_resource_profiles(0)->mutable_resource()->mutable_attributes(0);
    switch (where) {
      case 0:
        resource_kv->clear_key();
        resource_kv->set_key_strindex(past);
        expected = "resource_profiles[0].scope_profiles[0].profiles[0] (its resource.attributes[0].key_strindex";
        break;
      case 1:
        resource_kv->mutable_value()->set_string_value_strindex(-3);
        expected = "(its resource.attributes[0].value.string_value_strindex -3";
        break;
      case 2:
        f.b.request.mutable_dictionary()->mutable_attribute_table(bad_attr)->mutable_value()->set_string_value_strindex(
            past);
        expected = "dictionary.attribute_table[" + std::to_string(bad_attr) + "].value.string_value_strindex";
        break;
      case 3: {
        auto* scope_kv =
            f.b.request.mutable_resource_profiles(0)->mutable_scope_profiles(0)->mutable_scope()->add_attributes();
        scope_kv->set_key_strindex(past);
        expected = "(its scope.attributes[0].key_strindex";
        break;
      }
    }
    NormalizeResult r = NormalizeExportRequest(f.b.request);
    CHECK(r.accepted_profiles == 1);
    CHECK(r.rejected_profiles == 1);
    INFO(r.error_message);
    CHECK(r.error_message.find(expected) != std::string::npos);
    CHECK(r.error_message.find("out of range") != std::string::npos);
    CHECK(Print(r) == "samples/count t=2 v=1 main;handler {process.pid=2}\n");
  }
}

TEST_CASE("attributes: resource < profile < sample on key clash; values stringified") {
  OtlpRequestBuilder b;
  using AnyValue = OtlpRequestBuilder::AnyValue;
  AnyValue bytes, arr, kv, dbl, boolean;
  bytes.set_bytes_value(std::string("\x01\xab", 2));
  arr.mutable_array_value()->add_values()->set_string_value("a");
  arr.mutable_array_value()->add_values()->set_int_value(2);
  auto* e = kv.mutable_kvlist_value()->add_values();
  e->set_key("k");
  e->mutable_value()->set_bool_value(true);
  dbl.set_double_value(0.5);
  boolean.set_bool_value(false);
  int32_t a_bytes = b.Attribute("b", bytes);
  int32_t a_arr = b.Attribute("arr", arr);
  int32_t a_kv = b.Attribute("kv", kv);
  int32_t a_dbl = b.Attribute("d", dbl);
  int32_t a_bool = b.Attribute("flag", boolean);
  int32_t sample_host = b.StringAttribute("host.name", "from-sample");
  int32_t profile_host = b.StringAttribute("host.name", "from-profile");
  int32_t profile_env = b.StringAttribute("env", "from-profile");
  int32_t label = b.StringAttribute("process.context.label.user", "alice");
  int32_t stack = b.Stack({b.Location(0, 0, {{"f"}})});
  auto* rp = b.Resource({{"host.name", "from-resource"}, {"env", "from-resource"}, {"cpu", "x"}});
  auto* p = b.AddProfile(rp);
  p->add_attribute_indices(profile_host);
  p->add_attribute_indices(profile_env);
  OtlpRequestBuilder::AddSample(p, stack, {sample_host, a_bytes, a_arr, a_kv, a_dbl, a_bool, label}, {1});
  OtlpRequestBuilder::AddSample(p, stack, {}, {2});
  NormalizeResult r = NormalizeExportRequest(b.request);
  CHECK(Print(r) ==
        "samples/count t=1 v=1 f {arr=[\"a\",2],b=01ab,cpu=x,d=0.5,env=from-profile,flag=false,"
        "host.name=from-sample,kv={\"k\":true},process.context.label.user=alice}\n"
        "samples/count t=2 v=1 f {cpu=x,env=from-profile,host.name=from-profile}\n");
}

TEST_CASE("unknown frame type is kUnknown, not a rejection; links are kept") {
  OtlpRequestBuilder b;
  int32_t loc = b.Location(0, 0, {{"f"}}, "brainfuck");
  int32_t link = b.Link(std::string(16, '\x11'), std::string(8, '\x22'));
  auto* p = b.AddProfile(b.Resource({}));
  auto* s = OtlpRequestBuilder::AddSample(p, b.Stack({loc}), {}, {1});
  s->set_link_index(link);
  NormalizeResult r = NormalizeExportRequest(b.request);
  REQUIRE(r.accepted_profiles == 1);
  const auto& d = r.batch.dict;
  CHECK(d.frames[d.Stack(r.batch.samples[0].stack)[0]].type == FrameType::kUnknown);
  REQUIRE(r.batch.samples[0].link != 0);
  CHECK(d.links[r.batch.samples[0].link].trace_id == std::string(16, '\x11'));
  CHECK(d.links[r.batch.samples[0].link].span_id == std::string(8, '\x22'));
}

TEST_CASE("empty tables: index 0 is the empty element") {
  opentelemetry::proto::collector::profiles::v1development::ExportProfilesServiceRequest req;
  auto* p = req.add_resource_profiles()->add_scope_profiles()->add_profiles();
  p->add_samples()->add_timestamps_unix_nano(9);
  NormalizeResult r = NormalizeExportRequest(req);
  CHECK(r.accepted_profiles == 1);
  REQUIRE(r.batch.samples.size() == 1);
  CHECK(r.batch.samples[0].stack == 0);
  // No sample type at all: kept, under the empty type's name.
  CHECK(r.batch.dict.sample_types[r.batch.samples[0].sample_type].type == storage::SampleType{"", ""});
}

// Builds a request whose profile 0 is broken by `breaker` and profile 1 is
// fine; checks profile 1 survives and the message contains `expected`.
void CheckRejected(const std::function<void(Fixture&, OtlpRequestBuilder::Profile*)>& breaker,
                   const std::string& expected, bool hint = false) {
  Fixture f;
  auto* rp = f.b.Resource({{"process.pid", "1"}});
  auto* bad = f.b.AddProfile(rp);
  OtlpRequestBuilder::AddSample(bad, f.stack_a, {f.thread_name}, {1});
  breaker(f, bad);
  auto* good = f.b.AddProfile(rp);
  OtlpRequestBuilder::AddSample(good, f.stack_b, {f.thread_id}, {2, 3});
  NormalizeResult r = NormalizeExportRequest(f.b.request);
  CAPTURE(r.error_message);
  CHECK(r.rejected_profiles == 1);
  CHECK(r.accepted_profiles == 1);
  CHECK(r.error_message.find(expected) != std::string::npos);
  CHECK((r.error_message.find(kOlderLayoutHint) != std::string::npos) == hint);
  CHECK(r.batch.samples.size() == 2);
  for (const auto& s : r.batch.samples) CHECK(s.time_ns >= 2);
}

TEST_CASE("validation errors name the field path and the numbers") {
  using P = OtlpRequestBuilder::Profile;
  SUBCASE("sample stack_index") {
    CheckRejected([](Fixture&, P* p) { p->mutable_samples(0)->set_stack_index(4711); },
                  "resource_profiles[0].scope_profiles[0].profiles[0].samples[0].stack_index 4711 "
                  "out of range (stack_table has 3 entries)");
  }
  SUBCASE("negative stack_index") {
    CheckRejected([](Fixture&, P* p) { p->mutable_samples(0)->set_stack_index(-1); },
                  "samples[0].stack_index -1 out of range");
  }
  SUBCASE("stack location_indices") {
    CheckRejected(
        [](Fixture& f, P*) {
          f.b.request.mutable_dictionary()->mutable_stack_table(f.stack_a)->set_location_indices(1, 99);
        },
        "samples[0].stack_index 1: dictionary.stack_table[1].location_indices[1] 99 out of range "
        "(location_table has 5 entries)");
  }
  SUBCASE("location mapping_index") {
    CheckRejected(
        [](Fixture& f, P*) {
          f.b.request.mutable_dictionary()->mutable_location_table(f.loc_work)->set_mapping_index(8);
        },
        "dictionary.location_table[2].mapping_index 8 out of range (mapping_table has 4 entries)");
  }
  SUBCASE("line function_index") {
    CheckRejected(
        [](Fixture& f, P*) {
          f.b.request.mutable_dictionary()
              ->mutable_location_table(f.loc_kernel)
              ->mutable_lines(0)
              ->set_function_index(50);
        },
        "dictionary.location_table[3].lines[0].function_index 50 out of range (function_table has");
  }
  SUBCASE("function name_strindex") {
    CheckRejected(
        [](Fixture& f, P*) {
          int32_t fn = f.b.request.dictionary().location_table(f.loc_kernel).lines(0).function_index();
          f.b.request.mutable_dictionary()->mutable_function_table(fn)->set_name_strindex(100000);
        },
        ".name_strindex 100000 out of range (string_table has");
  }
  SUBCASE("mapping filename_strindex") {
    CheckRejected(
        [](Fixture& f, P*) {
          f.b.request.mutable_dictionary()->mutable_mapping_table(f.libc)->set_filename_strindex(-3);
        },
        "dictionary.mapping_table[2].filename_strindex -3 out of range");
  }
  SUBCASE("mapping attribute_indices") {
    CheckRejected(
        [](Fixture& f, P*) {
          f.b.request.mutable_dictionary()->mutable_mapping_table(f.vmlinux)->add_attribute_indices(777);
        },
        "dictionary.mapping_table[3].attribute_indices[0] 777 out of range (attribute_table has");
  }
  SUBCASE("location attribute_indices") {
    CheckRejected(
        [](Fixture& f, P*) {
          f.b.request.mutable_dictionary()->mutable_location_table(f.loc_work)->add_attribute_indices(555);
        },
        "dictionary.location_table[2].attribute_indices[1] 555 out of range");
  }
  SUBCASE("attribute key_strindex") {
    CheckRejected(
        [](Fixture& f, P*) {
          f.b.request.mutable_dictionary()->mutable_attribute_table(f.thread_name)->set_key_strindex(9999);
        },
        "samples[0].attribute_indices[0] 5: dictionary.attribute_table[5].key_strindex 9999 out of "
        "range");
  }
  SUBCASE("profile attribute_indices") {
    CheckRejected([](Fixture&, P* p) { p->add_attribute_indices(31337); },
                  "profiles[0].attribute_indices[0] 31337 out of range (attribute_table has");
  }
  SUBCASE("sample_type strindex") {
    CheckRejected([](Fixture&, P* p) { p->mutable_sample_type()->set_type_strindex(123456); },
                  "profiles[0].sample_type.type_strindex 123456 out of range");
  }
  SUBCASE("period_type strindex") {
    CheckRejected([](Fixture&, P* p) { p->mutable_period_type()->set_unit_strindex(-7); },
                  "profiles[0].period_type.unit_strindex -7 out of range");
  }
  SUBCASE("link_index") {
    CheckRejected([](Fixture&, P* p) { p->mutable_samples(0)->set_link_index(3); },
                  "samples[0].link_index 3 out of range (link_table has 1 entries)");
  }
  SUBCASE("value count differs from timestamp count") {
    CheckRejected(
        [](Fixture&, P* p) {
          p->mutable_samples(0)->add_values(1);
          p->mutable_samples(0)->add_values(2);
          p->mutable_samples(0)->add_timestamps_unix_nano(5);
          p->mutable_samples(0)->add_timestamps_unix_nano(6);
        },
        "samples[0] has 2 values but 3 timestamps_unix_nano");
  }
  SUBCASE("several values without timestamps") {
    CheckRejected(
        [](Fixture&, P* p) {
          p->mutable_samples(0)->clear_timestamps_unix_nano();
          p->mutable_samples(0)->add_values(1);
          p->mutable_samples(0)->add_values(2);
        },
        "samples[0] has 2 values but 0 timestamps_unix_nano");
  }
  SUBCASE("neither values nor timestamps") {
    CheckRejected([](Fixture&, P* p) { p->mutable_samples(0)->clear_timestamps_unix_nano(); },
                  "samples[0] has neither values nor timestamps_unix_nano");
  }
  SUBCASE("sample attribute index out of range: older layout hint") {
    CheckRejected([](Fixture&, P* p) { p->mutable_samples(0)->add_attribute_indices(5000); },
                  "samples[0].attribute_indices[1] 5000 out of range (attribute_table has 7 entries): "
                  "probably an older OTLP profiles version",
                  /*hint=*/true);
  }
}

TEST_CASE("a v1.9 sender decoded with the v1.10 layout is rejected with the hint") {
  // v1.9 Sample: stack_index=1, values=2, attribute_indices=3 (packed),
  // link_index=4, timestamps=5. Encode one by hand.
  Fixture f;
  auto* p = f.b.AddProfile(f.b.Resource({}));
  std::string v19;
  v19 += '\x08';  // field 1 varint: stack_index
  v19 += static_cast<char>(f.stack_a);
  v19 += "\x12\x01\x05";      // field 2 packed: values [5] (read as attribute_indices)
  v19 += "\x1a\x02\x01\x02";  // field 3 packed: attribute_indices [1,2]
  v19 += "\x29";              // field 5 fixed64
  v19.append("\x01\0\0\0\0\0\0\0", 8);
  REQUIRE(p->add_samples()->ParseFromString(v19));
  NormalizeResult r = NormalizeExportRequest(f.b.request);
  CHECK(r.rejected_profiles == 1);
  CHECK(r.error_message.find("samples[0] has fields with wire types the v1.10 layout does not use") !=
        std::string::npos);
  CHECK(r.error_message.find(kOlderLayoutHint) != std::string::npos);
}

TEST_CASE("unknown fields with new numbers are ignored (forward compatibility)") {
  Fixture f;
  auto* p = f.b.AddProfile(f.b.Resource({}));
  auto* s = OtlpRequestBuilder::AddSample(p, f.stack_a, {}, {1});
  s->GetReflection()->MutableUnknownFields(s)->AddVarint(9, 1);
  NormalizeResult r = NormalizeExportRequest(f.b.request);
  CHECK(r.accepted_profiles == 1);
}

TEST_CASE("dictionary entries only used by rejected profiles do not matter") {
  Fixture f;
  // A broken location nobody references.
  f.b.request.mutable_dictionary()->mutable_location_table(f.loc_py)->set_mapping_index(9999);
  // A stack and a string only the rejected profile uses.
  int32_t only_bad = f.b.Stack({f.b.Location(0, 0, {{"only_in_bad_profile"}})});
  auto* rp = f.b.Resource({});
  auto* bad = f.b.AddProfile(rp);
  OtlpRequestBuilder::AddSample(bad, only_bad, {}, {1});
  OtlpRequestBuilder::AddSample(bad, 9999, {}, {1});
  auto* good = f.b.AddProfile(rp);
  OtlpRequestBuilder::AddSample(good, f.stack_a, {}, {2});
  NormalizeResult r = NormalizeExportRequest(f.b.request);
  CHECK(r.accepted_profiles == 1);
  CHECK(r.rejected_profiles == 1);
  for (const std::string& s : r.batch.dict.strings) CHECK(s != "only_in_bad_profile");
  CHECK(r.batch.dict.StackCount() == 2);
}

TEST_CASE("many rejections: the first few reasons, then a count") {
  Fixture f;
  auto* rp = f.b.Resource({});
  for (int i = 0; i < 8; ++i) {
    OtlpRequestBuilder::AddSample(f.b.AddProfile(rp), 100 + i, {}, {1});
  }
  NormalizeResult r = NormalizeExportRequest(f.b.request);
  CHECK(r.rejected_profiles == 8);
  CHECK(r.error_message.find("profiles[4].samples[0].stack_index 104") != std::string::npos);
  CHECK(r.error_message.find("profiles[5]") == std::string::npos);
  CHECK(r.error_message.find("and 3 more rejected profiles") != std::string::npos);
}

// Every index in the batch points inside its table (what Store::Write
// requires of producers).
void CheckBatchIsConsistent(const storage::ProfileBatch& b) {
  const storage::ProfileDictionary& d = b.dict;
  REQUIRE(!d.strings.empty());
  REQUIRE(d.strings[0].empty());
  auto str_ok = [&](uint32_t i) { return i < d.strings.size(); };
  for (const storage::Executable& e : d.executables) {
    REQUIRE(str_ok(e.file_name));
    REQUIRE(str_ok(e.htlhash));
    REQUIRE(str_ok(e.gnu_build_id));
    REQUIRE(str_ok(e.go_build_id));
  }
  for (const storage::Frame& f : d.frames) {
    REQUIRE(str_ok(f.function));
    REQUIRE(str_ok(f.file));
    REQUIRE(f.executable < d.executables.size());
  }
  REQUIRE(d.stack_offsets.size() >= 2);
  for (size_t i = 1; i < d.stack_offsets.size(); ++i) REQUIRE(d.stack_offsets[i - 1] <= d.stack_offsets[i]);
  REQUIRE(d.stack_offsets.back() == d.stack_frames.size());
  for (uint32_t f : d.stack_frames) REQUIRE(f < d.frames.size());
  for (size_t i = 1; i < d.attribute_set_offsets.size(); ++i) {
    REQUIRE(d.attribute_set_offsets[i - 1] <= d.attribute_set_offsets[i]);
  }
  REQUIRE(d.attribute_set_offsets.back() == d.attributes.size());
  for (uint32_t set = 0; set < d.AttributeSetCount(); ++set) {
    std::string_view previous;
    bool first = true;
    for (const storage::Attribute& a : d.AttributeSet(set)) {
      REQUIRE(str_ok(a.key));
      REQUIRE(str_ok(a.value));
      if (!first) REQUIRE(previous < d.strings[a.key]);  // sorted, unique keys
      previous = d.strings[a.key];
      first = false;
    }
  }
  for (const storage::Sample& s : b.samples) {
    REQUIRE(s.stack < d.StackCount());
    REQUIRE(s.attribute_set < d.AttributeSetCount());
    REQUIRE(s.link < d.links.size());
  }
}

TEST_CASE("mutated requests: never a crash, always a consistent batch") {
  Fixture f;
  auto* rp = f.b.Resource({{"process.pid", "1"}, {"host.name", "h"}});
  for (int p = 0; p < 3; ++p) {
    auto* prof = f.b.AddProfile(rp);
    OtlpRequestBuilder::AddSample(prof, f.stack_a, {f.thread_name, f.thread_id}, {1, 2});
    OtlpRequestBuilder::AddSample(prof, f.stack_b, {f.thread_id}, {3}, {7});
  }
  const std::string valid = f.b.request.SerializeAsString();
  std::mt19937_64 rng(7);
  int decoded = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string bytes = valid;
    for (int flips = 1 + static_cast<int>(rng() % 6); flips > 0; --flips) {
      bytes[rng() % bytes.size()] = static_cast<char>(rng());
    }
    OtlpRequestBuilder::Request request;
    google::protobuf::LogSilencer quiet;  // mutated strings are often bad UTF-8
    if (!request.ParseFromString(bytes)) continue;
    ++decoded;
    NormalizeResult r = NormalizeExportRequest(request);
    CHECK(r.accepted_profiles + r.rejected_profiles >= 0);
    CheckBatchIsConsistent(r.batch);
  }
  MESSAGE(decoded, " of 3000 mutated requests decoded and normalized");
}

TEST_CASE("randomly broken indices: never a crash, always a consistent batch") {
  std::mt19937_64 rng(11);
  // Mostly small values (near the real table sizes), some wild ones.
  auto value = [&rng]() -> int32_t {
    switch (rng() % 4) {
      case 0:
        return -static_cast<int32_t>(rng() % 3);
      case 1:
        return static_cast<int32_t>(rng() % 1000000);
      default:
        return static_cast<int32_t>(rng() % 12);
    }
  };
  int accepted = 0, rejected = 0;
  for (int i = 0; i < 2000; ++i) {
    Fixture f;
    auto* rp = f.b.Resource({{"process.pid", "1"}});
    for (int p = 0; p < 3; ++p) {
      auto* prof = f.b.AddProfile(rp);
      OtlpRequestBuilder::AddSample(prof, f.stack_a, {f.thread_name, f.thread_id}, {1, 2});
      OtlpRequestBuilder::AddSample(prof, f.stack_b, {f.thread_id}, {3}, {7});
    }
    auto& req = f.b.request;
    auto* d = req.mutable_dictionary();
    for (int k = 1 + static_cast<int>(rng() % 3); k > 0; --k) {
      auto* prof = req.mutable_resource_profiles(0)->mutable_scope_profiles(0)->mutable_profiles(
          static_cast<int>(rng() % 3));
      auto* sample = prof->mutable_samples(static_cast<int>(rng() % 2));
      switch (rng() % 14) {
        case 0:
          sample->set_stack_index(value());
          break;
        case 1:
          sample->add_attribute_indices(value());
          break;
        case 2:
          sample->set_link_index(value());
          break;
        case 3:
          sample->add_values(value());
          break;
        case 4:
          sample->add_timestamps_unix_nano(rng());
          break;
        case 5:
          d->mutable_stack_table(static_cast<int>(rng() % d->stack_table_size()))
              ->add_location_indices(value());
          break;
        case 6:
          d->mutable_location_table(static_cast<int>(rng() % d->location_table_size()))
              ->set_mapping_index(value());
          break;
        case 7:
          d->mutable_location_table(static_cast<int>(rng() % d->location_table_size()))
              ->add_lines()
              ->set_function_index(value());
          break;
        case 8:
          d->mutable_location_table(static_cast<int>(rng() % d->location_table_size()))
              ->add_attribute_indices(value());
          break;
        case 9:
          d->mutable_function_table(static_cast<int>(rng() % d->function_table_size()))
              ->set_filename_strindex(value());
          break;
        case 10:
          d->mutable_mapping_table(static_cast<int>(rng() % d->mapping_table_size()))
              ->add_attribute_indices(value());
          break;
        case 11:
          d->mutable_attribute_table(static_cast<int>(rng() % d->attribute_table_size()))
              ->set_key_strindex(value());
          break;
        case 12:
          prof->add_attribute_indices(value());
          break;
        case 13:
          prof->mutable_period_type()->set_type_strindex(value());
          break;
      }
    }
    NormalizeResult r = NormalizeExportRequest(req);
    CHECK(r.accepted_profiles + r.rejected_profiles == 3);
    CHECK((r.rejected_profiles == 0) == r.error_message.empty());
    accepted += static_cast<int>(r.accepted_profiles);
    rejected += static_cast<int>(r.rejected_profiles);
    CheckBatchIsConsistent(r.batch);
  }
  MESSAGE(accepted, " profiles accepted, ", rejected, " rejected");
}

TEST_CASE("expansion limits: a few bytes may not ask for gigabytes") {
  SUBCASE("a stack deeper than the limit after inline expansion") {
    Fixture f;
    std::vector<OtlpRequestBuilder::LineSpec> lines(100, OtlpRequestBuilder::LineSpec("inlined"));
    int32_t fat = f.b.Location(0, 0, lines);
    int32_t deep = f.b.Stack(std::vector<int32_t>(1000, fat));  // 100,000 frames
    auto* rp = f.b.Resource({});
    OtlpRequestBuilder::AddSample(f.b.AddProfile(rp), f.stack_a, {}, {1});
    OtlpRequestBuilder::AddSample(f.b.AddProfile(rp), deep, {}, {2});
    NormalizeResult r = NormalizeExportRequest(f.b.request);
    CHECK(r.accepted_profiles == 1);
    CHECK(r.error_message ==
          "resource_profiles[0].scope_profiles[0].profiles[1].samples[0].stack_index 3: "
          "dictionary.stack_table[3] expands to 100000 frames with inlined lines (limit 65536)");
    CheckBatchIsConsistent(r.batch);
  }
  SUBCASE("more samples than one request may carry") {
    Fixture f;
    auto* rp = f.b.Resource({});
    OtlpRequestBuilder::AddSample(f.b.AddProfile(rp), f.stack_a, {}, {1});
    auto* many = f.b.AddProfile(rp)->add_samples();
    many->set_stack_index(f.stack_a);
    many->mutable_timestamps_unix_nano()->Resize((8 << 20) + 1, 5);
    NormalizeResult r = NormalizeExportRequest(f.b.request);
    CHECK(r.accepted_profiles == 1);
    CHECK(r.error_message ==
          "resource_profiles[0].scope_profiles[0].profiles[1].samples: 8388609 events would take the "
          "request past 8388608 samples, the most kiln takes in one request; send smaller requests");
    CHECK(r.batch.samples.size() == 1);
  }
  SUBCASE("resource attributes copied into many attribute sets") {
    Fixture f;
    OtlpRequestBuilder::AddSample(f.b.AddProfile(f.b.Resource({{"a", "b"}})), f.stack_a, {}, {1});
    auto* rp = f.b.Resource({});
    for (int i = 0; i < 3000; ++i) {
      auto* kv = rp->mutable_resource()->add_attributes();
      kv->set_key("k" + std::to_string(i));
      kv->mutable_value()->set_int_value(i);
    }
    auto* bomb = f.b.AddProfile(rp);
    for (int i = 0; i < 3000; ++i) {
      OtlpRequestBuilder::AddSample(bomb, f.stack_a, {f.b.IntAttribute("x", i)}, {1});
    }
    NormalizeResult r = NormalizeExportRequest(f.b.request);
    CHECK(r.accepted_profiles == 1);
    CHECK(r.rejected_profiles == 1);
    CHECK(r.error_message.find("resource_profiles[1].scope_profiles[0].profiles[0]: the request "
                               "expands to more than kiln takes in one request") == 0);
    CHECK(r.batch.samples.size() == 1);
    CheckBatchIsConsistent(r.batch);
  }
}

}  // namespace
}  // namespace kiln::ingest

namespace kiln::ingest {

TEST_CASE("strings over the cap are cut at a UTF-8 boundary, marked and counted; short ones are untouched") {
  OtlpRequestBuilder b;
  int32_t m = b.Mapping("/bin/x");
  // 60 MiB of name, as a hostile sender sent; and a value whose cut would
  // fall inside a 3-byte character.
  const std::string huge(60 << 20, 'f');
  std::string accents = std::string(kMaxStringBytes - kTruncatedMarker.size() - 1, 'a');
  for (int i = 0; i < 100; ++i) accents += "\xE2\x82\xAC";  // the euro sign
  int32_t loc = b.Location(m, 0x42, {{huge, "x.c", 9}});
  int32_t stack = b.Stack({loc});
  auto* p = b.AddProfile(b.Resource({{"service.name", accents}, {"process.pid", "7"}}));
  OtlpRequestBuilder::AddSample(p, stack, {}, {5});
  NormalizeResult r = NormalizeExportRequest(b.request);
  REQUIRE(r.batch.samples.size() == 1);
  CHECK(r.strings_truncated == 2);
  size_t longest = 0;
  bool euro_cut_whole = false;
  for (const std::string& s : r.batch.dict.strings) {
    longest = std::max(longest, s.size());
    if (s.starts_with("aaa")) {
      // The cut backed up to before the first euro sign's first byte.
      euro_cut_whole = s == std::string(kMaxStringBytes - kTruncatedMarker.size() - 1, 'a') +
                                std::string(kTruncatedMarker);
    }
  }
  CHECK(longest <= kMaxStringBytes);
  CHECK(euro_cut_whole);
  const auto frames = r.batch.dict.Stack(r.batch.samples[0].stack);
  const std::string& name = r.batch.dict.strings[r.batch.dict.frames[frames[0]].function];
  CHECK(name.size() == kMaxStringBytes);
  CHECK(name.ends_with("ff...[truncated]"));
  // Everything else as sent.
  CHECK(r.batch.dict.strings[r.batch.dict.frames[frames[0]].file] == "x.c");
}

}  // namespace kiln::ingest
