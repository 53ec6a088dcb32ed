// The window's capture logic without a window (app/capture_sources.h): the
// source list, loads with errors and cancel, the File menu's export and
// import actions. No display needed.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include "absl/strings/str_split.h"
#include "app/capture_sources.h"
#include "ingest/capture/capture.h"
#include "ingest/capture/capture_commands.h"
#include "ingest/capture/export.h"
#include "storage/model/flame_tree.h"
#include "storage/model/folded.h"
#include "storage/store.h"

namespace kiln::app {
namespace {

namespace fs = std::filesystem;

std::string MakeTempDir() {
  std::string tmpl = (fs::temp_directory_path() / "kiln-capture-sources-test-XXXXXX").string();
  REQUIRE(mkdtemp(tmpl.data()) != nullptr);
  return tmpl;
}

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary);
  out << content;
}

// Polls like the frame loop until nothing is in flight (at most 60 s).
void PollUntilIdle(SourceList& list) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (list.Busy() && std::chrono::steady_clock::now() < deadline) {
    list.Poll();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  list.Poll();
  REQUIRE_FALSE(list.Busy());
}

// Folded lines of everything a store holds for `kind`, as the exporter
// prints them with the window's default grouping.
std::vector<std::string> StoreFolded(storage::Store& store, const storage::SampleType& kind = {}) {
  storage::Query query;
  query.sample_type = kind;
  auto slice = store.Run(query);
  REQUIRE(slice.ok());
  capture::ExportOptions options;
  options.tree.group_by = storage::GroupBy::kNone;
  const std::string text = capture::FoldedText(*slice, options);
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  std::sort(lines.begin(), lines.end());
  return lines;
}

struct Fixture {
  std::string dir = MakeTempDir();
  std::unique_ptr<storage::Store> live;
  Fixture() {
    auto store = storage::Store::Open(dir + "/live", storage::Store::Mode::kReadWrite);
    REQUIRE(store.ok());
    live = *std::move(store);
  }
  ~Fixture() {
    live.reset();
    fs::remove_all(dir);
  }
};

constexpr const char* kFolded =
    "main;parse;lex 5\n"
    "main;parse 2\n"
    "main;render;draw 7\n";

bool LogHas(storage::Store& store, storage::LogLevel level, const std::string& needle) {
  for (const auto& e : store.ReadLog(100)) {
    if (e.level == level && e.message.find(needle) != std::string::npos) return true;
  }
  return false;
}

TEST_CASE("the live store is the first source; an opened capture becomes the selected one") {
  Fixture f;
  const std::string path = f.dir + "/stacks.folded";
  WriteFile(path, kFolded);
  std::string temp_dir;
  {
    SourceList list(*f.live, nullptr, f.dir + "/live", {});
    REQUIRE(list.sources().size() == 1);
    CHECK(list.sources()[0]->name == "Live store");
    CHECK_FALSE(list.Current().IsCapture());
    CHECK(list.selected() == 0);

    list.Open(path);
    CHECK(list.Busy());
    PollUntilIdle(list);
    REQUIRE(list.sources().size() == 2);
    CHECK(list.selected() == 1);
    const Source& s = list.Current();
    CHECK(s.IsCapture());
    CHECK(s.name == "stacks.folded");
    CHECK(s.path == path);
    CHECK(s.session.offline);
    CHECK(s.session.preset == ui::TimePreset::kAll);
    CHECK(s.store->Stats().samples > 0);
    temp_dir = s.capture_store->dir();
    CHECK(fs::exists(temp_dir));
    REQUIRE(!list.notices().empty());
    CHECK_FALSE(list.notices().back().error);
    CHECK(list.notices().back().text.find("Opened " + path) != std::string::npos);
    // The capture's own store holds exactly the file's stacks; the live
    // store received nothing but the log line.
    CHECK(StoreFolded(*s.store) ==
          std::vector<std::string>{"main;parse 2", "main;parse;lex 5", "main;render;draw 7"});
    CHECK(f.live->Stats().samples == 0);
    CHECK(LogHas(*f.live, storage::LogLevel::kInfo, "Opened " + path));

    // Info notices go by themselves.
    list.ExpireNotices(std::chrono::steady_clock::now());
    CHECK(!list.notices().empty());
    list.ExpireNotices(std::chrono::steady_clock::now() + std::chrono::seconds(kInfoNoticeSeconds + 1));
    CHECK(list.notices().empty());

    list.Select(0);
    CHECK_FALSE(list.Current().IsCapture());
    list.Select(7);  // out of range: ignored
    CHECK(list.selected() == 0);

    list.Close(0);  // the live store cannot be closed
    CHECK(list.sources().size() == 2);
    list.Select(1);
    list.Close(1);
    CHECK(list.sources().size() == 1);
    CHECK(list.selected() == 0);
    CHECK_FALSE(fs::exists(temp_dir));  // closing removes the temporary store
  }
}

TEST_CASE("temporary stores are removed when the list goes away") {
  Fixture f;
  const std::string path = f.dir + "/stacks.folded";
  WriteFile(path, kFolded);
  std::string temp_dir;
  {
    SourceList list(*f.live, nullptr, "", {});
    list.Open(path);
    PollUntilIdle(list);
    REQUIRE(list.sources().size() == 2);
    temp_dir = list.sources()[1]->capture_store->dir();
    CHECK(fs::exists(temp_dir));
  }
  CHECK_FALSE(fs::exists(temp_dir));
}

TEST_CASE("a bad file (dropped or opened) gives an error notice and a Log entry naming file and position") {
  Fixture f;
  SourceList list(*f.live, nullptr, "", {});
  // Binary that is neither OTLP nor a valid pprof: a field with a huge
  // declared length.
  const std::string bad = f.dir + "/broken.pb";
  WriteFile(bad, std::string("\x0a\xff\xff\xff\xff\x0f", 6) + "abc");
  const std::string missing = f.dir + "/does-not-exist.pprof";
  const std::string empty = f.dir + "/nothing.txt";
  WriteFile(empty, "this is not a profile\n");
  list.Open(bad);
  list.Open(missing);
  list.Open(empty);
  list.Open(f.dir);  // a directory
  PollUntilIdle(list);
  CHECK(list.sources().size() == 1);  // none became a source
  CHECK(list.selected() == 0);
  REQUIRE(list.notices().size() == 4);
  for (const Notice& n : list.notices()) {
    CAPTURE(n.text);
    CHECK(n.error);
    CHECK(n.text.rfind("Cannot open ", 0) == 0);
  }
  auto find = [&](const std::string& path) -> std::string {
    for (const Notice& n : list.notices()) {
      if (n.text.find(path) != std::string::npos) return n.text;
    }
    return "";
  };
  const std::string bad_text = find(bad + ": byte ");
  CAPTURE(bad_text);
  CHECK(!bad_text.empty());  // "FILE: byte N: ..." from the importer
  CHECK(!find(missing).empty());
  CHECK(!find(f.dir + ": is a directory").empty());
  CHECK(!find(empty).empty());  // the folded importer: no stack lines, first bad line named
  CHECK(LogHas(*f.live, storage::LogLevel::kError, bad));
  CHECK(LogHas(*f.live, storage::LogLevel::kError, missing));
  // Errors stay until dismissed.
  list.ExpireNotices(std::chrono::steady_clock::now() + std::chrono::hours(1));
  CHECK(list.notices().size() == 4);
  list.DismissNotices();
  CHECK(list.notices().empty());
}

TEST_CASE("cancel stops a large load") {
  Fixture f;
  const std::string big = f.dir + "/big.folded";
  {
    // ~48 MB: the importer checks the cancel flag every few MB.
    std::ofstream out(big);
    const std::string frame(60, 'f');
    for (int i = 0; i < 400000; ++i) out << "main;" << frame << ";" << frame << i % 97 << " 1\n";
  }
  SourceList list(*f.live, nullptr, "", {});
  list.Open(big);
  REQUIRE(list.loads().size() == 1);
  list.loads()[0]->Cancel();
  PollUntilIdle(list);
  CHECK(list.sources().size() == 1);
  REQUIRE(list.notices().size() == 1);
  CHECK_FALSE(list.notices()[0].error);
  CHECK(list.notices()[0].text.find("cancelled") != std::string::npos);
}

TEST_CASE("export of the current slice writes a file that re-imports with the same folded lines") {
  Fixture f;
  const std::string path = f.dir + "/stacks.folded";
  WriteFile(path, kFolded);
  SourceList list(*f.live, nullptr, "", {});
  list.Open(path);
  PollUntilIdle(list);
  REQUIRE(list.sources().size() == 2);
  storage::Store& capture_store = *list.Current().store;
  const auto expected = StoreFolded(capture_store);
  storage::Query query;
  auto slice = capture_store.Run(query);
  REQUIRE(slice.ok());

  for (const char* name : {"otlp", "pprof", "folded", "svg"}) {
    CAPTURE(name);
    capture::ExportFormat format;
    REQUIRE(capture::ParseExportFormat(name, &format));
    const std::string out = f.dir + "/export." + name;
    // Through a BackgroundTask, as the File menu runs it.
    list.Export(*slice, list.Current().shared_store, query, format,
                storage::FlameTreeOptions{.group_by = storage::GroupBy::kNone}, out);
    PollUntilIdle(list);
    REQUIRE(!list.notices().empty());
    CAPTURE(list.notices().back().text);
    CHECK_FALSE(list.notices().back().error);
    CHECK(list.notices().back().text.find(out) != std::string::npos);
    REQUIRE(fs::file_size(out) > 0);
    if (std::string(name) == "svg") {
      std::ifstream in(out);
      const std::string svg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      CHECK(svg.find("<svg") != std::string::npos);
      CHECK(svg.find("render") != std::string::npos);
      continue;
    }
    auto back = TemporaryStore::Create();
    REQUIRE(back.ok());
    auto imported = capture::ImportIntoStore(&(*back)->store(), out, {});
    REQUIRE(imported.ok());
    CHECK(StoreFolded((*back)->store()) == expected);
  }
}

TEST_CASE("export failures are reported, not thrown") {
  auto no_slice =
      ExportSliceToFile(nullptr, capture::ExportFormat::kFolded, storage::FlameTreeOptions{.group_by = storage::GroupBy::kNone}, "/tmp/x");
  CHECK_FALSE(no_slice.ok());
  auto slice = std::make_shared<const storage::ProfileSlice>();
  auto bad_dir = ExportSliceToFile(slice, capture::ExportFormat::kFolded, storage::FlameTreeOptions{.group_by = storage::GroupBy::kNone},
                                   "/nonexistent-dir/out");
  CHECK_FALSE(bad_dir.ok());
  CHECK(std::string(bad_dir.status().message()).find("/nonexistent-dir/out") != std::string::npos);
}

TEST_CASE("import into store copies the capture into the live store") {
  Fixture f;
  const std::string path = f.dir + "/stacks.folded";
  WriteFile(path, kFolded);
  SourceList list(*f.live, nullptr, "", {});
  list.ImportIntoLive(path);
  PollUntilIdle(list);
  REQUIRE(!list.notices().empty());
  CHECK_FALSE(list.notices().back().error);
  CHECK(list.notices().back().text.find("Imported 3 samples from " + path) != std::string::npos);
  CHECK(StoreFolded(*f.live) ==
        std::vector<std::string>{"main;parse 2", "main;parse;lex 5", "main;render;draw 7"});
}

TEST_CASE("a capture opens as what it is: its default sample type, its own time facts") {
  Fixture f;
  const char* src = std::getenv("KILN_SOURCE_DIR");
  const std::string corpus = std::string(src != nullptr ? src : ".") + "/tests/data/corpus";
  SourceList list(*f.live, nullptr, "", {});
  // A Go CPU profile: one time and a duration for all samples, no timeline.
  list.Open(corpus + "/pprof/sample.cpu.pb.gz");
  PollUntilIdle(list);
  REQUIRE(list.sources().size() == 2);
  const Source& cpu = list.Current();
  CHECK(cpu.session.offline);
  CHECK(cpu.session.untimed);
  CHECK(cpu.session.sample_type == storage::SampleType{"cpu", "nanoseconds"});  // pprof's default: the last
  // time_nanos and duration_nanos as `go tool pprof` prints them: "Time: Sep
  // 29, 2017 at 8:57pm (UTC)", "Duration: 2s".
  CHECK(cpu.session.profile_end_ns - cpu.session.profile_start_ns == 2'002'012'950);
  CHECK(cpu.session.profile_start_ns >= 1'506'718'620'000'000'000);
  CHECK(cpu.session.profile_start_ns < 1'506'718'680'000'000'000);
  // 76 samples, each with a samples/count and a cpu/nanoseconds value.
  CHECK(list.notices().back().text.find("76 samples (CPU time (ns); 1 more sample type)") != std::string::npos);
  const std::vector<storage::SampleType> stored = cpu.store->Stats().Types();
  CHECK(stored == std::vector<storage::SampleType>{storage::OnCpuSamples(), {"cpu", "nanoseconds"}});

  // perf script: every sample has a time, so the capture has a timeline.
  list.Open(corpus + "/flamegraph/perf-dd-stacks-01.txt");
  PollUntilIdle(list);
  REQUIRE(list.sources().size() == 3);
  CHECK(list.Current().session.offline);
  CHECK_FALSE(list.Current().session.untimed);
  // Each source keeps its own search and filter.
  list.Select(1);
  list.Current().session.search_text = "runtime";
  list.Current().session.top_filter = "main";
  list.Select(2);
  CHECK(list.Current().session.search_text.empty());
  CHECK(list.Current().session.top_filter.empty());
}

TEST_CASE("a capture opened with the window's demangle setting off keeps names as written") {
  Fixture f;
  const std::string path = f.dir + "/mangled.folded";
  WriteFile(path, "main;_ZN3foo3barEv 2\n");
  SourceList list(*f.live, nullptr, "", {});
  list.Open(path);  // the default: demangled
  list.Open(path, /*demangle=*/false);
  PollUntilIdle(list);
  REQUIRE(list.sources().size() == 3);
  // Loads finish in either order (sources are added as they finish): one
  // of each, whichever came first.
  std::set<std::vector<std::string>> shown = {StoreFolded(*list.sources()[1]->store),
                                              StoreFolded(*list.sources()[2]->store)};
  CHECK(shown == std::set<std::vector<std::string>>{{"main;foo::bar() 2"}, {"main;_ZN3foo3barEv 2"}});
}

TEST_CASE("two captures with the same file name get distinct source names (a diff's baseline is picked by name)") {
  Fixture f;
  fs::create_directories(f.dir + "/a");
  fs::create_directories(f.dir + "/b");
  WriteFile(f.dir + "/a/stacks.folded", kFolded);
  WriteFile(f.dir + "/b/stacks.folded", kFolded);
  SourceList list(*f.live, nullptr, "", {});
  list.Open(f.dir + "/a/stacks.folded");
  PollUntilIdle(list);
  list.Open(f.dir + "/b/stacks.folded");
  PollUntilIdle(list);
  list.Open(f.dir + "/a/stacks.folded");  // the same file twice
  PollUntilIdle(list);
  REQUIRE(list.sources().size() == 4);
  CHECK(list.sources()[1]->name == "stacks.folded");
  CHECK(list.sources()[2]->name == "stacks.folded (2)");
  CHECK(list.sources()[3]->name == "stacks.folded (3)");
  CHECK(list.sources()[2]->path == f.dir + "/b/stacks.folded");
}

TEST_CASE("DisplayName is the file name") {
  CHECK(DisplayName("/a/b/perf.txt") == "perf.txt");
  CHECK(DisplayName("perf.txt") == "perf.txt");
}

}  // namespace
}  // namespace kiln::app
