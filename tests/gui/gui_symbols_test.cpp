// The Executables view through the real `kiln` binary: a store with native
// frames of a real program (its path and htlhash: kiln finds the symbols
// itself), of files that are not on this machine, of an executable without
// ids, and with statuses stored earlier (a table from debuginfod, a failure).
// The screenshot waits until the window's symbolizer is idle; the statuses it
// stored are then checked in the store, and the PNGs are kept for people.
//
// Needs a display (its own Xvfb when DISPLAY is unset); without one it
// prints why and exits 77 (ctest: skipped).
#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>

#include "ingest/symbols/elf_identity.h"
#include "storage/store.h"
#include "storage/symbol_table.h"

#define KILN_TEST_NAME "gui_symbols_test"
#include "tests/gui/screenshot_checks.h"

namespace kiln {
namespace {

using storage::SymbolStatus;
using State = storage::SymbolStatus::State;

uint64_t NmAddress(const std::string& path, const std::string& symbol) {
  const std::string command = "nm '" + path + "' | awk '$3 == \"" + symbol + "\" {print $1}'";
  FILE* p = popen(command.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[64] = {};
  const bool got = std::fgets(buf, sizeof buf, p) != nullptr;
  pclose(p);
  REQUIRE_MESSAGE(got, "nm finds no " << symbol << " in " << path);
  return std::strtoull(buf, nullptr, 16);
}

constexpr const char* kGoneHtlhash = "00112233445566778899aabbccddeeff";
constexpr const char* kServerHtlhash = "ffeeddccbbaa99887766554433221100";
constexpr const char* kLibcHtlhash = "0a1b2c3d4e5f60718293a4b5c6d7e8f9";

// Native frames of five executables over the last minute.
storage::ProfileBatch Batch(const std::string& victim, const std::string& victim_htlhash) {
  storage::ProfileBatch b;
  storage::ProfileDictionary& d = b.dict;
  auto exe = [&](const std::string& path, const std::string& htlhash) {
    storage::Executable e;
    e.file_name = d.AddString(path);
    if (!htlhash.empty()) e.htlhash = d.AddString(htlhash);
    d.executables.push_back(e);
    return static_cast<uint32_t>(d.executables.size() - 1);
  };
  auto frame = [&](uint32_t executable, uint64_t address) {
    storage::Frame f;
    f.executable = executable;
    f.address = address;
    f.type = storage::FrameType::kNative;
    d.frames.push_back(f);
    return static_cast<uint32_t>(d.frames.size() - 1);
  };
  const uint32_t v = exe(victim, victim_htlhash);
  const uint32_t libc = exe("/usr/lib/x86_64-linux-gnu/libc-test.so.6", kLibcHtlhash);
  const uint32_t gone = exe("/nonexistent/libgone.so.1", kGoneHtlhash);
  const uint32_t server = exe("/opt/app/bin/server", kServerHtlhash);
  const uint32_t vdso = exe("[vdso]", "");
  const uint32_t main_f = frame(v, NmAddress(victim, "main") + 4);
  const uint32_t middle = frame(v, NmAddress(victim, "kiln_victim_middle") + 4);
  const uint32_t leaf = frame(v, NmAddress(victim, "kiln_victim_leaf") + 4);
  const uint32_t set = d.AddAttributeSet({{d.AddString("process.executable.name"), d.AddString("victim")}});
  const int64_t now = storage::UnixNowNs();
  int64_t t = now - 30'000'000'000;
  auto samples = [&](std::vector<uint32_t> frames, int n) {
    const uint32_t stack = d.AddStack(frames);
    for (int i = 0; i < n; ++i)
      b.samples.push_back({t += 10'000'000, stack, set, 0, 0, 1});
  };
  samples({main_f, middle, leaf}, 40);
  samples({main_f, middle, frame(libc, 0x1200)}, 15);
  samples({main_f, frame(gone, 0x2040)}, 8);
  samples({main_f, frame(gone, 0x2100)}, 3);
  samples({frame(server, 0x40)}, 5);
  samples({main_f, frame(vdso, 0x10)}, 2);
  return b;
}

TEST_CASE("the Executables view shows what the window's symbolizer found and what was stored before") {
  testing::TestDisplay::Get(KILN_TEST_NAME);
  const std::string victim = fs::canonical(KILN_VICTIM).string();
  auto identity = symbols::ReadElfIdentity(victim);
  REQUIRE(identity.ok());
  const std::string dir = MakeTempDir();
  {
    auto store = storage::Store::Open(dir, storage::Store::Mode::kReadWrite);
    REQUIRE(store.ok());
    REQUIRE((*store)->Write(Batch(victim, identity->htlhash)).ok());
    // Stored before this run: a table from debuginfod and a failure.
    storage::SymbolTableBuilder builder;
    builder.AddSymbol("__libc_start_call_main", 0x1000, 0x100);
    builder.AddSymbol("__GI___libc_read", 0x1100, 0x100);
    builder.AddSymbol("__memcpy_avx_unaligned_erms", 0x1200, 0x100);
    const storage::SymbolTable table = std::move(builder).Build();
    REQUIRE((*store)
                ->PutSymbols({storage::HtlhashSymbolKey(kLibcHtlhash)}, table,
                             {State::kSymbolized, "debuginfod https://debuginfod.debian.net",
                              "symtab: 3 symbols", table.function_count(), storage::UnixNowNs()})
                .ok());
    REQUIRE(
        (*store)
            ->PutSymbolStatus({storage::HtlhashSymbolKey(kServerHtlhash)},
                              {State::kFailed, "debug file /opt/app/bin/server.debug",
                               "/opt/app/bin/server.debug: section 31 (.debug_info) extends past the end of "
                               "the file",
                               0, storage::UnixNowNs()})
            .ok());
  }
  const std::string png = dir + "-executables.png";
  REQUIRE(Screenshot(dir, "executables", png, "executables-symbols.png") == 0);
  CheckNotBlank(LoadPng(png));
  fs::remove(png);
  // The flamegraph of the same store, named by the symbols (for people).
  const std::string flame = dir + "-flamegraph.png";
  REQUIRE(Screenshot(dir, "flamegraph", flame, "flamegraph-symbols.png") == 0);
  const Image flame_image = LoadPng(flame);
  CheckNotBlank(flame_image);
  CHECK(CountTypeColors(flame_image)[FrameType::kNative] > 5000);
  fs::remove(flame);

  auto store = storage::Store::Open(dir, storage::Store::Mode::kReadOnly);
  REQUIRE(store.ok());
  std::map<std::string, SymbolStatus> statuses;
  for (const auto& [key, status] : (*store)->SymbolStatuses()) statuses[key] = status;
  const SymbolStatus& found = statuses[storage::HtlhashSymbolKey(identity->htlhash)];
  CHECK(found.state == State::kSymbolized);
  CHECK(found.source == "local file " + victim);
  CHECK(found.functions >= 3);
  CHECK(statuses[storage::HtlhashSymbolKey(kGoneHtlhash)].state == State::kNoSymbols);
  // Statuses stored before are left alone.
  CHECK(statuses[storage::HtlhashSymbolKey(kServerHtlhash)].state == State::kFailed);
  CHECK(statuses[storage::HtlhashSymbolKey(kLibcHtlhash)].source ==
        "debuginfod https://debuginfod.debian.net");
  bool logged = false;
  for (const auto& e : (*store)->ReadLog(100)) {
    if (e.message.find("symbols for " + victim) != std::string::npos &&
        e.message.find("from local file") != std::string::npos) {
      logged = true;
    }
  }
  CHECK(logged);
  store->reset();
  fs::remove_all(dir);
}

TEST_CASE("an opened capture is symbolized in its own store, like the live one") {
  const std::string victim = fs::canonical(KILN_VICTIM).string();
  auto identity = symbols::ReadElfIdentity(victim);
  REQUIRE(identity.ok());
  const std::string source = MakeTempDir();
  {
    auto store = storage::Store::Open(source, storage::Store::Mode::kReadWrite);
    REQUIRE(store.ok());
    REQUIRE((*store)->Write(Batch(victim, identity->htlhash)).ok());
  }
  // An OTLP capture of unnamed frames that carry the program's htlhash.
  const std::string capture = source + "-capture.pb";
  const std::string command =
      std::string(KILN_BIN) + " export --data-dir " + source + " --format otlp -o " + capture;
  REQUIRE(std::system(command.c_str()) == 0);
  const std::string dir = MakeTempDir();
  const std::string png = dir + "-capture.png";
  REQUIRE(Screenshot(dir, "executables", png, "capture-executables-symbols.png", {"--open", capture}) == 0);
  CheckNotBlank(LoadPng(png));
  // The capture's symbols went to its temporary store, not the live one.
  auto live = storage::Store::Open(dir, storage::Store::Mode::kReadOnly);
  REQUIRE(live.ok());
  CHECK((*live)->SymbolStatuses().empty());
  live->reset();
  fs::remove(png);
  fs::remove(capture);
  fs::remove_all(dir);
  fs::remove_all(source);
}

}  // namespace
}  // namespace kiln
