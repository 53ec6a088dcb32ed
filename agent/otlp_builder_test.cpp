#include "otlp_builder.h"

#include <doctest/doctest.h>

#include "otlp_inspect.h"

using namespace kiln::agent;

namespace {

std::shared_ptr<const Mapping> MakeMapping(const std::string& name, const std::string& htl,
                                           const std::string& gnu) {
  auto file = std::make_shared<ExecutableFile>(ExecutableFile{"/usr/bin/" + name, name, htl, gnu});
  auto m = std::make_shared<Mapping>();
  m->start = 0x400000;
  m->limit = 0x500000;
  m->file_offset = 0x1000;
  m->file = file;
  return m;
}

ProfileBatch SampleBatch() {
  ProfileBatch b;
  b.start_unix_ns = 1'700'000'000'000'000'000;
  b.end_unix_ns = b.start_unix_ns + 5'000'000'000;
  b.samples_per_second = 20;
  b.host_name = "box";
  b.resource_attributes = {{"service.name", "shop"}};
  auto app = MakeMapping("app", "0123456789abcdef0123456789abcdef", "beef");
  auto vmlinux = std::make_shared<Mapping>();
  vmlinux->file = std::make_shared<ExecutableFile>(ExecutableFile{"vmlinux", "vmlinux", "", ""});
  for (std::uint32_t pid : {100u, 200u}) {
    ProcessProfile p;
    p.pid = pid;
    p.executable_name = "app";
    p.executable_path = "/usr/bin/app";
    if (pid == 200) p.container_id = std::string(64, 'a');
    p.stacks.push_back(Stack{{Frame{FrameType::kKernel, 0xffffffff81001000, vmlinux, "do_syscall_64"},
                              Frame{FrameType::kNative, 0x1234, app, "leaf"},
                              Frame{FrameType::kNative, 0x1100, app, "main"}}});
    p.stacks.push_back(Stack{{Frame{FrameType::kNative, 0x9999, nullptr, ""}}});
    p.samples.push_back(SampleGroup{0, pid, 1, "worker", {b.start_unix_ns + 10, b.start_unix_ns + 20}});
    p.samples.push_back(SampleGroup{1, pid + 1, 0, "other", {b.start_unix_ns + 30}});
    b.processes.push_back(std::move(p));
  }
  return b;
}

std::string Str(const ExportRequest& r, int index) { return r.dictionary().string_table(index); }

}  // namespace

TEST_CASE("otlp builder: dictionary invariants") {
  ExportRequest r = BuildExportRequest(SampleBatch(), "1.2.3");
  auto problems = kiln::agent::testing::CheckExportRequest(r);
  for (const auto& p : problems) INFO(p);
  CHECK(problems.empty());
  const auto& d = r.dictionary();
  // Shared dictionary: two processes with the same stacks share entries.
  CHECK(d.stack_table_size() == 3);     // empty + 2
  CHECK(d.mapping_table_size() == 3);   // empty + app + vmlinux
  CHECK(d.location_table_size() == 5);  // empty + 4
  CHECK(Str(r, 0).empty());
}

TEST_CASE("otlp builder: the OpenTelemetry profiler's encoding") {
  ExportRequest r = BuildExportRequest(SampleBatch(), "1.2.3");
  REQUIRE(r.resource_profiles_size() == 2);
  const auto& rp = r.resource_profiles(1);
  std::map<std::string, std::string> attrs;
  for (const auto& kv : rp.resource().attributes())
    attrs[kv.key()] =
        kv.value().has_int_value() ? std::to_string(kv.value().int_value()) : kv.value().string_value();
  CHECK(attrs["process.pid"] == "200");
  CHECK(attrs["process.executable.name"] == "app");
  CHECK(attrs["process.executable.path"] == "/usr/bin/app");
  CHECK(attrs["container.id"] == std::string(64, 'a'));
  CHECK(attrs["host.name"] == "box");
  CHECK(attrs["service.name"] == "shop");
  CHECK(r.resource_profiles(0).resource().attributes_size() == 5);  // no container.id

  REQUIRE(rp.scope_profiles_size() == 1);
  CHECK(rp.scope_profiles(0).scope().name() == "kiln-agent");
  const auto& p = rp.scope_profiles(0).profiles(0);
  CHECK(Str(r, p.sample_type().type_strindex()) == "samples");
  CHECK(Str(r, p.sample_type().unit_strindex()) == "count");
  CHECK(Str(r, p.period_type().type_strindex()) == "cpu");
  CHECK(Str(r, p.period_type().unit_strindex()) == "nanoseconds");
  CHECK(p.period() == 50'000'000);
  CHECK(p.duration_nano() == 5'000'000'000);
  CHECK(p.profile_id().size() == 16);
  REQUIRE(p.samples_size() == 2);
  const auto& s = p.samples(0);
  CHECK(s.values_size() == 0);
  CHECK(s.timestamps_unix_nano_size() == 2);
  std::map<std::string, std::string> sample_attrs;
  for (int a : s.attribute_indices()) {
    const auto& kv = r.dictionary().attribute_table(a);
    sample_attrs[Str(r, kv.key_strindex())] =
        kv.value().has_int_value() ? std::to_string(kv.value().int_value()) : kv.value().string_value();
  }
  CHECK(sample_attrs["thread.name"] == "worker");
  CHECK(sample_attrs["thread.id"] == "200");
  CHECK(sample_attrs["cpu.logical_number"] == "1");

  // Leaf first: kernel frame, then leaf, then main.
  const auto& stack = r.dictionary().stack_table(s.stack_index());
  REQUIRE(stack.location_indices_size() == 3);
  const auto& kernel = r.dictionary().location_table(stack.location_indices(0));
  const auto& leaf = r.dictionary().location_table(stack.location_indices(1));
  auto frame_type = [&](const auto& loc) {
    return r.dictionary().attribute_table(loc.attribute_indices(0)).value().string_value();
  };
  CHECK(frame_type(kernel) == "kernel");
  CHECK(frame_type(leaf) == "native");
  CHECK(leaf.address() == 0x1234);
  CHECK(Str(r, r.dictionary().function_table(leaf.lines(0).function_index()).name_strindex()) == "leaf");
  const auto& mapping = r.dictionary().mapping_table(leaf.mapping_index());
  CHECK(Str(r, mapping.filename_strindex()) == "app");
  CHECK(mapping.memory_start() == 0x400000);
  std::map<std::string, std::string> mapping_attrs;
  for (int a : mapping.attribute_indices()) {
    const auto& kv = r.dictionary().attribute_table(a);
    mapping_attrs[Str(r, kv.key_strindex())] = kv.value().string_value();
  }
  CHECK(mapping_attrs["process.executable.build_id.htlhash"] == "0123456789abcdef0123456789abcdef");
  CHECK(mapping_attrs["process.executable.build_id.gnu"] == "beef");

  // A frame outside any file has the empty mapping and no line.
  const auto& lone = r.dictionary().location_table(
      r.dictionary().stack_table(p.samples(1).stack_index()).location_indices(0));
  CHECK(lone.mapping_index() == 0);
  CHECK(lone.lines_size() == 0);
}

namespace {

// A request of one sample of one process (pid 7) with `frames` (leaf first),
// checked against the dictionary rules.
ExportRequest OneSampleRequest(const std::string& executable, std::vector<Frame> frames) {
  ProfileBatch b;
  b.start_unix_ns = 1;
  b.end_unix_ns = 2;
  ProcessProfile p;
  p.pid = 7;
  p.executable_name = executable;
  p.stacks.push_back(Stack{std::move(frames)});
  p.samples.push_back(SampleGroup{0, 7, 0, executable, {1}});
  b.processes.push_back(std::move(p));
  ExportRequest r = BuildExportRequest(b);
  CHECK(kiln::agent::testing::CheckExportRequest(r).empty());
  return r;
}

const opentelemetry::proto::profiles::v1development::Stack& FirstStack(const ExportRequest& r) {
  return r.dictionary().stack_table(r.resource_profiles(0).scope_profiles(0).profiles(0).samples(0).stack_index());
}

}  // namespace

TEST_CASE("otlp builder: JIT frames carry their runtime, source file and line") {
  Frame js{FrameType::kV8, 0x7f0000001000, nullptr, "leafWork"};
  js.file = "/srv/app.js";
  js.line = 3;
  Frame unnamed{FrameType::kJit, 0x7f0000002000, nullptr, ""};
  ExportRequest r = OneSampleRequest("node", {js, unnamed});
  const auto& d = r.dictionary();
  const auto& stack = FirstStack(r);
  REQUIRE(stack.location_indices_size() == 2);
  const auto& leaf = d.location_table(stack.location_indices(0));
  const auto& below = d.location_table(stack.location_indices(1));
  CHECK(d.attribute_table(leaf.attribute_indices(0)).value().string_value() == "v8js");
  CHECK(d.attribute_table(below.attribute_indices(0)).value().string_value() == "jit");
  REQUIRE(leaf.lines_size() == 1);
  CHECK(leaf.lines(0).line() == 3);
  const auto& f = d.function_table(leaf.lines(0).function_index());
  CHECK(d.string_table(f.name_strindex()) == "leafWork");
  CHECK(d.string_table(f.filename_strindex()) == "/srv/app.js");
  CHECK(leaf.address() == 0x7f0000001000);
  CHECK(below.lines_size() == 0);
}

TEST_CASE("otlp builder: Python frames of one code object at two lines are two locations, typed cpython") {
  // middle -> middle (recursion: one code object, the caller at its call
  // line, the callee at another).
  Frame callee{FrameType::kPython, 0x7f0000003000, nullptr, "middle"};
  callee.file = "/srv/chain.py";
  callee.line = 17;
  Frame caller = callee;
  caller.line = 18;
  ExportRequest r = OneSampleRequest("python3.11", {callee, caller});
  const auto& d = r.dictionary();
  const auto& stack = FirstStack(r);
  REQUIRE(stack.location_indices_size() == 2);
  CHECK(stack.location_indices(0) != stack.location_indices(1));
  const auto& leaf = d.location_table(stack.location_indices(0));
  const auto& below = d.location_table(stack.location_indices(1));
  CHECK(d.attribute_table(leaf.attribute_indices(0)).value().string_value() == "cpython");
  CHECK(leaf.lines(0).line() == 17);
  CHECK(below.lines(0).line() == 18);
  CHECK(leaf.lines(0).function_index() == below.lines(0).function_index());
}

TEST_CASE("otlp builder: off-CPU profiles say the share of blocked periods they hold") {
  ProfileBatch b = SampleBatch();
  b.off_cpu_probability = 0.1;
  b.processes[0].off_cpu.push_back(SampleGroup{0, 100, 1, "worker", {b.start_unix_ns + 40}, {7'000'000}});
  ExportRequest r = BuildExportRequest(b, "1.2.3");
  CHECK(kiln::agent::testing::CheckExportRequest(r).empty());
  const auto& profiles = r.resource_profiles(0).scope_profiles(0).profiles();
  REQUIRE(profiles.size() == 2);
  auto probability = [&](const auto& profile) -> double {
    for (int a : profile.attribute_indices()) {
      const auto& kv = r.dictionary().attribute_table(a);
      if (Str(r, kv.key_strindex()) == "kiln.sampling.probability") return kv.value().double_value();
    }
    return -1;
  };
  CHECK(Str(r, profiles[1].sample_type().type_strindex()) == "off_cpu");
  CHECK(probability(profiles[1]) == doctest::Approx(0.1));
  CHECK(probability(profiles[0]) == -1);  // on-CPU ticks are every tick
}

TEST_CASE("otlp builder: an empty batch is a valid empty request") {
  ExportRequest r = BuildExportRequest(ProfileBatch{});
  CHECK(r.resource_profiles_size() == 0);
  CHECK(kiln::agent::testing::CheckExportRequest(r).empty());
}
