// The normalized profile model shared by every producer and consumer of
// profile data in Kiln: ingest (OTLP, importers) fills a ProfileBatch, the
// store interns it, queries hand out ProfileSlices built on the same
// ProfileDictionary. Plain data, no locking: a value is owned by one thread
// at a time, or shared immutable (const) once published.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/model/sample_type.h"

namespace kiln::storage {

// What kind of code a frame belongs to. Values are stored on disk: append
// only, never renumber.
enum class FrameType : uint8_t {
  kUnknown = 0,
  kNative = 1,
  kKernel = 2,
  kGo = 3,
  kPython = 4,
  kPhp = 5,
  kJvm = 6,
  kRuby = 7,
  kPerl = 8,
  kV8js = 9,
  kDotnet = 10,
  kBeam = 11,
  kLuajit = 12,
  kAbortMarker = 13,
  kJit = 14,  // perf-PID.map style JIT frames from imported captures
};
inline constexpr int kFrameTypeCount = 15;

// The OTLP `profile.frame.type` value for a type ("native", "kernel", ...).
std::string_view FrameTypeName(FrameType type);
// Inverse of FrameTypeName; accepts the older "phpjit". Anything unknown is
// kUnknown (an unknown frame type is never a reason to reject data).
FrameType FrameTypeFromName(std::string_view name);
// The kind of code a source file holds, by its extension ("x.go" -> kGo,
// ".py" -> kPython, ".java"/".kt"/".scala" -> kJvm, ".rb", ".php", ".js",
// ".pl", ".cs", ".erl"/".ex", ".lua"); kUnknown for anything else (C, C++,
// Rust, assembly are native code, which the caller knows better).
FrameType FrameTypeOfSourceFile(std::string_view path);
// The same for a frame label that embeds its source position, as py-spy's
// and other tools' folded output does ("handle (app/views.py:42)").
FrameType FrameTypeOfLabel(std::string_view label);

// An executable or shared library a native frame belongs to.
struct Executable {
  uint32_t file_name = 0;     // string index: path or name as the producer sent it
  uint32_t htlhash = 0;       // string index: 32 lowercase hex digits, or 0
  uint32_t gnu_build_id = 0;  // string index: lowercase hex, or 0
  uint32_t go_build_id = 0;   // string index, or 0
  bool operator==(const Executable&) const = default;
};

// One frame of a stack: one Line of an OTLP Location, after inline
// expansion. A location with N lines becomes N frames; all but the
// outermost carry `inlined = true`.
struct Frame {
  uint32_t function = 0;    // string index of the function name, 0 = unknown
  uint32_t file = 0;        // string index of the source file, 0 = unknown
  uint32_t executable = 0;  // executable index, 0 = none (interpreted, kernel...)
  int64_t line = 0;         // source line, 0 = unknown
  uint64_t address = 0;     // ELF virtual address for native frames
  FrameType type = FrameType::kUnknown;
  bool inlined = false;
  bool operator==(const Frame&) const = default;
};

struct Attribute {
  uint32_t key = 0;    // string index
  uint32_t value = 0;  // string index; non-string values are stringified
  bool operator==(const Attribute&) const = default;
};

struct Link {
  std::string trace_id;  // 16 raw bytes (or empty)
  std::string span_id;   // 8 raw bytes (or empty)
  bool operator==(const Link&) const = default;
};

// Tables addressed by 32-bit indices. Index 0 of every table is the empty
// element, as in OTLP: strings[0] == "", executables[0], frames[0],
// stack 0 (no frames), attribute set 0 (no attributes), links[0]; except
// sample_types[0], which is on-CPU samples (samples/count), the type of a
// default Sample.
struct ProfileDictionary {
  std::vector<std::string> strings{""};
  std::vector<Executable> executables{Executable{}};
  std::vector<Frame> frames{Frame{}};
  // Stack i is stack_frames[stack_offsets[i] .. stack_offsets[i+1]),
  // ROOT FIRST (the reverse of OTLP's leaf-first order).
  std::vector<uint32_t> stack_offsets{0, 0};
  std::vector<uint32_t> stack_frames;
  // Attribute set i is attributes[attribute_set_offsets[i] .. [i+1]), sorted
  // by key string, keys unique.
  std::vector<uint32_t> attribute_set_offsets{0, 0};
  std::vector<Attribute> attributes;
  std::vector<Link> links{Link{}};
  std::vector<SampleTypeInfo> sample_types{SampleTypeInfo{}};

  size_t StackCount() const { return stack_offsets.size() - 1; }
  size_t AttributeSetCount() const { return attribute_set_offsets.size() - 1; }

  struct Span32 {
    const uint32_t* begin_;
    const uint32_t* end_;
    const uint32_t* begin() const { return begin_; }
    const uint32_t* end() const { return end_; }
    size_t size() const { return static_cast<size_t>(end_ - begin_); }
    uint32_t operator[](size_t i) const { return begin_[i]; }
  };
  struct AttributeSpan {
    const Attribute* begin_;
    const Attribute* end_;
    const Attribute* begin() const { return begin_; }
    const Attribute* end() const { return end_; }
    size_t size() const { return static_cast<size_t>(end_ - begin_); }
  };
  // Root-first frame indices of stack `i` (i < StackCount()).
  Span32 Stack(uint32_t i) const {
    return {stack_frames.data() + stack_offsets[i], stack_frames.data() + stack_offsets[i + 1]};
  }
  AttributeSpan AttributeSet(uint32_t i) const {
    return {attributes.data() + attribute_set_offsets[i],
            attributes.data() + attribute_set_offsets[i + 1]};
  }
  // The value of attribute `key` in set `i`, or "" when absent.
  std::string_view AttributeValue(uint32_t set, std::string_view key) const;

  // Builders used by producers. They do not deduplicate (the store does).
  uint32_t AddString(std::string_view s);
  uint32_t AddStack(const std::vector<uint32_t>& root_first_frames);
  // Sorts by key and keeps the last value of a repeated key.
  uint32_t AddAttributeSet(std::vector<Attribute> attributes);
  // The index of `info`'s type, adding it when new (a later period
  // replaces an earlier one: one type, one period shown).
  uint32_t AddSampleType(const SampleTypeInfo& info);
  // The index of `type`, or nullopt. A dictionary holds a few types (one
  // per kind of data), so this is a linear search.
  std::optional<uint32_t> SampleTypeIndex(const SampleType& type) const;
};

// A display label for a frame: the function name, or for an unnamed frame
// `<executable file basename>+0x<address in lowercase hex>` (or
// `0x<address>` without an executable).
std::string FrameLabel(const ProfileDictionary& dict, uint32_t frame);

// Now as Unix nanoseconds (the wall clock): the time base of samples, log
// entries and symbol statuses.
int64_t UnixNowNs();

// One sampled event (or one aggregated value), in batch-local indices.
struct Sample {
  int64_t time_ns = 0;  // Unix nanoseconds
  uint32_t stack = 0;
  uint32_t attribute_set = 0;
  uint32_t link = 0;
  uint32_t sample_type = 0;  // index into dict.sample_types
  int64_t value = 1;         // in the sample type's unit
};

// What a producer hands the store in one write: a dictionary and samples
// that index into it. Samples need not be time ordered.
struct ProfileBatch {
  ProfileDictionary dict;
  std::vector<Sample> samples;
};

// Weight of one (stack, attribute set) pair in a query result.
struct StackWeight {
  uint32_t stack = 0;
  uint32_t attribute_set = 0;
  int64_t weight = 0;
  uint64_t events = 0;
};

// An immutable query result: everything the views and exporters need, with
// dictionary indices local to this slice. Shared as
// std::shared_ptr<const ProfileSlice> between the worker and the UI.
// One selected sample of a slice: `entry` indexes ProfileSlice::weights.
struct SliceSample {
  uint32_t entry = 0;
  uint32_t link = 0;  // into the slice's dict.links: the sample's trace and span
  int64_t time_ns = 0;
  int64_t value = 0;
};

struct ProfileSlice {
  ProfileDictionary dict;
  std::vector<StackWeight> weights;  // one entry per distinct (stack, attribute set)
  // Every selected sample, in no particular order, when the query asked
  // for them (Query::keep_samples: an export that keeps the timeline).
  std::vector<SliceSample> samples;
  SampleTypeInfo sample_type;        // what every weight measures
  int64_t from_ns = std::numeric_limits<int64_t>::min();  // query range [from, to)
  int64_t to_ns = std::numeric_limits<int64_t>::max();
  int64_t first_sample_ns = 0;  // actual data range inside the query range
  int64_t last_sample_ns = 0;
  int64_t total_weight = 0;
  uint64_t total_events = 0;
};

// Well-known attribute keys (OpenTelemetry semantic conventions).
namespace attr {
inline constexpr std::string_view kProcessPid = "process.pid";
inline constexpr std::string_view kProcessExecutableName = "process.executable.name";
inline constexpr std::string_view kProcessExecutablePath = "process.executable.path";
inline constexpr std::string_view kServiceName = "service.name";
inline constexpr std::string_view kContainerId = "container.id";
inline constexpr std::string_view kHostName = "host.name";
// Added by kiln's receiver to every sample it accepts: the sender's address
// ("127.0.0.1", "10.0.0.5"); senders cannot set it.
inline constexpr std::string_view kKilnSender = "kiln.sender";
inline constexpr std::string_view kThreadName = "thread.name";
inline constexpr std::string_view kThreadId = "thread.id";
inline constexpr std::string_view kCpu = "cpu.logical_number";
// On a profile: the share (0..1] of events its sender recorded, e.g.
// kiln-agent's off-CPU -off-cpu-threshold. kiln's normalizer divides the
// profile's values by it (an estimate of the whole) and the window says so.
// kiln-agent writes the same key (agent/otlp_builder.h).
inline constexpr std::string_view kSamplingProbability = "kiln.sampling.probability";
}  // namespace attr

// True for this machine's loopback addresses as kiln.sender holds them
// ("127.0.0.1", "::1", "::ffff:127.0.0.1"): the one test of "sent from this
// host" for the receiver's log and the symbolizer's use of /proc.
bool IsLoopbackAddress(std::string_view host);

// `text` with every byte that is not part of a valid UTF-8 sequence
// (overlong forms, surrogates and code points past U+10FFFF included)
// replaced by U+FFFD: what formats whose strings must be UTF-8 (OTLP,
// pprof: protobuf `string` fields) are given, whatever a text capture held.
std::string ToValidUtf8(std::string_view text);

}  // namespace kiln::storage
