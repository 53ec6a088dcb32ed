#include "sample_collector.h"

#include <doctest/doctest.h>
#include <linux/types.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "bpf/sampler_event.h"

using namespace kiln::agent;
namespace fs = std::filesystem;

namespace kiln_collector_test {
__attribute__((noinline)) int Target(int x) { return x + 7; }
}  // namespace kiln_collector_test

namespace {

// A fake /proc with one process (pid 42) whose only mapping is this test
// binary, mapped from file offset 0 at 0x10000000.
struct FakeProc {
  fs::path root;
  std::uint64_t base = 0x10000000;
  FakeProc() {
    char tmpl[] = "/tmp/kiln-fakeproc-XXXXXX";
    root = mkdtemp(tmpl);
    fs::create_directories(root / "42" / "root");
    std::string exe = fs::read_symlink("/proc/self/exe").string();
    fs::create_symlink(exe, root / "42" / "exe");
    // /proc/PID/root/<path> reaches the file as the process sees it.
    fs::create_directory_symlink("/", root / "42" / "root" / "x");
    std::ofstream(root / "42" / "maps") << "10000000-20000000 r-xp 00000000 fd:01 1234 /x" << exe << "\n";
    std::ofstream(root / "42" / "cgroup") << "0::/system.slice/docker-" << std::string(64, 'c') << ".scope\n";
  }
  ~FakeProc() { fs::remove_all(root); }
};

std::vector<char> SampleRecord(std::uint32_t pid, std::uint32_t tid, const char* comm,
                               std::vector<std::uint64_t> kernel, std::vector<std::uint64_t> user) {
  kiln_sample_event ev{};
  ev.header.kind = KILN_EVENT_SAMPLE;
  ev.header.pid = pid;
  ev.header.tid = tid;
  ev.header.cpu = 1;
  ev.header.ktime_ns = 123456789;
  std::strncpy(ev.header.comm, comm, sizeof(ev.header.comm) - 1);
  ev.kernel_frames = static_cast<__u16>(kernel.size());
  ev.user_frames = static_cast<__u16>(user.size());
  std::size_t i = 0;
  for (auto a : kernel) ev.frames[i++] = a;
  for (auto a : user) ev.frames[i++] = a;
  std::size_t size = offsetof(kiln_sample_event, frames) + i * sizeof(__u64);
  std::vector<char> out(size);
  std::memcpy(out.data(), &ev, size);
  return out;
}

// The file offset of `fn`'s code in this test binary, from our own maps. The
// collector must turn it into the ELF vaddr itself (the symbol check below
// proves it did).
std::uint64_t FileOffsetOf(const void* fn) {
  std::ifstream maps("/proc/self/maps");
  std::string exe = fs::read_symlink("/proc/self/exe").string();
  std::string line;
  auto address = reinterpret_cast<std::uint64_t>(fn);
  while (std::getline(maps, line)) {
    std::uint64_t start = 0, end = 0, offset = 0;
    char perms[8] = {};
    if (std::sscanf(line.c_str(), "%lx-%lx %7s %lx", &start, &end, perms, &offset) != 4) continue;
    if (address >= start && address < end && line.find(exe) != std::string::npos)
      return address - start + offset;
  }
  return 0;
}

}  // namespace

TEST_CASE("collector: resolves, groups and survives the process's exit") {
  FakeProc proc;
  ExecutableCache cache;
  ProcessTracker tracker(cache, proc.root.string());
  Symbolizer symbolizer(true);
  KernelSymbols kernel;
  REQUIRE(
      kernel.LoadFromText("ffffffff81000000 T entry_SYSCALL_64\nffffffff81001000 t do_syscall_64\n").ok());
  SampleCollector collector(tracker, symbolizer, kernel, 20);

  // The user frame: Target's file offset, placed in the fake mapping. As the
  // leaf (index 0) it is used as is; the caller frame gets minus one.
  std::uint64_t file_offset = FileOffsetOf(reinterpret_cast<const void*>(&kiln_collector_test::Target));
  REQUIRE(file_offset != 0);
  auto rec = SampleRecord(42, 43, "worker", {0xffffffff81001010, 0xffffffff81000020},
                          {proc.base + file_offset + 1, proc.base + file_offset + 2});
  collector.OnRecord(rec.data(), rec.size());
  collector.OnRecord(rec.data(), rec.size());  // same stack, same thread: one group
  auto other_thread = SampleRecord(42, 44, "helper", {}, {proc.base + file_offset + 1});
  collector.OnRecord(other_thread.data(), other_thread.size());
  // The process exits before the report; its samples must still be there.
  kiln_event_header exit_event{KILN_EVENT_EXIT, 42, 42, 0, 0, {}};
  collector.OnRecord(&exit_event, sizeof(exit_event));
  // Garbage is counted, not fatal.
  char junk[4] = {};
  collector.OnRecord(junk, sizeof(junk));
  CHECK(collector.stats().bad_records == 1);

  ProfileBatch batch = collector.TakeBatch("host", {});
  REQUIRE(batch.processes.size() == 1);
  const ProcessProfile& p = batch.processes[0];
  CHECK(p.pid == 42);
  CHECK(p.container_id == std::string(64, 'c'));
  CHECK(p.executable_name == fs::path(fs::read_symlink("/proc/self/exe")).filename().string());
  REQUIRE(p.samples.size() == 2);
  CHECK(p.samples[0].timestamps_unix_ns.size() == 2);
  CHECK(p.samples[0].thread_name == "worker");
  CHECK(p.samples[1].tid == 44);
  REQUIRE(p.stacks.size() == 2);
  const Stack& s = p.stacks[p.samples[0].stack];
  REQUIRE(s.frames.size() == 4);
  CHECK(s.frames[0].type == FrameType::kKernel);
  CHECK(s.frames[0].function == "do_syscall_64");
  CHECK(s.frames[1].function == "entry_SYSCALL_64");
  CHECK(s.frames[1].address == 0xffffffff8100001f);  // return address minus one
  CHECK(s.frames[1].mapping->file->file_name == "vmlinux");
  CHECK(s.frames[2].type == FrameType::kNative);
  REQUIRE(s.frames[2].mapping != nullptr);
  CHECK(s.frames[2].mapping->file->htlhash.size() == 32);
  CHECK(s.frames[2].mapping->start == proc.base);
  CHECK(s.frames[2].function == "kiln_collector_test::Target(int)");
  CHECK(s.frames[3].function == "kiln_collector_test::Target(int)");
  CHECK(batch.SampleCount() == 3);
  CHECK(kiln_collector_test::Target(0) == 7);

  // After the report the exited process is forgotten; the next batch is empty.
  tracker.Sweep();
  CHECK(tracker.size() == 0);
  CHECK(collector.TakeBatch("host", {}).processes.empty());
}

TEST_CASE("collector: an exec starts a new profile for the same pid") {
  FakeProc proc;
  ExecutableCache cache;
  ProcessTracker tracker(cache, proc.root.string());
  Symbolizer symbolizer(false);
  KernelSymbols kernel;
  SampleCollector collector(tracker, symbolizer, kernel, 20);
  auto rec = SampleRecord(42, 42, "before", {}, {proc.base + 0x100});
  collector.OnRecord(rec.data(), rec.size());
  kiln_event_header exec_event{KILN_EVENT_EXEC, 42, 42, 0, 0, {}};
  collector.OnRecord(&exec_event, sizeof(exec_event));
  auto after = SampleRecord(42, 42, "after", {}, {proc.base + 0x100});
  collector.OnRecord(after.data(), after.size());
  ProfileBatch batch = collector.TakeBatch("host", {});
  REQUIRE(batch.processes.size() == 2);
  CHECK(batch.processes[0].samples[0].thread_name == "before");
  CHECK(batch.processes[1].samples[0].thread_name == "after");
}

TEST_CASE("tracker: a library another reader saw first still reaches the unwinder") {
  // The flake this pins: an off-CPU stack resolved a second after it was
  // taken re-read the maps (ResolveUserAddress) just after a dlopen, so
  // RereadMapsIfDue, comparing the maps with themselves, never reported
  // the library and the walker stopped at its first frame for good.
  FakeProc proc;
  ExecutableCache cache;
  ProcessTracker tracker(cache, proc.root.string());
  ProcessInfo& p = tracker.Get(42, "worker");
  REQUIRE(p.maps.size() == 1);
  p.unwind_ranges = ExecutableRanges(p.maps);  // what LoadProcess records
  CHECK_FALSE(tracker.RereadMapsIfDue(p));

  // dlopen: a second executable mapping appears.
  const std::string exe = fs::read_symlink("/proc/self/exe").string();
  std::ofstream(proc.root / "42" / "maps") << "10000000-20000000 r-xp 00000000 fd:01 1234 /x" << exe << "\n"
                                           << "30000000-30100000 r-xp 00000000 fd:01 1234 /x" << exe << "\n";
  p.maps_read_at -= std::chrono::seconds(10);  // past the resolver's backoff
  UserAddress a = tracker.ResolveUserAddress(p, 0x30000100);
  CHECK(a.mapping != nullptr);        // the resolver read the new maps
  CHECK(tracker.RereadMapsIfDue(p));  // and the unwinder hears of it
  p.unwind_ranges = ExecutableRanges(p.maps);
  CHECK(p.unwind_ranges.size() == 2);
  p.maps_read_at -= std::chrono::seconds(10);
  CHECK_FALSE(tracker.RereadMapsIfDue(p));  // nothing new: no reload loop
}
