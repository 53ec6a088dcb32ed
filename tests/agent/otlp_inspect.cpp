#include "otlp_inspect.h"

#include <cstdio>

namespace kiln::agent::testing {
namespace {

namespace pb = opentelemetry::proto::profiles::v1development;

template <typename Table>
bool InRange(std::int64_t index, const Table& table) {
  return index >= 0 && index < table.size();
}

}  // namespace

std::vector<std::string> CheckExportRequest(const ExportRequest& request) {
  std::vector<std::string> problems;
  auto problem = [&](std::string text) { problems.push_back(std::move(text)); };
  const pb::ProfilesDictionary& d = request.dictionary();
  auto check0 = [&](const char* name, int size, bool empty) {
    if (size == 0)
      problem(std::string(name) + " is empty (index 0 must exist)");
    else if (!empty)
      problem(std::string(name) + "[0] is not the empty element");
  };
  check0("string_table", d.string_table_size(), d.string_table_size() > 0 && d.string_table(0).empty());
  check0("mapping_table", d.mapping_table_size(),
         d.mapping_table_size() > 0 && d.mapping_table(0).ByteSizeLong() == 0);
  check0("location_table", d.location_table_size(),
         d.location_table_size() > 0 && d.location_table(0).ByteSizeLong() == 0);
  check0("function_table", d.function_table_size(),
         d.function_table_size() > 0 && d.function_table(0).ByteSizeLong() == 0);
  check0("link_table", d.link_table_size(), d.link_table_size() > 0 && d.link_table(0).ByteSizeLong() == 0);
  check0("attribute_table", d.attribute_table_size(),
         d.attribute_table_size() > 0 && d.attribute_table(0).ByteSizeLong() == 0);
  check0("stack_table", d.stack_table_size(),
         d.stack_table_size() > 0 && d.stack_table(0).ByteSizeLong() == 0);

  auto str = [&](std::int64_t i, const std::string& where) {
    if (!InRange(i, d.string_table()))
      problem(where + ": string index " + std::to_string(i) + " out of range");
  };
  auto attr = [&](std::int64_t i, const std::string& where) {
    if (!InRange(i, d.attribute_table()))
      problem(where + ": attribute index " + std::to_string(i) + " out of range");
  };
  for (int i = 0; i < d.attribute_table_size(); ++i) {
    str(d.attribute_table(i).key_strindex(), "attribute_table[" + std::to_string(i) + "].key");
    str(d.attribute_table(i).unit_strindex(), "attribute_table[" + std::to_string(i) + "].unit");
  }
  for (int i = 0; i < d.mapping_table_size(); ++i) {
    str(d.mapping_table(i).filename_strindex(), "mapping_table[" + std::to_string(i) + "]");
    for (auto a : d.mapping_table(i).attribute_indices()) attr(a, "mapping_table[" + std::to_string(i) + "]");
  }
  for (int i = 0; i < d.function_table_size(); ++i) {
    const auto& f = d.function_table(i);
    std::string where = "function_table[" + std::to_string(i) + "]";
    str(f.name_strindex(), where);
    str(f.system_name_strindex(), where);
    str(f.filename_strindex(), where);
  }
  for (int i = 0; i < d.location_table_size(); ++i) {
    const auto& l = d.location_table(i);
    std::string where = "location_table[" + std::to_string(i) + "]";
    if (!InRange(l.mapping_index(), d.mapping_table())) problem(where + ": mapping index out of range");
    for (const auto& line : l.lines())
      if (!InRange(line.function_index(), d.function_table()))
        problem(where + ": function index out of range");
    for (auto a : l.attribute_indices()) attr(a, where);
  }
  for (int i = 0; i < d.stack_table_size(); ++i)
    for (auto l : d.stack_table(i).location_indices())
      if (!InRange(l, d.location_table()))
        problem("stack_table[" + std::to_string(i) + "]: location index " + std::to_string(l) +
                " out of range");
  for (int r = 0; r < request.resource_profiles_size(); ++r)
    for (const auto& sp : request.resource_profiles(r).scope_profiles())
      for (const auto& p : sp.profiles()) {
        std::string where = "resource_profiles[" + std::to_string(r) + "] profile";
        str(p.sample_type().type_strindex(), where);
        str(p.sample_type().unit_strindex(), where);
        str(p.period_type().type_strindex(), where);
        str(p.period_type().unit_strindex(), where);
        for (auto a : p.attribute_indices()) attr(a, where);
        for (const auto& s : p.samples()) {
          if (!InRange(s.stack_index(), d.stack_table()))
            problem(where + ": sample stack index out of range");
          if (!InRange(s.link_index(), d.link_table())) problem(where + ": sample link index out of range");
          for (auto a : s.attribute_indices()) attr(a, where + " sample");
          if (s.values_size() != 0 && s.values_size() != s.timestamps_unix_nano_size() &&
              !(s.values_size() == 1 && s.timestamps_unix_nano_size() == 0))
            problem(where + ": values and timestamps do not pair up");
        }
      }
  return problems;
}

FoldedProfile FoldRequests(const std::vector<ExportRequest>& requests) {
  FoldedProfile out;
  for (const ExportRequest& req : requests) {
    if (!CheckExportRequest(req).empty()) continue;  // callers check separately
    const pb::ProfilesDictionary& d = req.dictionary();
    auto attr_string = [&](int i, const char* key, std::string* value, std::int64_t* int_value) {
      const auto& kv = d.attribute_table(i);
      if (d.string_table(kv.key_strindex()) != key) return false;
      if (value) *value = kv.value().string_value();
      if (int_value) *int_value = kv.value().int_value();
      return true;
    };
    for (const auto& rp : req.resource_profiles()) {
      ProcessSummary info;
      std::string executable_name, executable_path;
      for (const auto& kv : rp.resource().attributes()) {
        if (kv.key() == "process.pid") info.pid = kv.value().int_value();
        if (kv.key() == "process.executable.name") executable_name = kv.value().string_value();
        if (kv.key() == "process.executable.path") executable_path = kv.value().string_value();
        if (kv.key() == "container.id") info.container_id = kv.value().string_value();
        if (kv.key() == "host.name") info.host_name = kv.value().string_value();
      }
      ProcessSummary& summary = out.processes[info.pid];
      if (summary.pid == 0) summary = info;
      summary.executable_names.insert(executable_name);
      summary.executable_paths.insert(executable_path);
      for (const auto& sp : rp.scope_profiles())
        for (const auto& p : sp.profiles()) {
          // off_cpu/nanoseconds: the values are times blocked, kept apart.
          const bool off_cpu = d.string_table(p.sample_type().type_strindex()) == "off_cpu";
          if (!off_cpu) out.periods.insert(p.period());
          for (const auto& s : p.samples()) {
            std::int64_t events = s.timestamps_unix_nano_size();
            if (events == 0 && s.values_size() == 1) events = s.values(0);
            std::int64_t blocked_ns = 0;
            for (std::int64_t v : s.values()) blocked_ns += v;
            std::string thread_name;
            for (int a : s.attribute_indices()) {
              std::string v;
              std::int64_t iv = 0;
              if (attr_string(a, "thread.name", &v, nullptr)) thread_name = v;
              if (attr_string(a, "thread.id", nullptr, &iv)) summary.thread_ids.insert(iv);
              if (attr_string(a, "cpu.logical_number", nullptr, &iv)) summary.cpus.insert(iv);
            }
            summary.thread_names.insert(thread_name);
            if (!off_cpu) {
              summary.events_by_thread_name[thread_name] += events;
              summary.events += events;
              out.total_events += events;
            }
            // Root first: walk the leaf-first location list backwards.
            std::string folded = executable_name;
            const auto& stack = d.stack_table(s.stack_index());
            for (int k = stack.location_indices_size() - 1; k >= 0; --k) {
              const auto& loc = d.location_table(stack.location_indices(k));
              std::string frame_type;
              for (int a : loc.attribute_indices())
                attr_string(a, "profile.frame.type", &frame_type, nullptr);
              summary.frame_types.insert(frame_type);
              const auto& mapping = d.mapping_table(loc.mapping_index());
              for (int a : mapping.attribute_indices()) {
                std::string h;
                if (attr_string(a, "process.executable.build_id.htlhash", &h, nullptr))
                  summary.htlhashes.insert(h);
              }
              std::string name;
              if (loc.lines_size() > 0) {
                const auto& line = loc.lines(loc.lines_size() - 1);
                const auto& function = d.function_table(line.function_index());
                name = d.string_table(function.name_strindex());
                if (frame_type == "cpython" || frame_type == "v8js")
                  out.places[executable_name + ";" + name].insert(d.string_table(function.filename_strindex()) + ":" +
                                          std::to_string(line.line()));
              }
              if (name.empty()) {
                char buf[64];
                std::snprintf(buf, sizeof(buf), "+0x%llx", static_cast<unsigned long long>(loc.address()));
                name = d.string_table(mapping.filename_strindex()) + buf;
              }
              if (frame_type == "kernel") name += "_[k]";
              folded += ";" + name;
            }
            if (off_cpu)
              out.off_cpu_stacks[folded] += blocked_ns;
            else
            {
              out.stacks[folded] += events;
              out.stacks_by_pid[info.pid][folded] += events;
              out.thread_stacks[executable_name + "/" + thread_name + folded.substr(executable_name.size())] +=
                  events;
            }
          }
        }
    }
  }
  return out;
}

}  // namespace kiln::agent::testing
