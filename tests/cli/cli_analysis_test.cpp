// `kiln export` transforms and `kiln diff`, run as a user runs them, on a
// real folded capture from the corpus (Vert.x on the JVM, with recursion,
// JIT and kernel frames) and on stores `kiln import` wrote, compared with
// tests/cli/folded_reference.py, written from the documented semantics.
#include <doctest/doctest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/child_process.h"
#include "tests/temp_dir.h"

namespace {

namespace fs = std::filesystem;
using kiln::testing::ChildOutput;
using kiln::testing::ReadWholeFile;
using kiln::testing::TempDir;
using kiln::testing::SpawnChild;
using kiln::testing::WaitChild;

std::string Source() {
  const char* s = std::getenv("KILN_SOURCE_DIR");
  return s != nullptr ? s : ".";
}
std::string Vertx() { return Source() + "/tests/data/corpus/speedscope/folded/perf-vertx-stacks-01-collapsed-all.txt"; }
std::string Reference() { return Source() + "/tests/cli/folded_reference.py"; }

// Runs argv with stdout into a file; returns {exit code, stdout}. stderr
// is the test's own.
std::pair<int, std::string> Run(const std::vector<std::string>& argv, const TempDir& dir) {
  const std::string out = dir.path + "/stdout";
  int code = WaitChild(SpawnChild(argv, ChildOutput::File(out)));
  return {code, ReadWholeFile(out)};
}

std::string Kiln() { return KILN_BINARY; }

// The capture's frame names as written (no demangling) and with their
// _[k]/_[j] annotations, so they read like the reference's input.
const std::vector<std::string> kAsWritten = {"--group-by", "none", "--raw-names", "--annotate"};

std::vector<std::string> Concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The transforms the issue names, alone and chained (flag form for kiln,
// spec form for the reference).
const std::vector<std::vector<std::string>> kChains = {
    {"invert"},
    {"collapse-recursion"},
    {"focus=io/netty/channel/nio/NioEventLoop:.run"},
    {"focus=Interpreter"},  // recursive: Interpreter calls Interpreter
    {"hide=^io/netty/channel/AbstractChannelHandlerContext"},
    {"hide=Handler"},
    {"callers-of=Interpreter"},
    {"callers-of=JavaCalls::call_virtual"},
    {"merge=Interpreter"},
    {"drop-kernel"},
    {"hide=netty", "collapse-recursion", "invert"},
    {"focus=Interpreter", "collapse-recursion", "callers-of=Interpreter"},
    {"hide=Handler", "hide=^sun/", "drop-kernel"},  // a flag used twice
};

std::vector<std::string> Flags(const std::vector<std::string>& chain) {
  std::vector<std::string> flags;
  for (const std::string& spec : chain) flags.push_back("--" + spec);
  return flags;
}

// The reference needs python3; without it the test says why and is skipped.
void RequirePython() {
  if (system("python3 -c 'import json, re' >/dev/null 2>&1") != 0) {
    std::fprintf(stderr, "cli_analysis_test: skipped: python3 is needed for the reference (apt install python3)\n");
    std::exit(77);
  }
}

}  // namespace

TEST_CASE("kiln export transforms equal the reference, on a capture file and on a store") {
  RequirePython();
  TempDir dir;
  // The same capture in a store, through the real import command.
  const std::string store = dir.path + "/store";
  REQUIRE(Run({Kiln(), "import", "--raw-names", "--data-dir", store, Vertx()}, dir).first == 0);
  for (const auto& chain : kChains) {
    std::string spec_text;
    for (const std::string& s : chain) spec_text += s + " ";
    CAPTURE(spec_text);
    auto [ref_code, expected] = Run(Concat({"python3", Reference(), "transform", Vertx()}, chain), dir);
    REQUIRE(ref_code == 0);
    REQUIRE(!expected.empty());
    auto [code, from_file] =
        Run(Concat(Concat({Kiln(), "export", "--input", Vertx()}, kAsWritten), Flags(chain)), dir);
    CHECK(code == 0);
    CHECK(from_file == expected);
    auto [store_code, from_store] =
        Run(Concat(Concat({Kiln(), "export", "--data-dir", store}, kAsWritten), Flags(chain)), dir);
    CHECK(store_code == 0);
    CHECK(from_store == expected);
  }
}

TEST_CASE("the order of transform flags is the order they apply in") {
  RequirePython();
  TempDir dir;
  auto a = Run(Concat(Concat({Kiln(), "export", "--input", Vertx()}, kAsWritten),
                      {"--focus", "Interpreter", "--invert"}), dir);
  auto b = Run(Concat(Concat({Kiln(), "export", "--input", Vertx()}, kAsWritten),
                      {"--invert", "--focus", "Interpreter"}), dir);
  CHECK(a.first == 0);
  CHECK(b.first == 0);
  CHECK(a.second != b.second);
  CHECK(a.second == Run({"python3", Reference(), "transform", Vertx(), "focus=Interpreter", "invert"}, dir).second);
  CHECK(b.second == Run({"python3", Reference(), "transform", Vertx(), "invert", "focus=Interpreter"}, dir).second);
}

TEST_CASE("a bad transform is refused with the reason") {
  RequirePython();
  TempDir dir;
  const std::string err = dir.path + "/stderr";
  int code = WaitChild(SpawnChild({Kiln(), "export", "--input", Vertx(), "--hide", "(unclosed"}, ChildOutput::Null(),
                                  ChildOutput::File(err)));
  CHECK(code == 2);
  CHECK(ReadWholeFile(err).find("invalid pattern \"(unclosed\"") != std::string::npos);
}

TEST_CASE("kiln diff: folded and JSON equal the reference, for files and stores") {
  RequirePython();
  TempDir dir;
  // A target derived from the capture: every third stack gone, every fifth
  // doubled, one new stack.
  const std::string target = dir.path + "/target.folded";
  {
    std::ifstream in(Vertx());
    std::ofstream out(target);
    std::string line;
    for (int i = 0; std::getline(in, line); ++i) {
      if (line.empty() || i % 3 == 0) continue;
      const size_t space = line.rfind(' ');
      long count = std::stol(line.substr(space + 1));
      out << line.substr(0, space) << " " << (i % 5 == 0 ? 2 * count : count) << "\n";
    }
    out << "java;start_thread;brand_new_function 500\n";
  }
  const std::string base_store = dir.path + "/base", target_store = dir.path + "/target";
  REQUIRE(Run({Kiln(), "import", "--raw-names", "--data-dir", base_store, Vertx()}, dir).first == 0);
  REQUIRE(Run({Kiln(), "import", "--raw-names", "--data-dir", target_store, target}, dir).first == 0);
  const std::vector<std::string> names = {"--group-by", "none", "--raw-names", "--annotate"};
  for (const std::vector<std::string>& chain : {std::vector<std::string>{}, {"collapse-recursion", "invert"}}) {
    CAPTURE(chain.size());
    auto [ref_code, expected] = Run(Concat({"python3", Reference(), "diff", Vertx(), target}, chain), dir);
    REQUIRE(ref_code == 0);
    // Flags before the files: a flag's value never swallows a file name.
    auto files = Run(Concat(Concat(Concat({Kiln(), "diff"}, Flags(chain)), names), {Vertx(), target}), dir);
    CHECK(files.first == 0);
    CHECK(files.second == expected);
    auto stores = Run(Concat(Concat({Kiln(), "diff", "--base-data-dir", base_store, "--target-data-dir", target_store},
                                    names),
                             Flags(chain)),
                      dir);
    CHECK(stores.first == 0);
    CHECK(stores.second == expected);
  }

  // JSON: every node's totals, shares, change and z as the reference
  // computes them. Both are JSON; the reference's numbers are compared by
  // a Python check so neither side's float formatting matters.
  const std::string json = dir.path + "/diff.json";
  REQUIRE(Run({Kiln(), "diff", Vertx(), target, "--group-by", "none", "--raw-names", "--format", "json", "-o", json},
              dir)
              .first == 0);
  const std::string ref_json = dir.path + "/ref.json";
  REQUIRE(WaitChild(SpawnChild({"python3", Reference(), "diffjson", Vertx(), target}, ChildOutput::File(ref_json))) ==
          0);
  const std::string check = dir.path + "/check.py";
  std::ofstream(check) << R"(import json, sys
k = json.load(open(sys.argv[1])); r = json.load(open(sys.argv[2]))
assert k["base"]["total"] == r["base_total"] and k["target"]["total"] == r["target_total"], "totals"
strip = lambda p: ";".join(f[:-4] if f.endswith(("_[k]", "_[j]")) else f for f in p.split(";"))
ref = {strip(p): v for p, v in r["nodes"].items()}
nodes = {n["stack"]: n for n in k["nodes"]}
assert set(nodes) == set(ref), "node sets differ: %s" % sorted(set(nodes) ^ set(ref))[:5]
significant = 0
for path, n in nodes.items():
    e = ref[path]
    for key in ("base_total", "target_total"):
        assert n[key] == e[key], (path, key, n[key], e[key])
    for key in ("base_share", "target_share", "change", "z"):
        assert abs(n[key] - e[key]) < 1e-9 * max(1, abs(e[key])), (path, key, n[key], e[key])
    assert n["significant"] == e["significant"], path
    assert n["status"] == ("new" if e["base_total"] == 0 else "gone" if e["target_total"] == 0 else "both"), path
    significant += n["significant"]
assert significant > 0, "nothing significant: the fixture tests nothing"
print(len(nodes), "nodes,", significant, "significant")
)";
  CHECK(WaitChild(SpawnChild({"python3", check, json, ref_json})) == 0);

  // SVG: well-formed, one tooltip per visible node, new and gone marked.
  const std::string svg = dir.path + "/diff.svg";
  REQUIRE(Run({Kiln(), "diff", Vertx(), target, "--group-by", "none", "--format", "svg", "-o", svg}, dir).first == 0);
  const std::string svg_check = dir.path + "/svg.py";
  std::ofstream(svg_check) << R"(import sys, xml.etree.ElementTree as ET
titles = [t.text for t in ET.parse(sys.argv[1]).iter("{http://www.w3.org/2000/svg}title")]
assert any(t.startswith("brand_new_function:") and ", new" in t for t in titles), "new node"
assert any(", gone" in t for t in titles), "gone node"
assert all("base " in t and "target " in t for t in titles)
)";
  CHECK(WaitChild(SpawnChild({"python3", svg_check, svg})) == 0);
}

TEST_CASE("kiln diff refuses sides with different sample types and says how to choose") {
  RequirePython();
  TempDir dir;
  const std::string err = dir.path + "/stderr";
  const std::string pprof = Source() + "/tests/data/corpus/pprof/sample.cpu.pb.gz";
  int code = WaitChild(SpawnChild({Kiln(), "diff", Vertx(), pprof}, ChildOutput::Null(), ChildOutput::File(err)));
  CHECK(code == 2);
  CHECK(ReadWholeFile(err).find("pick one with --sample-type") != std::string::npos);
}

TEST_CASE("an OTLP export of a store range keeps every sample's time: the round trip answers sub-ranges alike") {
  // A perf script capture with sample times over about 2 s, imported, then
  // exported from the store as OTLP and imported into a second store.
  const std::string capture = Source() + "/tests/data/corpus/flamegraph/perf-funcab-cmd-01.txt";
  TempDir dir;
  const std::string first = dir.path + "/first", second = dir.path + "/second", otlp = dir.path + "/range.otlp";
  REQUIRE(Run({Kiln(), "import", "--data-dir", first, capture}, dir).first == 0);
  REQUIRE(Run({Kiln(), "export", "--data-dir", first, "--format", "otlp", "-o", otlp}, dir).first == 0);
  REQUIRE(Run({Kiln(), "import", "--data-dir", second, otlp}, dir).first == 0);
  auto range_line = [&](const std::string& store) {
    const std::string stats = Run({Kiln(), "stats", "--data-dir", store}, dir).second;
    const size_t at = stats.find("time range:");
    return at == std::string::npos ? std::string() : stats.substr(at, stats.find('\n', at) - at);
  };
  CHECK(!range_line(first).empty());
  CHECK(range_line(second) == range_line(first));
  // Either side of an instant inside the data: what lands there is the
  // same in both stores (an export with one time per stack put everything
  // at the first sample's time).
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"2016-07-07T20:47:40Z", "2016-07-07T20:47:42Z"}, {"2016-07-07T20:47:42Z", "2016-07-07T20:47:44Z"}}) {
    CAPTURE(from);
    const std::vector<std::string> range = {"--from", from, "--to", to, "--group-by", "none"};
    const std::string before = Run(Concat({Kiln(), "export", "--data-dir", first}, range), dir).second;
    const std::string after = Run(Concat({Kiln(), "export", "--data-dir", second}, range), dir).second;
    CHECK(!before.empty());
    CHECK(after == before);
  }
}

TEST_CASE("kiln mcp refuses what it cannot answer from: a missing store names it, a non-capture says why") {
  TempDir dir;
  const std::string err = dir.path + "/stderr";
  auto run = [&](const std::vector<std::string>& argv) {
    // stdin is the test's: kiln mcp must exit before reading it.
    const int code = WaitChild(SpawnChild(argv, ChildOutput::Null(), ChildOutput::File(err)));
    return std::pair{code, ReadWholeFile(err)};
  };
  const auto [missing_code, missing] = run({Kiln(), "mcp", "--data-dir", dir.path + "/no-store"});
  CHECK(missing_code != 0);
  CHECK(missing.find("no kiln store in " + dir.path + "/no-store") != std::string::npos);
  const auto [passwd_code, passwd] = run({Kiln(), "mcp", "--input", "/etc/passwd"});
  CHECK(passwd_code != 0);
  CHECK(passwd.find("/etc/passwd: no folded stack lines") != std::string::npos);
}
