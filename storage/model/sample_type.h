// Sample types: what a sample's value measures and in which unit, kept as
// the producer named it (pprof's ValueType, OTLP's Profile.sample_type), and
// the one place that turns a value into text in its unit. Every source keeps
// samples of each type apart; a query reads one type; every number the user
// sees goes through FormatValue. Pure functions, no locking.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::storage {

// The identity of a kind of data: ("samples", "count") for on-CPU samples,
// ("cpu", "nanoseconds"), ("off_cpu", "nanoseconds"), ("alloc_space",
// "bytes"), ... Default-constructed it is on-CPU samples, the kind of data
// agents send most and the default view of live data.
struct SampleType {
  std::string type = "samples";
  std::string unit = "count";
  bool operator==(const SampleType&) const = default;
  auto operator<=>(const SampleType&) const = default;
};

// A sample type with how it was sampled (pprof's period_type and period,
// OTLP's Profile.period_type and period): shown to the user, not part of
// the identity. period == 0 when the producer did not say.
struct SampleTypeInfo {
  SampleType type;
  std::string period_type;
  std::string period_unit;
  int64_t period = 0;
  bool operator==(const SampleTypeInfo&) const = default;
};

// How often samples of this type were taken, in ns, when the producer said
// so in a time unit (kiln-agent at 20 Hz: cpu/nanoseconds 50,000,000);
// 0 otherwise (a count period, an allocation size, none).
int64_t PeriodNs(const SampleTypeInfo& info);

// The types Kiln's agent, the OpenTelemetry eBPF profiler and the demo send.
SampleType OnCpuSamples();  // samples/count
SampleType OffCpuTime();    // off_cpu/nanoseconds
SampleType ProbeEvents();   // events/count

// "samples/count": pprof's `-sample_index` spelling, used by the CLI and
// exports.
std::string SampleTypeName(const SampleType& type);
// "samples/count, cpu/nanoseconds" (for messages), "none" when empty.
std::string SampleTypeList(const std::vector<SampleType>& types);

// What the window's picker calls a type: "On-CPU (samples)", "CPU time (ns)",
// "Allocated bytes", ...; an unknown type keeps its own name and unit:
// "gc_pause (milliseconds)".
std::string SampleTypeLabel(const SampleType& type);

// How values of a unit are shown. Known time and size units are scaled to
// nanoseconds and bytes first ("microseconds", "kilobytes", ...).
enum class UnitClass : uint8_t { kCount, kTime, kBytes };
UnitClass ClassOfUnit(std::string_view unit);

// `value` as the user should read it: "1.76 s", "116 GiB", "12.3k samples",
// "3 objects", "42 gc_pause" (an unknown unit keeps its name).
std::string FormatValue(const SampleType& type, int64_t value);
// The same without the noun for counts ("12.3k"), for table columns whose
// header already names the unit.
std::string FormatValueShort(const SampleType& type, int64_t value);

// "1.23M", "45.6k", "789".
std::string FormatCount(uint64_t n);
// "1.50 s", "12.3 ms", "850 µs", "2h 03m".
std::string FormatDuration(int64_t ns);
// "1.2 GiB", "340 KiB".
std::string FormatBytes(uint64_t bytes);

// The sample type a user names on the command line, among `available`:
// "type/unit" exactly, a type name ("cpu", "alloc_space"), or the aliases
// "on-cpu", "off-cpu" and "probe". nullopt when nothing matches.
std::optional<SampleType> FindSampleType(std::string_view name, const std::vector<SampleType>& available);

// A type named without a list to look in: "type/unit" or one of the
// aliases; nullopt for a bare type name (it needs the list for its unit).
std::optional<SampleType> ParseSampleTypeName(std::string_view name);

// What a viewer shows first, as pprof chooses: the default type when the
// producer named one and it is present, else the last listed. Empty input
// gives on-CPU samples.
SampleType DefaultSampleType(const std::vector<SampleType>& available, std::string_view default_type = {});
// What a store or a capture without pprof's rule shows first: on-CPU
// samples when present (what agents send) or when there is nothing, else
// the first type.
SampleType OnCpuOrFirst(const std::vector<SampleType>& available);

}  // namespace kiln::storage
