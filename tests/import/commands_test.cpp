// `kiln import` and `kiln export --input` end to end: corpus files through
// a real store (RocksDB in a temporary directory) and through the
// converter, compared with the reference folded output.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <vector>

#include "ingest/capture/capture_commands.h"
#include "storage/model/flame_tree.h"
#include "storage/model/folded.h"
#include "tests/child_process.h"
#include "tests/import/corpus_files.h"

namespace kiln::capture {
namespace {

using testing::ReadAll;
std::string Corpus() { return testing::CorpusDir(); }

using testing::TempDir;

using testing::RequireCorpus;

const char* kPerfFiles[] = {"perf-cycles-instructions-01", "perf-dd-stacks-01",   "perf-funcab-cmd-01",
                            "perf-funcab-pid-01",          "perf-java-faults-01", "perf-js-stacks-01",
                            "perf-mirageos-stacks-01",     "perf-numa-stacks-01"};

// What a store filled from one perf file holds, as stackcollapse-perf.pl
// --all prints it: the one sample type a perf file imports as (its event,
// weighed by periods), grouped by process, annotated.
std::string FoldedOfOnlyType(const std::string& dir) {
  auto store = storage::Store::Open(dir, storage::Store::Mode::kReadOnly);
  REQUIRE(store.ok());
  auto types = (*store)->Stats().sample_types;
  REQUIRE(types.size() == 1);
  storage::Query q;
  q.sample_type = types[0].info.type;
  auto slice = (*store)->Run(q);
  REQUIRE(slice.ok());
  auto tree = storage::BuildFlameTree(*slice, {.group_by = storage::GroupBy::kProcess});
  std::string folded;
  for (const auto& l : storage::FoldedLines(tree, {true})) folded += l + "\n";
  return folded;
}

// perf script variants (tests/import/data/perf-variants/README.md) through
// the converter and through a real store, against the reference's output.
TEST_CASE("perf script variants: unindented frames, no final blank line, empty symbols") {
  const char* src = std::getenv("KILN_SOURCE_DIR");
  const std::string dir = std::string(src != nullptr ? src : ".") + "/tests/import/data/perf-variants/";
  for (const char* stem : {"perf-old-noindent", "perf-no-trailing-blank", "perf-empty-symbols"}) {
    CAPTURE(stem);
    const std::string expected = ReadAll(dir + stem + "-collapsed-all.txt");
    REQUIRE(!expected.empty());
    ConvertCommand c;
    c.input = dir + stem + ".txt";
    c.format = "folded";
    c.group_by = "process";
    c.annotate = true;
    std::ostringstream out, err;
    REQUIRE_MESSAGE(RunConvertCommand(c, out, err) == 0, err.str());
    CHECK(out.str() == expected);
    // A dropped sample is said, never silent.
    if (std::string(stem) == "perf-no-trailing-blank") {
      CHECK(err.str().find("no terminating blank line") != std::string::npos);
    } else {
      CHECK(err.str().find("skipped") == std::string::npos);
    }

    TempDir tmp;
    ImportCommand import;
    import.data_dir = std::string(tmp);
    import.files = {c.input};
    std::ostringstream iout, ierr;
    REQUIRE_MESSAGE(RunImportCommand(import, iout, ierr) == 0, ierr.str());
    CHECK(FoldedOfOnlyType(import.data_dir) == expected);
  }
}

// Folded lines of a converter run, or the failure.
std::vector<std::string> ConvertLines(const std::string& input, bool raw_names) {
  ConvertCommand c;
  c.input = input;
  c.format = "folded";
  c.group_by = "none";
  c.raw_names = raw_names;
  std::ostringstream out, err;
  REQUIRE_MESSAGE(RunConvertCommand(c, out, err) == 0, err.str());
  std::vector<std::string> lines;
  std::istringstream in(out.str());
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST_CASE("C++ and Rust names in perf script and folded files are demangled as c++filt does, or kept raw") {
  TempDir tmp;
  const std::string dir = tmp;
  // A folded file written from the raw names keeps them through the folded
  // importer too.
  for (const std::string& input : {Corpus() + "/speedscope/rust-mangled.linux-perf.txt",
                                   Corpus() + "/flamegraph/perf-java-faults-01.txt"}) {
    CAPTURE(input);
    const std::vector<std::string> raw = ConvertLines(input, true);
    std::ofstream(dir + "/raw.folded") << [&] {
      std::string text;
      for (const std::string& l : raw) text += l + "\n";
      return text;
    }();
    // The oracle: binutils' c++filt over every distinct raw name, then the
    // raw lines rebuilt from its answers and merged.
    std::set<std::string> names;
    size_t mangled = 0;
    for (const std::string& l : raw) {
      std::istringstream frames(l.substr(0, l.rfind(' ')));
      for (std::string f; std::getline(frames, f, ';');) {
        mangled += f.rfind("_Z", 0) == 0 || f.rfind("_R", 0) == 0;
        names.insert(f);
      }
    }
    CHECK(mangled > 0);
    {
      std::ofstream list(dir + "/names.txt");
      for (const std::string& n : names) list << n << "\n";
    }
    const int rc = kiln::testing::WaitChild(kiln::testing::SpawnChild(
        {"sh", "-c", "c++filt --no-verbose < '" + dir + "/names.txt' > '" + dir + "/demangled.txt'"}));
    REQUIRE(rc == 0);
    std::map<std::string, std::string> by_cxxfilt;
    std::ifstream demangled(dir + "/demangled.txt");
    for (const std::string& n : names) std::getline(demangled, by_cxxfilt[n]);
    std::map<std::string, int64_t> expected;
    for (const std::string& l : raw) {
      std::istringstream frames(l.substr(0, l.rfind(' ')));
      std::string stack;
      for (std::string f; std::getline(frames, f, ';');) stack += (stack.empty() ? "" : ";") + by_cxxfilt[f];
      expected[stack] += std::stoll(l.substr(l.rfind(' ') + 1));
    }
    std::vector<std::string> want;
    for (const auto& [stack, n] : expected) want.push_back(stack + " " + std::to_string(n));
    for (const std::string& source : {input, dir + "/raw.folded"}) {
      CAPTURE(source);
      std::vector<std::string> got = ConvertLines(source, false);
      std::sort(got.begin(), got.end());
      CHECK(got == want);
      // --raw-names keeps them as written (what stackcollapse-perf.pl prints).
      CHECK(ConvertLines(source, true) == raw);
    }
  }
}

// Runs a shell command, returns its stdout with the trailing newline cut.
std::string ShellOutput(const std::string& command, const std::string& dir) {
  const std::string out = dir + "/shell.out";
  REQUIRE(kiln::testing::WaitChild(kiln::testing::SpawnChild({"sh", "-c", command + " > '" + out + "'"})) == 0);
  std::string text = ReadAll(out);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

TEST_CASE("files that are not profiles are refused by what they are (file(1) says the same)") {
  TempDir tmp;
  const std::string dir = tmp;
  const char* src = std::getenv("KILN_SOURCE_DIR");
  const std::string png = std::string(src != nullptr ? src : ".") + "/assets/screenshots/agent-calltree.png";
  char self[4096] = {};
  REQUIRE(readlink("/proc/self/exe", self, sizeof(self) - 1) > 0);
  // Each made by its own tool; file(1) names the type, and kiln's message
  // must name the same one. `what` is the words kiln uses.
  std::ofstream(dir + "/page.html") << "<!DOCTYPE html>\n<html><head><title>Sign in</title></head></html>\n";
  struct Case {
    std::string path, mime, what;
  };
  std::vector<Case> cases = {{png, "image/png", "a PNG image"}, {self, "", "an ELF executable"},
                             {dir + "/page.html", "text/html", "an HTML page"}};
  for (const auto& [made, command, mime, what] :
       std::vector<std::tuple<std::string, std::string, std::string, std::string>>{
           {"shot.png.gz", "gzip -c '" + png + "'", "image/png", "a PNG image"},  // kiln decompresses gzip first
           {"shot.png.xz", "xz -c '" + png + "'", "application/x-xz", "an xz file"},
           {"shot.png.bz2", "bzip2 -c '" + png + "'", "application/x-bzip2", "a bzip2 file"},
           {"shot.zip", "cd '" + dir + "' && zip -q - page.html", "application/zip", "a ZIP archive"},
           {"shot.tar", "tar -C '" + dir + "' -cf - page.html", "application/x-tar", "a tar archive"}}) {
    REQUIRE(kiln::testing::WaitChild(
                kiln::testing::SpawnChild({"sh", "-c", command + " > '" + dir + "/" + made + "'"})) == 0);
    cases.push_back({dir + "/" + made, mime, what});
  }
  for (const Case& c : cases) {
    CAPTURE(c.path);
    // Inside gzip for the one compression kiln reads (zstd's magic is not
    // in this list), the file itself for the rest.
    const bool gzip = c.path.ends_with(".gz");
    const std::string mime = ShellOutput(std::string("file ") + (gzip ? "-z " : "") + "-b --mime-type '" + c.path + "'", dir);
    if (c.mime.empty()) {
      CHECK(mime.find("executable") != std::string::npos);  // x-executable or x-pie-executable
    } else {
      CHECK(mime == c.mime);
    }
    ConvertCommand convert;
    convert.input = c.path;
    std::ostringstream out, err;
    CHECK(RunConvertCommand(convert, out, err) != 0);
    CHECK(err.str().find(c.path + ": this is " + c.what) != std::string::npos);
    CHECK(err.str().find("not a profile") != std::string::npos);
    CHECK(out.str().empty());
  }
}

TEST_CASE("old perf script: frames without indent under a header without a time read as perf script") {
  TempDir tmp;
  const std::string dir = tmp;
  // As perf of 2013 printed it (and the issue found it refused as "no folded
  // stack lines"); the same events indented, as perf prints today, are the
  // reference: stackcollapse-perf.pl's frame pattern allows both.
  const std::string events[][3] = {
      {"java 19983 cycles: ", "7f1 _$LT$term..terminfo..TerminfoTerminal$LT$T$GT$$u20$as$u20$term..Terminal$GT$"
                              "::reset::h7a8b9c0d1e2f3a4b (/usr/bin/x)",
       "7f2 main (/usr/bin/x)"},
      {"java 19984 cycles: ", "4005d6 leaf (/usr/bin/x)", "7f2 main (/usr/bin/x)"},
      {"java 19983 cycles: ", "4005d6 leaf (/usr/bin/x)", "7f2 main (/usr/bin/x)"},
  };
  std::ofstream old(dir + "/old.perf"), now(dir + "/now.perf");
  for (const auto& e : events) {
    old << e[0] << "\n" << e[1] << "\n" << e[2] << "\n\n";
    now << e[0] << "\n\t    " << e[1] << "\n\t    " << e[2] << "\n\n";
  }
  old.close();
  now.close();
  CHECK(SniffFormat(ReadAll(dir + "/old.perf")) == CaptureFormat::kPerfScript);
  std::vector<std::string> got = ConvertLines(dir + "/old.perf", false);
  CHECK(got == ConvertLines(dir + "/now.perf", false));
  // Rust legacy names that perf left half demangled are finished.
  CHECK(got == std::vector<std::string>{"main;<term::terminfo::TerminfoTerminal<T> as term::Terminal>::reset 1",
                                        "main;leaf 2"});
  // A folded file whose first frame looks like a header is still folded.
  std::ofstream(dir + "/folded.txt") << "a 1 b:;c (x) 3\n";
  CHECK(SniffFormat(ReadAll(dir + "/folded.txt")) == CaptureFormat::kFolded);
}

TEST_CASE("kiln import, then a store query folds like stackcollapse-perf.pl --all") {
  RequireCorpus();
  for (const char* stem : kPerfFiles) {
    CAPTURE(stem);
    TempDir tmp;
    std::string dir = tmp;
    std::string input = Corpus() + "/flamegraph/" + stem + ".txt";
    std::ostringstream out, err;
    ImportCommand cmd;
    cmd.data_dir = dir;
    cmd.files = {input};
    cmd.raw_names = true;  // the reference keeps mangled names as written
    REQUIRE_MESSAGE(RunImportCommand(cmd, out, err) == 0, err.str());
    CHECK(out.str().find("perf-script") != std::string::npos);

    CHECK(FoldedOfOnlyType(dir) == ReadAll(Corpus() + "/flamegraph/results/" + stem + "-collapsed-all.txt"));
    auto store = storage::Store::Open(dir, storage::Store::Mode::kReadOnly);
    REQUIRE(store.ok());
    CHECK(!(*store)->ReadLog(10).empty());
  }
}

TEST_CASE("kiln export --input converts between formats") {
  RequireCorpus();
  TempDir tmp;
  std::string dir = tmp;
  std::string input = Corpus() + "/flamegraph/perf-js-stacks-01.txt";
  std::string expected = ReadAll(Corpus() + "/flamegraph/results/perf-js-stacks-01-collapsed-all.txt");

  // folded straight to stdout.
  ConvertCommand c;
  c.input = input;
  c.annotate = true;
  std::ostringstream out, err;
  REQUIRE(RunConvertCommand(c, out, err) == 0);
  CHECK(out.str() == expected);

  // perf -> otlp file -> folded: the same lines.
  c.format = "otlp";
  c.output = dir + "/js.otlp.pb.gz";
  REQUIRE(RunConvertCommand(c, out, err) == 0);
  ConvertCommand back;
  back.input = c.output;
  back.annotate = true;
  std::ostringstream out2;
  REQUIRE(RunConvertCommand(back, out2, err) == 0);
  CHECK(out2.str() == expected);
  // The converter's OTLP keeps every sample's time (a value per timestamp).
  auto original = ImportFile(input);
  auto converted = ImportFile(c.output);
  REQUIRE(original.ok());
  REQUIRE(converted.ok());
  CHECK(converted->batch.samples.size() == original->batch.samples.size());
  CHECK(converted->first_time_ns == original->first_time_ns);
  CHECK(converted->last_time_ns == original->last_time_ns);

  // perf -> pprof -> folded.
  c.format = "pprof";
  c.output = dir + "/js.pb.gz";
  REQUIRE(RunConvertCommand(c, out, err) == 0);
  back.input = c.output;
  std::ostringstream out3;
  REQUIRE(RunConvertCommand(back, out3, err) == 0);
  CHECK(out3.str() == expected);

  // svg: standalone, tooltips, frame-type colours.
  c.format = "svg";
  c.output = "";
  std::ostringstream svg;
  REQUIRE(RunConvertCommand(c, svg, err) == 0);
  CHECK(svg.str().rfind("<?xml", 0) == 0);
  CHECK(svg.str().find("<title>node-v011 (") != std::string::npos);
  CHECK(svg.str().find("</svg>") != std::string::npos);
  if (const char* keep = std::getenv("KILN_KEEP_SVG")) std::ofstream(keep) << svg.str();

  // Errors: unknown format, missing file, a sample type the file lacks.
  c.format = "png";
  CHECK(RunConvertCommand(c, out, err) == 2);
  c.format = "folded";
  c.input = dir + "/missing.txt";
  std::ostringstream err2;
  CHECK(RunConvertCommand(c, out, err2) == 1);
  CHECK(err2.str().find("missing.txt") != std::string::npos);
  c.input = Corpus() + "/pprof/sample.cpu.pb.gz";
  c.sample_type = "no-such-type";
  std::ostringstream err3;
  CHECK(RunConvertCommand(c, out, err3) == 2);
  CHECK(err3.str().find("no sample type \"no-such-type\" (it has: samples/count, cpu/nanoseconds)") !=
        std::string::npos);
}

}  // namespace
}  // namespace kiln::capture
