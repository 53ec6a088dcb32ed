#pragma once
// ProfileBatch -> one OTLP ExportProfilesServiceRequest (profiles
// v1development, opentelemetry-proto v1.10.0 wire layout), encoded the way the
// OpenTelemetry eBPF profiler encodes it so any OTLP profiles receiver
// (kiln, devfiler, a collector) reads it:
//   - one dictionary per request; index 0 of every table is the empty element
//     and every index written is in range;
//   - one ResourceProfiles per process: process.pid, process.executable.name,
//     process.executable.path, container.id (when in one), host.name, plus the
//     user's extra attributes;
//   - one Profile per process: sample_type samples/count, period_type
//     cpu/nanoseconds, period 1e9/frequency;
//   - a Sample per (stack, thread, cpu): attributes thread.name, thread.id,
//     cpu.logical_number; one timestamp per event, no values (weight 1 each);
//   - locations carry profile.frame.type (native/kernel); native mappings
//     carry process.executable.build_id.htlhash (and .gnu when known);
//     symbolized frames get a Line with a Function.
//
// Pure function of its input; thread-safe.

#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb.h"
#include "profile_batch.h"

namespace kiln::agent {

using ExportRequest = opentelemetry::proto::collector::profiles::v1development::ExportProfilesServiceRequest;

inline constexpr const char* kAgentScopeName = "kiln-agent";
// On each off-CPU profile (a double): the probability with which a blocked
// period was followed, so a receiver can estimate real time. kiln reads the
// same key (storage::attr::kSamplingProbability); the agent links no
// storage, so the string is written twice.
inline constexpr const char* kSamplingProbabilityKey = "kiln.sampling.probability";

ExportRequest BuildExportRequest(const ProfileBatch& batch, std::string_view agent_version = "");

}  // namespace kiln::agent
