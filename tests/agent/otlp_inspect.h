#pragma once
// Reading OTLP profiles requests back in tests, written independently of the
// agent's builder so the two do not share mistakes.
//
// CheckExportRequest: the dictionary rules (index 0 of every table is the
// empty element; every index anywhere in the request is in range).
// FoldRequests: "process;root;...;leaf" -> events, like `kiln export
// --format folded --group-by process`, so tests compare the same text form
// for the agent and for perf.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb.h"

namespace kiln::agent::testing {

using ExportRequest = opentelemetry::proto::collector::profiles::v1development::ExportProfilesServiceRequest;

std::vector<std::string> CheckExportRequest(const ExportRequest& request);

struct ProcessSummary {
  std::int64_t pid = 0;
  // Every program the pid ran: a process that execs (perf's child before it
  // becomes the workload) has one resource per program.
  std::set<std::string> executable_names;
  std::set<std::string> executable_paths;
  std::string container_id;
  std::string host_name;
  std::int64_t events = 0;
  std::set<std::string> thread_names;
  std::set<std::int64_t> thread_ids;
  std::map<std::string, std::int64_t> events_by_thread_name;
  std::set<std::int64_t> cpus;
  std::set<std::string> frame_types;  // profile.frame.type values seen
  std::set<std::string> htlhashes;
};

struct FoldedProfile {
  std::map<std::string, std::int64_t> stacks;        // "exe;root;..;leaf" -> events
  std::map<std::int64_t, std::map<std::string, std::int64_t>> stacks_by_pid;  // the same, per process (on-CPU)
  std::map<std::string, std::int64_t> off_cpu_stacks;  // same keys -> nanoseconds blocked
  std::map<std::string, std::int64_t> thread_stacks;   // "exe/thread name;root;..;leaf" -> events (on-CPU)
  std::map<std::int64_t, ProcessSummary> processes;  // by pid
  // Interpreted and JIT frames (cpython, v8js): "exe;function" -> "file:line" seen.
  std::map<std::string, std::set<std::string>> places;
  std::int64_t total_events = 0;
  std::set<std::int64_t> periods;
};

// Frame text: the function name, else "FILE+0xADDR"; kernel frames end in
// "_[k]" as in perf script output.
FoldedProfile FoldRequests(const std::vector<ExportRequest>& requests);

}  // namespace kiln::agent::testing
