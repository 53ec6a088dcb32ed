#include "perf_map.h"

#include <sys/stat.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/temp_dir.h"

using namespace kiln::agent;

TEST_CASE("perf maps: names split into function, file and line by runtime") {
  JitSymbol v8 = ParseJitName("JS:*leafWork /tmp/jit/chain.js:2:18");
  CHECK(v8.runtime == JitRuntime::kV8);
  CHECK(v8.function == "leafWork");
  CHECK(v8.file == "/tmp/jit/chain.js");
  CHECK(v8.line == 2);
  // Node 18's V8 (LazyCompile, Function), interpreted and baseline marks,
  // an anonymous function, a location without a column.
  CHECK(ParseJitName("LazyCompile:~outer /srv/app.js:11").function == "outer");
  CHECK(ParseJitName("LazyCompile:~outer /srv/app.js:11").line == 11);
  CHECK(ParseJitName("Function:^get value node:internal/x:4:9").function == "get value");
  CHECK(ParseJitName("Function:^get value node:internal/x:4:9").file == "node:internal/x");
  CHECK(ParseJitName("JS:~ /srv/app.js:1:1").function == "(anonymous)");
  JitSymbol builtin = ParseJitName("Builtin:ArrayPrototypePush");
  CHECK(builtin.runtime == JitRuntime::kV8);
  CHECK(builtin.function == "Builtin:ArrayPrototypePush");
  CHECK(builtin.file.empty());
  JitSymbol py = ParseJitName("py::Handler.run:/srv/app/handler.py");
  CHECK(py.runtime == JitRuntime::kPython);
  CHECK(py.function == "Handler.run");
  CHECK(py.file == "/srv/app/handler.py");
  JitSymbol other = ParseJitName("java.lang.String::hashCode");
  CHECK(other.runtime == JitRuntime::kOther);
  CHECK(other.function == "java.lang.String::hashCode");
}

TEST_CASE("perf maps: the JVM's and .NET's method names, without return type, arguments or tier") {
  // Lines as OpenJDK 17's `jcmd PID Compiler.perfmap` wrote them.
  JitSymbol leaf = ParseJitName("long Chain.leafWork(long)");
  CHECK(leaf.runtime == JitRuntime::kJvm);
  CHECK(leaf.function == "Chain.leafWork");
  CHECK(leaf.file.empty());
  CHECK(ParseJitName("void java.lang.System.arraycopy(java.lang.Object, int, java.lang.Object, int, int)").function ==
        "java.lang.System.arraycopy");
  CHECK(ParseJitName("void java.lang.Object.<init>()").function == "java.lang.Object.<init>");
  CHECK(ParseJitName("java.lang.Object[] java.util.Arrays.copyOf(java.lang.Object[], int)").function ==
        "java.util.Arrays.copyOf");
  CHECK(ParseJitName("int app.Outer$Inner.lambda$run$0(int)").function == "app.Outer$Inner.lambda$run$0");
  // The JVM's other code blobs are not methods: kept whole, runtime unknown.
  CHECK(ParseJitName("Interpreter").runtime == JitRuntime::kOther);
  CHECK(ParseJitName("StubRoutines (1)").runtime == JitRuntime::kOther);
  CHECK(ParseJitName("StubRoutines (1)").function == "StubRoutines (1)");
  CHECK(ParseJitName("RuntimeStub - _new_array_Java").runtime == JitRuntime::kOther);
  // .NET's perf map (DOTNET_PerfMapEnabled=1), as its runtime formats it.
  JitSymbol net = ParseJitName("void [System.Private.CoreLib] System.Threading.Thread::StartCallback()[Optimized]");
  CHECK(net.runtime == JitRuntime::kDotnet);
  CHECK(net.function == "System.Threading.Thread::StartCallback");
  CHECK(ParseJitName("int64 [chain] Chain::Middle(int32,int64)[Tier0]").function == "Chain::Middle");
  CHECK(ParseJitName("stub<1> AllocateTemporaryEntryPoints<PreJIT>").runtime == JitRuntime::kOther);
}

TEST_CASE("perf maps: lines, partial lines, bad lines, newer code over older") {
  PerfMap m;
  const std::string text =
      "1000 100 JS:*a /a.js:1:1\n"
      "not a line\n"
      "0x2000 0x20 java.Foo::bar\n"  // the JVM writes 0x
      "3000 10 JS:*partial";         // still being written
  std::size_t used = m.Add(text);
  CHECK(used == text.find("3000"));
  CHECK(m.good_lines() == 2);
  CHECK(m.bad_lines() == 1);
  REQUIRE(m.Find(0x1000).has_value());
  CHECK(m.Find(0x1000)->function == "a");
  CHECK(m.Find(0x10ff)->function == "a");
  CHECK_FALSE(m.Find(0x1100).has_value());
  CHECK_FALSE(m.Find(0xfff).has_value());
  CHECK(m.Find(0x201f)->function == "java.Foo::bar");
  CHECK_FALSE(m.Find(0x3000).has_value());
  // The partial line again with its rest (the caller reads on from what
  // was used), then code placed over the middle of a's freed range: the
  // newer line wins there, a keeps both ends.
  CHECK(m.Add(text.substr(used) + " /p.js:3:1\n1040 40 JS:*b /b.js:2:1\n") > 0);
  REQUIRE(m.Find(0x3000).has_value());
  CHECK(m.Find(0x3000)->function == "partial");
  CHECK(m.Find(0x103f)->function == "a");
  CHECK(m.Find(0x1040)->function == "b");
  CHECK(m.Find(0x107f)->function == "b");
  CHECK(m.Find(0x1080)->function == "a");
  // One that covers several.
  m.Add("f00 400 JS:*c /c.js:3:1\n");
  CHECK(m.Find(0x1000)->function == "c");
  CHECK(m.Find(0x1090)->function == "c");
  CHECK(m.Find(0x2000)->function == "java.Foo::bar");
  CHECK(m.ranges() == 3);  // c (over a and b), java.Foo::bar, partial
  CHECK(m.bad_lines() == 1);
}

TEST_CASE("perf maps: NSpid") {
  CHECK(InnermostPid("\nName:\tnode\nNSpid:\t4242\t17\nNSpgid:\t1\n") == 17);
  CHECK(InnermostPid("\nName:\tnode\nNSpid:\t4242\n") == 4242);
  CHECK(InnermostPid("\nName:\tnode\n") == 0);
}

namespace {

struct FakeProc {
  kiln::testing::TempDir dir{"kiln-perfmap"};
  std::string Tmp(int pid) const { return dir.path + "/" + std::to_string(pid) + "/root/tmp"; }
  void AddProcess(int pid, int ns_pid) const {
    std::filesystem::create_directories(Tmp(pid));
    std::ofstream(dir.path + "/" + std::to_string(pid) + "/status")
        << "Name:\tnode\nPid:\t" << pid << "\nNSpid:\t" << pid << "\t" << ns_pid << "\n";
  }
  std::string MapPath(int pid, int ns_pid) const { return Tmp(pid) + "/perf-" + std::to_string(ns_pid) + ".map"; }
};

}  // namespace

TEST_CASE("perf maps: read through the process's root under its own pid, again as it grows") {
  FakeProc proc;
  proc.AddProcess(500, 7);
  PerfMaps maps(proc.dir.path);
  CHECK(!maps.Lookup(500, 0x1000).has_value());  // no perf map yet
  { std::ofstream(proc.MapPath(500, 7)) << "1000 100 JS:*first /a.js:1:1\n"; }
  // Not read again within kRereadAfter of the last read (misses are many:
  // code the runtime does not log).
  CHECK(!maps.Lookup(500, 0x1000).has_value());
  std::this_thread::sleep_for(PerfMaps::kRereadAfter + std::chrono::milliseconds(50));
  REQUIRE(maps.Lookup(500, 0x1000).has_value());
  CHECK(maps.Lookup(500, 0x1000)->function == "first");
  { std::ofstream(proc.MapPath(500, 7), std::ios::app) << "2000 100 JS:*second /a.js:5:1\n"; }
  std::this_thread::sleep_for(PerfMaps::kRereadAfter + std::chrono::milliseconds(50));
  REQUIRE(maps.Lookup(500, 0x2010).has_value());
  CHECK(maps.Lookup(500, 0x2010)->function == "second");
  CHECK(maps.stats().files_read == 1);
  CHECK(maps.TakeNotices().empty());
  // An exec: the map is read anew.
  maps.Forget(500);
  { std::ofstream(proc.MapPath(500, 7)) << "1000 100 JS:*other /b.js:1:1\n"; }
  CHECK(maps.Lookup(500, 0x1000)->function == "other");
}

TEST_CASE("perf maps: garbage, a FIFO, a link and a file past the bound are refused or cut, with the reason") {
  FakeProc proc;
  PerfMaps maps(proc.dir.path);
  // Garbage: refused once, said once.
  proc.AddProcess(601, 601);
  {
    std::ofstream f(proc.MapPath(601, 601));
    for (int i = 0; i < 100; ++i) f << "\x01\x02 garbage line " << i << "\n";
  }
  CHECK(!maps.Lookup(601, 0x1000).has_value());
  std::vector<std::string> notices = maps.TakeNotices();
  REQUIRE(notices.size() == 1);
  CHECK(notices[0].find("perf-601.map refused: not a perf map (100 of 100 lines") != std::string::npos);
  // A FIFO would block a plain open and read.
  proc.AddProcess(602, 602);
  REQUIRE(mkfifo(proc.MapPath(602, 602).c_str(), 0600) == 0);
  CHECK(!maps.Lookup(602, 0x1000).has_value());
  notices = maps.TakeNotices();
  REQUIRE(notices.size() == 1);
  CHECK(notices[0].find("not a regular file") != std::string::npos);
  // A link the process planted (to a file of the agent's host, say).
  proc.AddProcess(603, 603);
  const std::string elsewhere = proc.dir.path + "/secret";
  { std::ofstream(elsewhere) << "1000 100 secret\n"; }
  REQUIRE(symlink(elsewhere.c_str(), proc.MapPath(603, 603).c_str()) == 0);
  CHECK(!maps.Lookup(603, 0x1000).has_value());
  notices = maps.TakeNotices();
  REQUIRE(notices.size() == 1);
  CHECK(notices[0].find("perf-603.map refused") != std::string::npos);
  CHECK(maps.stats().refused == 3);
  // Past the bound: what is within it is named, the rest is not, said once.
  proc.AddProcess(604, 604);
  std::uint64_t lines = 0;
  {
    std::ofstream f(proc.MapPath(604, 604));
    std::uint64_t bytes = 0;
    char line[96];
    while (bytes < PerfMaps::kMaxFileBytes + (1 << 20)) {
      int n = std::snprintf(line, sizeof(line), "%llx 10 JS:*f%llu /big.js:1:1\n",
                            static_cast<unsigned long long>(0x100000 + lines * 16),
                            static_cast<unsigned long long>(lines));
      f.write(line, n);
      bytes += static_cast<std::uint64_t>(n);
      ++lines;
    }
  }
  CHECK(maps.Lookup(604, 0x100000).has_value());
  CHECK_FALSE(maps.Lookup(604, 0x100000 + (lines - 1) * 16).has_value());
  notices = maps.TakeNotices();
  REQUIRE(notices.size() == 1);
  CHECK(notices[0].find("perf-604.map is larger than kiln-agent reads (8 MiB a file") != std::string::npos);
  CHECK(maps.stats().over_limit == 1);
  CHECK(maps.MemoryBytes() < PerfMaps::kMaxFileBytes * 7 / 4);
  MESSAGE("a perf map read to its bound (", lines, " lines written) holds ", maps.MemoryBytes() >> 20, " MiB");
}
