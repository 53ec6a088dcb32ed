// SymbolService against a real store and a real program, without the window
// or the receiver: it names an executable found on this machine by itself,
// reports user-given files that do not fit, retries on request, and its
// progress and Idle() settle; and the request files through which `kiln
// symbols add` reaches a running kiln.
#include "app/symbol_service.h"

#include <doctest/doctest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "app/symbol_requests.h"
#include "storage/model/test_fixtures.h"
#include "storage/store.h"
#include "tests/integration/elf_oracle.h"
#include "tests/integration/kiln_process.h"

namespace kiln::testing {
namespace {

namespace fs = std::filesystem;
using storage::SymbolStatus;

// One stack main -> kiln_victim_middle -> kiln_victim_leaf of `victim`,
// unnamed, as an agent on this host would send it.
storage::ProfileBatch VictimBatch(const std::string& victim) {
  storage::ProfileBatch b;
  storage::Executable e;
  e.file_name = b.dict.AddString(victim);
  e.htlhash = b.dict.AddString(HtlhashOf(victim));
  b.dict.executables.push_back(e);
  std::vector<uint32_t> stack;
  for (const char* f : {"main", "kiln_victim_middle", "kiln_victim_leaf"}) {
    storage::Frame frame;
    frame.executable = 1;
    frame.address = NmAddress(victim, f) + 4;
    frame.type = storage::FrameType::kNative;
    b.dict.frames.push_back(frame);
    stack.push_back(static_cast<uint32_t>(b.dict.frames.size() - 1));
  }
  const uint32_t s = b.dict.AddStack(stack);
  b.samples.push_back({1'760'000'000'000'000'000, s, 0, 0, 0, 1});
  return b;
}

bool WaitIdle(const app::SymbolService& service) {
  for (int i = 0; i < 600; ++i) {
    if (service.Idle()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// The status stored under `key`; "not attempted" when there is none.
SymbolStatus StatusOf(const storage::Store& store, const std::string& key) {
  for (const auto& [k, s] : store.SymbolStatuses()) {
    if (k == key) return s;
  }
  return {};
}

bool Logged(const storage::Store& store, const std::string& needle) {
  for (const auto& e : store.ReadLog(100)) {
    if (e.message.find(needle) != std::string::npos) return true;
  }
  return false;
}

// A store holding VictimBatch of the victim program, with no debuginfod
// configured from the environment.
struct VictimStore {
  VictimStore() {
    unsetenv("DEBUGINFOD_URLS");
    auto opened = storage::Store::Open(dir.path, storage::Store::Mode::kReadWrite);
    REQUIRE(opened.ok());
    store = std::move(*opened);
    REQUIRE(store->Write(VictimBatch(victim)).ok());
  }
  TempDir dir;
  const std::string victim = fs::canonical(KILN_VICTIM).string();
  const std::string key = storage::HtlhashSymbolKey(HtlhashOf(victim));
  std::unique_ptr<storage::Store> store;
};

}  // namespace

TEST_CASE("SymbolService names a local executable, reports files that do not fit, and retries") {
  VictimStore fixture;
  storage::Store& store = *fixture.store;
  const std::string& victim = fixture.victim;
  const std::string& key = fixture.key;

  std::atomic<int> changes{0};
  app::SymbolService service(store, {}, [&] { ++changes; });
  REQUIRE(WaitIdle(service));
  CHECK(changes > 0);
  CHECK_FALSE(service.Progress().busy);
  const SymbolStatus found = StatusOf(store, key);
  CHECK(found.state == SymbolStatus::State::kSymbolized);
  CHECK(found.source == "local file " + victim);
  CHECK(found.functions >= 3);
  CHECK(Logged(store, "symbols for " + victim));
  // Queries name the frames now.
  auto slice = store.Run({});
  REQUIRE(slice.ok());
  std::vector<std::string> names;
  for (uint32_t f : (*slice)->dict.Stack((*slice)->weights.at(0).stack))
    names.push_back(storage::FrameLabel((*slice)->dict, f));
  CHECK(names == std::vector<std::string>{"main", "kiln_victim_middle", "kiln_victim_leaf"});

  // User-given files that do not fit say why, in order, and store nothing.
  const std::string text = fixture.dir.path + "/notes.txt";
  std::ofstream(text) << "hello\n";
  service.AddFiles({KILN_VICTIM_OTHER, text});
  REQUIRE(WaitIdle(service));
  const std::vector<app::AddFileOutcome> outcomes = service.TakeOutcomes();
  REQUIRE(outcomes.size() == 2);
  CHECK_FALSE(outcomes[0].ok);
  CHECK(outcomes[0].message.find("matches no executable in " + fixture.dir.path) != std::string::npos);
  CHECK_FALSE(outcomes[1].ok);
  CHECK(outcomes[1].message.find("not an ELF file") != std::string::npos);
  CHECK(service.TakeOutcomes().empty());

  // Retry looks again and stores a fresh status.
  service.Retry(key);
  REQUIRE(WaitIdle(service));
  CHECK(Logged(store, "retrying symbols for " + victim));
  const SymbolStatus retried = StatusOf(store, key);
  CHECK(retried.state == SymbolStatus::State::kSymbolized);
  CHECK(retried.updated_ns > found.updated_ns);
}

TEST_CASE("DebuginfodUrls: the flag wins over DEBUGINFOD_URLS; spaces and commas separate") {
  setenv("DEBUGINFOD_URLS", "https://a.example  https://b.example", 1);
  CHECK(app::DebuginfodUrls("") == std::vector<std::string>{"https://a.example", "https://b.example"});
  CHECK(app::DebuginfodUrls("http://127.0.0.1:8002,http://x") ==
        std::vector<std::string>{"http://127.0.0.1:8002", "http://x"});
  unsetenv("DEBUGINFOD_URLS");
  CHECK(app::DebuginfodUrls("").empty());
}

TEST_CASE("IsElfFile looks at the magic only") {
  TempDir dir;
  CHECK(app::IsElfFile(KILN_VICTIM));
  CHECK(app::IsElfFile(KILN_VICTIM_DEBUG));
  const std::string text = dir.path + "/x.txt";
  std::ofstream(text) << "\x7f"
                         "EL";
  CHECK_FALSE(app::IsElfFile(text));
  CHECK_FALSE(app::IsElfFile(dir.path + "/missing"));
}

// One native sample of the executable at `path`, sent by base name (as
// agents send it) with its htlhash, and these attributes.
storage::ProfileBatch OneSampleOf(const std::string& path,
                                  const std::vector<std::pair<std::string, std::string>>& attributes) {
  return storage::testing::OneNativeSample({fs::path(path).filename().string(), HtlhashOf(path), ""}, 0x1000,
                                           attributes);
}

// Agents send a mapping's base name, not its path: the service finds the
// file through the profile's process.executable.path, through the
// mappings of the profile's live processes, and in the system folders.
TEST_CASE("SymbolService finds executables sent by base name, as agents send them") {
  unsetenv("DEBUGINFOD_URLS");
  TempDir dir;
  const std::string victim = fs::canonical(KILN_VICTIM).string();
  const std::string self = fs::canonical("/proc/self/exe").string();
  std::string libc;
  {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line) && libc.empty()) {
      size_t slash = line.find('/');
      if (slash != std::string::npos && line.find("/libc.so.6") != std::string::npos)
        libc = line.substr(slash);
    }
  }
  REQUIRE_FALSE(libc.empty());

  auto store = storage::Store::Open(dir.path, storage::Store::Mode::kReadWrite);
  REQUIRE(store.ok());
  // One executable per way of finding it, each named by base name only:
  // the victim through process.executable.path, this test binary through
  // its pid's mappings, libc through the system folders.
  REQUIRE((*store)->Write(OneSampleOf(victim, {{"process.executable.path", victim}})).ok());
  // As the receiver stores a local agent's sample.
  REQUIRE((*store)
              ->Write(OneSampleOf(self,
                                  {{"process.pid", std::to_string(getpid())}, {"kiln.sender", "127.0.0.1"}}))
              .ok());
  REQUIRE((*store)->Write(OneSampleOf(libc, {})).ok());

  app::SymbolService service(**store, {});
  REQUIRE(WaitIdle(service));
  const SymbolStatus by_path = StatusOf(**store, storage::HtlhashSymbolKey(HtlhashOf(victim)));
  CHECK(by_path.state == SymbolStatus::State::kSymbolized);
  CHECK(by_path.source == "local file " + victim);
  const SymbolStatus by_pid = StatusOf(**store, storage::HtlhashSymbolKey(HtlhashOf(self)));
  CHECK(by_pid.state == SymbolStatus::State::kSymbolized);
  CHECK(by_pid.source.find(fs::path(self).filename().string()) != std::string::npos);
  const SymbolStatus by_folder = StatusOf(**store, storage::HtlhashSymbolKey(HtlhashOf(libc)));
  // libc is found on this machine; its symbols may come from the file or
  // from its debug file when libc6-dbg is installed.
  CHECK(by_folder.state == SymbolStatus::State::kSymbolized);
  CHECK(by_folder.functions > 100);
}

TEST_CASE(
    "pids sent from another host, or through a tunnel by another host, are not looked up in this /proc") {
  unsetenv("DEBUGINFOD_URLS");
  const std::string self = fs::canonical("/proc/self/exe").string();
  char host[256] = {};
  REQUIRE(gethostname(host, sizeof host - 1) == 0);
  struct Case {
    const char* sender;
    std::string host_name;  // "" = not sent
    bool found;
  };
  for (const Case& c : {Case{"10.0.0.5", "", false}, Case{"127.0.0.1", "build-server-7", false},
                        Case{"127.0.0.1", host, true}, Case{"::1", "", true}}) {
    CAPTURE(c.sender);
    CAPTURE(c.host_name);
    TempDir dir;
    auto store = storage::Store::Open(dir.path, storage::Store::Mode::kReadWrite);
    REQUIRE(store.ok());
    std::vector<std::pair<std::string, std::string>> attrs = {{"process.pid", std::to_string(getpid())},
                                                              {"kiln.sender", c.sender}};
    if (!c.host_name.empty()) attrs.emplace_back("host.name", c.host_name);
    storage::ProfileBatch b = OneSampleOf(self, attrs);
    REQUIRE((*store)->Write(b).ok());
    app::SymbolService service(**store, {});
    REQUIRE(WaitIdle(service));
    const SymbolStatus status = StatusOf(**store, storage::HtlhashSymbolKey(HtlhashOf(self)));
    CHECK((status.state == SymbolStatus::State::kSymbolized) == c.found);
  }
}

TEST_CASE("an executable that found no symbols last time is tried again once when kiln starts") {
  VictimStore fixture;
  storage::Store& store = *fixture.store;
  const std::string& victim = fixture.victim;
  const std::string& key = fixture.key;
  // As an earlier kiln would have left it when the file was not there.
  SymbolStatus none{.state = SymbolStatus::State::kNoSymbols, .source = "tried: no local file or debug file"};
  REQUIRE(store.PutSymbolStatus({key}, none).ok());

  app::SymbolService service(store, {});
  REQUIRE(WaitIdle(service));
  const SymbolStatus now = StatusOf(store, key);
  CHECK(now.state == SymbolStatus::State::kSymbolized);
  CHECK(now.source == "local file " + victim);
}

TEST_CASE("a debuginfod server that cannot be reached leaves 'no symbols found', tried again next start") {
  unsetenv("DEBUGINFOD_URLS");
  TempDir dir;
  auto opened = storage::Store::Open(dir.path, storage::Store::Mode::kReadWrite);
  REQUIRE(opened.ok());
  storage::Store& store = **opened;
  // The victim as sent from another host: a path that does not exist here,
  // so only debuginfod could name it.
  const std::string victim = KILN_VICTIM;
  storage::ProfileBatch batch = VictimBatch(victim);
  batch.dict.executables.back().file_name = batch.dict.AddString("/nonexistent/kiln-test/victim");
  batch.dict.executables.back().gnu_build_id = batch.dict.AddString(BuildIdOf(victim));
  REQUIRE(store.Write(batch).ok());
  const std::string key = storage::HtlhashSymbolKey(HtlhashOf(victim));

  app::SymbolSourceOptions options;
  options.debuginfod_urls = {"http://127.0.0.1:1"};  // nothing listens on port 1: refused at once
  options.debuginfod_cache_dir = dir.path + "-cache";
  {
    app::SymbolService service(store, options);
    REQUIRE(WaitIdle(service));
  }
  fs::remove_all(options.debuginfod_cache_dir);
  const SymbolStatus status = StatusOf(store, key);
  // A network failure says nothing about the executable: not "failed"
  // (which waits for the user's Retry), so the next start asks again.
  CHECK(status.state == SymbolStatus::State::kNoSymbols);
  CHECK_MESSAGE(status.source.find("debuginfod: ") != std::string::npos, status.source);
  CHECK_MESSAGE(status.source.find("127.0.0.1:1") != std::string::npos, status.source);
}

TEST_CASE("symbol requests: taken once, retaken only when abandoned, answered with one line per file") {
  TempDir dir;
  const std::string requests = app::SymbolRequestDir(dir.path);
  CHECK(app::TakeSymbolRequests(requests, true).empty());  // no folder yet: no requests

  auto first = app::SubmitSymbolRequest(dir.path, {"relative/a.debug", "/abs/b"});
  auto second = app::SubmitSymbolRequest(dir.path, {"/abs/c"});
  REQUIRE(first.ok());
  REQUIRE(second.ok());
  std::vector<app::TakenSymbolRequest> taken = app::TakeSymbolRequests(requests, false);
  REQUIRE(taken.size() == 2);
  CHECK(taken[0].id == *first);  // oldest first
  CHECK(taken[0].files ==
        std::vector<std::string>{(fs::current_path() / "relative/a.debug").string(), "/abs/b"});
  CHECK(taken[1].files == std::vector<std::string>{"/abs/c"});
  CHECK(app::TakeSymbolRequests(requests, false).empty());     // in hand: not taken twice
  CHECK(app::TakeSymbolRequests(requests, true).size() == 2);  // a new kiln takes what a dead one held

  // Not answered yet: the command times out and the request stays.
  auto waiting = app::AwaitSymbolRequest(dir.path, *second, std::chrono::milliseconds(200));
  CHECK(absl::IsDeadlineExceeded(waiting.status()));

  REQUIRE(app::AnswerSymbolRequest(requests, *first,
                                   {{"/x/a.debug", true, "matched app: stored 3 functions"},
                                    {"/x/b", false, "not an ELF file\twith a tab"}})
              .ok());
  auto answered = app::AwaitSymbolRequest(dir.path, *first, std::chrono::seconds(5));
  REQUIRE(answered.ok());
  REQUIRE(answered->size() == 2);
  CHECK((*answered)[0].ok);
  CHECK((*answered)[0].path == "/x/a.debug");
  CHECK((*answered)[0].message == "matched app: stored 3 functions");
  CHECK_FALSE((*answered)[1].ok);
  CHECK((*answered)[1].message == "not an ELF file with a tab");
  // The answered request is gone; the other one is still there to take.
  CHECK(app::TakeSymbolRequests(requests, true).size() == 1);
  CHECK(absl::IsNotFound(app::AwaitSymbolRequest(dir.path, "no-such-id", std::chrono::seconds(1)).status()));
}

}  // namespace kiln::testing
