// Kiln's pprof output read by Go's own pprof (`go tool pprof -raw`): corpus
// files converted with `kiln export --input`, and a store written by
// `kiln import` and read back with `kiln export --data-dir` (the real kiln
// binary when it is built, else the same library calls). Go must parse
// every file, and the sample totals and the stacks (function names, root
// to leaf, inlined frames included) must be what kiln itself shows.
//
// Without `go` on PATH (Debian's golang-go) the test prints why and exits 77
// (skipped); packaging/install-deps.sh installs it. Go gets a private HOME, GOCACHE and
// PPROF_TMPDIR and no network (GOPROXY=off, -symbolize=none), so it also
// runs as root in CI.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "ingest/capture/capture_commands.h"
#include "tests/child_process.h"
#include "tests/import/corpus_files.h"

namespace kiln::capture {
namespace {

using testing::ReadAll;
std::string Corpus() { return testing::CorpusDir(); }

using testing::TempDir;

// Runs argv, returns its exit code; stdout into *out, stderr into *err.
int Run(const std::vector<std::string>& argv, std::string* out, std::string* err) {
  int out_pipe[2], err_pipe[2];
  REQUIRE(pipe(out_pipe) == 0);
  REQUIRE(pipe(err_pipe) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    close(out_pipe[0]);
    close(err_pipe[0]);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  // Drain both pipes (stderr is small; read it after stdout closes).
  auto drain = [](int fd, std::string* s) {
    char buf[65536];
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0) s->append(buf, static_cast<size_t>(n));
    close(fd);
  };
  out->clear();
  err->clear();
  drain(out_pipe[0], out);
  drain(err_pipe[0], err);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// What `go tool pprof -raw` printed, as folded stacks (root first, frames
// joined with ';', inlined lines expanded caller first) with the summed
// value of the last sample type, which is the one kiln writes.
struct GoView {
  std::vector<std::string> sample_types;  // "type/unit"
  int default_type = -1;                  // the one pprof marks "[dflt]"
  std::map<std::string, int64_t> stacks;
  int64_t total = 0;
};

// `value_index`: which of a sample's values (one per sample type) to sum;
// -1 for the last, pprof's default when the file names none.
GoView ParseRaw(const std::string& raw, int value_index = -1) {
  GoView view;
  std::istringstream in(raw);
  std::string line;
  enum { kHeader, kSampleTypes, kSamples, kLocations, kRest } state = kHeader;
  std::vector<std::pair<std::vector<uint64_t>, int64_t>> samples;
  std::map<uint64_t, std::vector<std::string>> names;  // innermost first
  uint64_t current = 0;
  while (std::getline(in, line)) {
    if (line == "Samples:") {
      state = kSampleTypes;
      continue;
    }
    if (line == "Locations") {
      state = kLocations;
      continue;
    }
    if (line == "Mappings") {
      state = kRest;
      continue;
    }
    if (state == kSampleTypes) {
      std::istringstream types(line);
      std::string t;
      while (types >> t) {
        if (t.size() > 6 && t.substr(t.size() - 6) == "[dflt]") {
          t.resize(t.size() - 6);
          view.default_type = static_cast<int>(view.sample_types.size());
        }
        view.sample_types.push_back(t);
      }
      state = kSamples;
    } else if (state == kSamples) {
      size_t colon = line.find(':');
      // Label lines ("key:[value]") follow their sample, indented further.
      if (colon == std::string::npos || line.find(":[") != std::string::npos) continue;
      std::istringstream values(line.substr(0, colon));
      std::istringstream ids(line.substr(colon + 1));
      int64_t v = 0, last = 0;
      for (int i = 0; values >> v; ++i) {
        if (value_index < 0 || i == value_index) last = v;
      }
      std::vector<uint64_t> stack;
      uint64_t id;
      while (ids >> id) stack.push_back(id);
      samples.emplace_back(stack, last);
    } else if (state == kLocations) {
      // "    12: 0x4541c0 M=1 name file:line s=0[(system name)]", further
      // inlined lines indented with only "name file:line s=0".
      std::string rest = line;
      size_t first = line.find_first_not_of(' ');
      size_t colon = line.find(": 0x");
      if (first != std::string::npos && colon != std::string::npos && colon < line.find(' ', first) + 1) {
        current = std::stoull(line.substr(first, colon - first));
        names[current];
        rest = line.substr(colon + 2);
        rest = rest.substr(rest.find(' ') + 1);                                // address
        if (rest.rfind("M=", 0) == 0) rest = rest.substr(rest.find(' ') + 1);  // mapping
      } else {
        rest = line.substr(first == std::string::npos ? 0 : first);
      }
      size_t s = rest.rfind(" s=");
      if (s == std::string::npos) continue;  // no lines: an address only
      rest = rest.substr(0, s);
      rest = rest.substr(0, rest.rfind(' '));  // " file:line"
      names[current].push_back(rest);
    }
  }
  for (const auto& [ids, value] : samples) {
    if (value == 0) continue;  // pprof lists them; they weigh nothing
    std::string folded;
    for (size_t i = ids.size(); i-- > 0;) {
      const auto& lines = names[ids[i]];
      for (size_t k = lines.size(); k-- > 0;) folded += (folded.empty() ? "" : ";") + lines[k];
    }
    view.stacks[folded] += value;
    view.total += value;
  }
  return view;
}

// Kiln's folded text (group by none) as a map, and its total.
std::map<std::string, int64_t> ParseFolded(const std::string& text, int64_t* total) {
  std::map<std::string, int64_t> out;
  std::istringstream in(text);
  std::string line;
  *total = 0;
  while (std::getline(in, line)) {
    size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    int64_t v = std::stoll(line.substr(space + 1));
    out[line.substr(0, space)] += v;
    *total += v;
  }
  return out;
}

// Every frame of kiln's folded stacks that has a name (kiln labels unnamed
// frames "exe+0xaddr", pprof prints nothing for them) must be in Go's
// stack at the same place: compared by dropping the unnamed frames on both.
std::map<std::string, int64_t> NamedOnly(const std::map<std::string, int64_t>& stacks) {
  std::map<std::string, int64_t> out;
  for (const auto& [stack, v] : stacks) {
    std::string kept;
    std::stringstream frames(stack);
    std::string f;
    while (std::getline(frames, f, ';')) {
      if (f.empty() || f.find("+0x") != std::string::npos || f.rfind("0x", 0) == 0) continue;
      kept += (kept.empty() ? "" : ";") + f;
    }
    out[kept] += v;
  }
  return out;
}

class GoPprof {
 public:
  GoPprof() {
    go_ = kiln::testing::FindOnPath("go");
    if (go_.empty()) {
      std::cerr << "go not found on PATH (Debian package golang-go); skipping (exit 77)\n";
      std::exit(77);
    }
    testing::RequireCorpus();
    // A private, writable home for Go: no user cache, no network. Made
    // only now: exit(77) above runs no destructor.
    env_ = std::make_unique<TempDir>("kiln-go-pprof-test");
    const std::string& env = env_->path;
    for (const char* d : {"/home", "/gocache", "/gopath", "/pprof"}) {
      std::filesystem::create_directories(env + d);
    }
    setenv("HOME", (env + "/home").c_str(), 1);
    setenv("GOCACHE", (env + "/gocache").c_str(), 1);
    setenv("GOPATH", (env + "/gopath").c_str(), 1);
    setenv("PPROF_TMPDIR", (env + "/pprof").c_str(), 1);
    setenv("GOPROXY", "off", 1);
    setenv("GOFLAGS", "", 1);
    setenv("GOTOOLCHAIN", "local", 1);
    setenv("GOTELEMETRY", "off", 1);
  }

  // `go tool pprof -raw FILE`, parsed; fails the test when Go cannot read it.
  GoView Raw(const std::string& file, int value_index = -1) {
    std::string out, err;
    int code = Run({go_, "tool", "pprof", "-raw", "-symbolize=none", file}, &out, &err);
    INFO("go tool pprof -raw " << file << " exited " << code << ": " << err);
    CHECK(code == 0);
    CHECK(out.find("Samples:") != std::string::npos);
    return ParseRaw(out, value_index);
  }

  // `go tool pprof -top` names the heaviest function first.
  std::string Top(const std::string& file) {
    std::string out, err;
    int code = Run({go_, "tool", "pprof", "-top", "-symbolize=none", file}, &out, &err);
    INFO("go tool pprof -top " << file << ": " << err);
    CHECK(code == 0);
    return out;
  }

 private:
  std::string go_;
  std::unique_ptr<TempDir> env_;
};

// Go's view of `file` against kiln's folded text of the same data.
void Compare(GoPprof& go, const std::string& file, const std::string& kiln_folded) {
  GoView view = go.Raw(file);
  int64_t kiln_total = 0;
  auto kiln = ParseFolded(kiln_folded, &kiln_total);
  REQUIRE(!kiln.empty());
  CHECK(view.total == kiln_total);
  CHECK(NamedOnly(view.stacks) == NamedOnly(kiln));
  // The heaviest named leaves by themselves in `-top`, for a readable
  // failure (pprof shortens long names, so their start).
  std::vector<std::pair<int64_t, std::string>> leaves;
  for (const auto& [stack, v] : NamedOnly(kiln)) {
    std::string leaf = stack.substr(stack.rfind(';') + 1);
    if (!leaf.empty()) leaves.emplace_back(-v, leaf);
  }
  std::sort(leaves.begin(), leaves.end());
  std::string top = go.Top(file);
  for (size_t i = 0; i < leaves.size() && i < 3; ++i) {
    CAPTURE(leaves[i].second);
    CHECK(top.find(leaves[i].second.substr(0, 20)) != std::string::npos);
  }
}

std::string ConvertFolded(const std::string& input, const std::string& sample_type) {
  ConvertCommand c;
  c.input = input;
  c.group_by = "none";
  c.sample_type = sample_type;
  std::ostringstream out, err;
  REQUIRE_MESSAGE(RunConvertCommand(c, out, err) == 0, err.str());
  return out.str();
}

TEST_CASE("go tool pprof reads kiln's pprof of every corpus format") {
  GoPprof go;
  TempDir tmp;
  int converted = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(Corpus())) {
    const std::string input = entry.path().string();
    const std::string base = entry.path().filename().string();
    if (!entry.is_regular_file() || base.rfind("LICENSE", 0) == 0 || base == "README.md" ||
        input.find("/results/") != std::string::npos) {
      continue;
    }
    CAPTURE(input);
    auto capture = ImportFile(input);
    REQUIRE_MESSAGE(capture.ok(), capture.status().message());
    // The converter writes the type it read (pprof) or the kind's own.
    ConvertCommand c;
    c.input = input;
    c.format = "pprof";
    c.output = tmp.path + "/out.pb.gz";
    std::ostringstream out, err;
    REQUIRE_MESSAGE(RunConvertCommand(c, out, err) == 0, err.str());
    Compare(go, c.output, ConvertFolded(input, ""));
    ++converted;
  }
  CHECK(converted >= 30);
}

TEST_CASE("every sample type of a pprof file: kiln's totals and stacks are go tool pprof's") {
  // The oracle reads the original file; kiln exports each type by name.
  GoPprof go;
  int compared = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(Corpus())) {
    const std::string input = entry.path().string();
    if (input.size() < 6 || input.substr(input.size() - 6) != ".pb.gz") continue;
    CAPTURE(input);
    const GoView whole = go.Raw(input);
    const std::vector<std::string>& types = whole.sample_types;
    REQUIRE(!types.empty());
    // Without --sample-type kiln shows pprof's default: the [dflt] one, else the last.
    const int dflt = whole.default_type >= 0 ? whole.default_type : static_cast<int>(types.size()) - 1;
    CHECK(ConvertFolded(input, "") == ConvertFolded(input, types[dflt]));
    for (int i = 0; i < static_cast<int>(types.size()); ++i) {
      CAPTURE(types[i]);
      GoView view = go.Raw(input, i);
      int64_t kiln_total = 0;
      auto kiln = ParseFolded(ConvertFolded(input, types[i]), &kiln_total);
      CHECK(kiln_total == view.total);
      CHECK(NamedOnly(kiln) == NamedOnly(view.stacks));
      ++compared;
    }
  }
  CHECK(compared >= 15);
}

TEST_CASE("go tool pprof reads `kiln export --data-dir DIR --format pprof`") {
  GoPprof go;
  TempDir tmp;
  const std::string dir = tmp.path + "/store";
  const std::string input = Corpus() + "/flamegraph/perf-js-stacks-01.txt";
  ImportCommand import;
  import.data_dir = dir;
  import.files = {input, Corpus() + "/flamegraph/perf-numa-stacks-01.txt"};
  import.progress = false;
  std::ostringstream out, err;
  REQUIRE_MESSAGE(RunImportCommand(import, out, err) == 0, err.str());

  const std::string pprof = tmp.path + "/store.pb.gz";
  const std::string folded = tmp.path + "/store.folded";
#ifdef KILN_BINARY
  // The real command line, as a person runs it.
  std::string o, e;
  REQUIRE_MESSAGE(
      Run({KILN_BINARY, "export", "--data-dir", dir, "--format", "pprof", "-o", pprof}, &o, &e) == 0, e);
  REQUIRE_MESSAGE(Run({KILN_BINARY, "export", "--data-dir", dir, "--format", "folded", "--group-by", "none",
                       "-o", folded},
                      &o, &e) == 0,
                  e);
  std::string kiln_folded = ReadAll(folded);
#else
  // kiln is not built here: the library calls `kiln export` makes.
  auto store = storage::Store::Open(dir, storage::Store::Mode::kReadOnly);
  REQUIRE(store.ok());
  auto slice = (*store)->Run(storage::Query{});
  REQUIRE(slice.ok());
  ExportOptions po;
  po.format = ExportFormat::kPprof;
  auto bytes = ExportSlice(*slice, po);
  REQUIRE(bytes.ok());
  std::ofstream(pprof, std::ios::binary) << *bytes;
  ExportOptions fo;
  fo.tree.group_by = storage::GroupBy::kNone;
  std::string kiln_folded = FoldedText(*slice, fo) + "\n";
#endif
  Compare(go, pprof, kiln_folded);
}

}  // namespace
}  // namespace kiln::capture
