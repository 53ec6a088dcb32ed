#pragma once
// What one reporter interval collected, in a form that no longer depends on
// the live system: the sample collector fills it (resolving addresses while
// the processes still exist), the OTLP builder turns it into one Export.
//
//   ProfileBatch
//     └─ ProcessProfile (one per pid seen)       -> one ResourceProfiles
//          ├─ stacks: Stack{frames leaf first}   -> dictionary stack_table
//          │           Frame -> Mapping -> ExecutableFile (shared, immutable)
//          ├─ samples: SampleGroup{stack, thread, cpu, timestamps[]}
//          │                                     -> Sample (weight 1 per timestamp)
//          └─ off_cpu: SampleGroup{..., timestamps[], values[] (ns blocked)}
//                                                -> Sample in an off_cpu/nanoseconds profile

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kiln::agent {

// As OTLP's profile.frame.type names them: native, kernel, jit (code from a
// perf map whose runtime the name does not tell), v8js, cpython, jvm, dotnet.
enum class FrameType : std::uint8_t { kNative, kKernel, kJit, kV8, kPython, kJvm, kDotnet };
inline const char* FrameTypeName(FrameType type) {
  switch (type) {
    case FrameType::kKernel: return "kernel";
    case FrameType::kJit: return "jit";
    case FrameType::kV8: return "v8js";
    case FrameType::kPython: return "cpython";
    case FrameType::kJvm: return "jvm";
    case FrameType::kDotnet: return "dotnet";
    case FrameType::kNative: break;
  }
  return "native";
}

// An executable or library file. Immutable once published; shared by every
// process that maps it.
struct ExecutableFile {
  std::string path;       // as the process sees it (inside its mount namespace)
  std::string file_name;  // basename of path, or "vmlinux" / the kernel module name
  std::string htlhash;    // "" for the kernel
  std::string gnu_build_id;
};

// One mapped range of a process. Immutable once published.
struct Mapping {
  std::uint64_t start = 0;
  std::uint64_t limit = 0;
  std::uint64_t file_offset = 0;
  std::shared_ptr<const ExecutableFile> file;
};

struct Frame {
  FrameType type = FrameType::kNative;
  // Native: ELF virtual address in `mapping->file` (return addresses minus 1).
  // Kernel: kernel virtual address (return addresses minus 1).
  // JIT: the address in the process, named from its perf map.
  std::uint64_t address = 0;
  std::shared_ptr<const Mapping> mapping;  // null when the address was in no file
  std::string function;                    // demangled name, "" when unknown
  std::string file;                        // source file, where known (JIT frames)
  std::int64_t line = 0;
};

struct Stack {
  std::vector<Frame> frames;  // leaf first, kernel frames before user frames
};

struct SampleGroup {
  std::int32_t stack = 0;  // index into ProcessProfile::stacks
  std::uint32_t tid = 0;
  std::uint32_t cpu = 0;
  std::string thread_name;
  std::vector<std::uint64_t> timestamps_unix_ns;  // one per event, ascending
  std::vector<std::int64_t> values;  // parallel to timestamps (off-CPU ns); empty: 1 each
};

struct ProcessProfile {
  std::uint32_t pid = 0;
  std::string executable_path;  // "" for kernel threads
  std::string executable_name;  // basename, or the thread name for kernel threads
  std::string container_id;     // "" when not in a container
  std::vector<Stack> stacks;
  std::vector<SampleGroup> samples;  // on-CPU
  std::vector<SampleGroup> off_cpu;  // blocked: timestamp = when it left the CPU
};

struct ProfileBatch {
  std::uint64_t start_unix_ns = 0;
  std::uint64_t end_unix_ns = 0;
  int samples_per_second = 20;
  // The share of blocked periods the BPF side followed (-off-cpu-threshold):
  // the off-CPU profile says it, so a receiver can estimate real time
  // (kiln divides by it). 0 when off-CPU is off.
  double off_cpu_probability = 0;
  std::string host_name;
  std::vector<std::pair<std::string, std::string>> resource_attributes;  // on every process
  std::vector<ProcessProfile> processes;

  std::size_t SampleCount() const {
    std::size_t n = 0;
    for (const auto& p : processes) {
      for (const auto& s : p.samples) n += s.timestamps_unix_ns.size();
      for (const auto& s : p.off_cpu) n += s.timestamps_unix_ns.size();
    }
    return n;
  }
};

}  // namespace kiln::agent
