// store_test's crash child: opens a store with an age limit and runs a
// retention pass and the forgetting after it, killing itself (SIGKILL, as
// kill -9) at the named step. Its own process, started with exec: a fork of
// the test would lack RocksDB's background threads, and a compaction in it
// would wait for them forever.
//
//   store_crash_child DIR STEP NOW_NS AGE_SECONDS
//
// Exit codes: 0 the step never came; 1 usage; 2 open, 3 retention,
// 4 forgetting failed (the message on stderr).
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "storage/store.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s DIR STEP NOW_NS AGE_SECONDS\n", argv[0]);
    return 1;
  }
  const std::string step = argv[2];
  kiln::storage::StoreOptions o;
  o.retention_age = std::chrono::seconds(std::atoll(argv[4]));
  o.retention_interval = std::chrono::milliseconds(0);
  o.summarize_in_background = false;
  o.test_step = [&step](std::string_view s) {
    if (s == step) raise(SIGKILL);
  };
  auto store = kiln::storage::Store::Open(argv[1], kiln::storage::Store::Mode::kReadWrite, o);
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", store.status().ToString().c_str());
    return 2;
  }
  if (auto r = (*store)->ApplyRetention(std::atoll(argv[3])); !r.ok()) {
    std::fprintf(stderr, "%s\n", r.status().ToString().c_str());
    return 3;
  }
  if (auto f = (*store)->ForgetUnused(); !f.ok()) {
    std::fprintf(stderr, "%s\n", f.status().ToString().c_str());
    return 4;
  }
  return 0;
}
