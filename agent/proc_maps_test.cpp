#include "proc_maps.h"

#include <doctest/doctest.h>

#include "bpf_sampler.h"
#include "kernel_symbols.h"
#include "process_tracker.h"

using namespace kiln::agent;

TEST_CASE("maps: parse the kernel's format") {
  const char* text =
      "55d0c8a00000-55d0c8a02000 r--p 00000000 fd:01 1311   /usr/bin/cat\n"
      "55d0c8a02000-55d0c8a07000 r-xp 00002000 fd:01 1311   /usr/bin/cat\n"
      "7f3e1c000000-7f3e1c021000 rw-p 00000000 00:00 0 \n"
      "7f3e1d028000-7f3e1d1bd000 r-xp 00028000 103:02 2621 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
      "7f3e1d400000-7f3e1d401000 r-xp 00000000 00:1f 77 /tmp/a b (deleted)\n"
      "7ffc6d7e0000-7ffc6d7e2000 r-xp 00000000 00:00 0                          [vdso]\n";
  auto maps = ParseProcMaps(text, "test");
  REQUIRE(maps.ok());
  REQUIRE(maps->size() == 6);
  const MapsEntry& cat = (*maps)[1];
  CHECK(cat.start == 0x55d0c8a02000);
  CHECK(cat.end == 0x55d0c8a07000);
  CHECK(cat.file_offset == 0x2000);
  CHECK(cat.executable);
  CHECK(cat.readable);
  CHECK(cat.inode == 1311);
  CHECK(cat.dev_major == 0xfd);
  CHECK(cat.path == "/usr/bin/cat");
  CHECK(cat.IsFile());
  CHECK((*maps)[2].path.empty());
  CHECK_FALSE((*maps)[2].IsFile());
  CHECK((*maps)[3].dev_major == 0x103);
  CHECK((*maps)[4].path == "/tmp/a b");
  CHECK((*maps)[4].deleted);
  CHECK((*maps)[5].path == "[vdso]");
  CHECK_FALSE((*maps)[5].IsFile());
  CHECK_FALSE((*maps)[5].IsAnonymousCode());  // executable, but not a JIT's
  CHECK_FALSE((*maps)[2].IsAnonymousCode());  // anonymous, but not executable
  CHECK_FALSE(cat.IsAnonymousCode());
  auto jit = ParseProcMaps("7f0000000000-7f0000010000 rwxp 00000000 00:00 0 \n"
                           "7f0000010000-7f0000020000 r-xp 00000000 00:00 0   [anon:v8 code]\n",
                           "jit");
  REQUIRE(jit.ok());
  REQUIRE(jit->size() == 2);
  CHECK((*jit)[0].IsAnonymousCode());
  CHECK((*jit)[1].IsAnonymousCode());

  CHECK(FindMapping(*maps, 0x55d0c8a02000) == &(*maps)[1]);
  CHECK(FindMapping(*maps, 0x55d0c8a06fff) == &(*maps)[1]);
  CHECK(FindMapping(*maps, 0x55d0c8a07000) == nullptr);
  CHECK(FindMapping(*maps, 0x1000) == nullptr);
}

TEST_CASE("maps: errors name the input and line") {
  auto r = ParseProcMaps("0-1000 r-xp 0 00:00 0\nzzzz r-xp\n", "/proc/42/maps");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error() == "/proc/42/maps line 2: bad address range");
}

TEST_CASE("container id from cgroup") {
  const std::string id = "3f1c2d0e9b8a7f6e5d4c3b2a190817263544536271809a8b7c6d5e4f3a2b1c0d";
  CHECK(ContainerIdFromCgroup("0::/system.slice/docker-" + id + ".scope\n") == id);
  CHECK(ContainerIdFromCgroup("12:cpu:/kubepods/burstable/pod1234/" + id + "\n") == id);
  CHECK(ContainerIdFromCgroup("0::/kubepods.slice/cri-containerd-" + id + ".scope\n") == id);
  CHECK(ContainerIdFromCgroup("0::/user.slice/user-1000.slice/session-2.scope\n").empty());
  CHECK(ContainerIdFromCgroup("").empty());
}

TEST_CASE("online CPU list") {
  CHECK(*ParseCpuList("0-1\n") == std::vector<int>{0, 1});
  CHECK(*ParseCpuList("0,2-4,7") == std::vector<int>{0, 2, 3, 4, 7});
  CHECK_FALSE(ParseCpuList("").ok());
  CHECK_FALSE(ParseCpuList("3-1").ok());
}

TEST_CASE("kallsyms: text symbols, modules, lookups") {
  KernelSymbols k;
  auto n = k.LoadFromText(
      "ffffffff81000000 T _stext\n"
      "ffffffff81001000 t do_syscall_64\n"
      "ffffffff81002000 D some_data\n"
      "ffffffff81003000 T vfs_read\n"
      "ffffffffc0001000 t ext4_fill_super\t[ext4]\n");
  REQUIRE(n.ok());
  CHECK(*n == 4);
  CHECK(k.Lookup(0xffffffff81001234).function == "do_syscall_64");
  CHECK(k.Lookup(0xffffffff81001234).module == "vmlinux");
  CHECK(k.Lookup(0xffffffff81003010).function == "vfs_read");
  CHECK(k.Lookup(0xffffffffc0001010).function == "ext4_fill_super");
  CHECK(k.Lookup(0xffffffffc0001010).module == "ext4");
  auto hidden = KernelSymbols().LoadFromText("0000000000000000 T _stext\n0000000000000000 t foo\n");
  REQUIRE_FALSE(hidden.ok());
  CHECK(hidden.error().find("kptr_restrict") != std::string::npos);
}
