// Conformance of the capture importers and exporters against the shared
// corpus of real profile files (tests/data/corpus, see its README): every
// file opens; perf script files fold exactly like stackcollapse-perf.pl
// --all; pprof self totals match the file; round trips keep every stack
// and weight; malformed files fail with the file name and a position.
#include <dirent.h>
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "ingest/capture/capture.h"
#include "ingest/capture/export.h"
#include "ingest/capture/importers.h"
#include "storage/model/query.h"
#include "pprof/profile.pb.h"
#include "storage/model/flame_tree.h"
#include "storage/model/folded.h"
#include "storage/model/top_functions.h"
#include "tests/import/corpus_files.h"

namespace kiln::capture {
namespace {

using testing::CorpusDir;
using testing::Gunzip;
using testing::ReadAll;

std::vector<std::string> ListFiles(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    std::string path = dir + "/" + name;
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      for (auto& p : ListFiles(path)) out.push_back(p);
    } else {
      out.push_back(path);
    }
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

bool IsCaptureFile(const std::string& path) {
  std::string base = path.substr(path.rfind('/') + 1);
  // Everything but the licences and the README is a capture (the
  // reference results are folded files and must open too).
  return base.rfind("LICENSE", 0) != 0 && base != "README.md";
}

std::string FoldedOf(const ImportedCapture& c, storage::GroupBy group_by, bool annotate,
                     const storage::SampleType& type) {
  storage::Query q;
  q.sample_type = type;
  ExportOptions o;
  o.tree.group_by = group_by;
  o.annotate = annotate;
  return FoldedText(storage::SliceFromBatch(c.batch, q), o);
}

// Every attribute set in use, as sorted "k=v,..." strings with weights.
std::map<std::string, int64_t> AttributeWeights(const ImportedCapture& c, const storage::SampleType& type) {
  storage::Query q;
  q.sample_type = type;
  auto slice = storage::SliceFromBatch(c.batch, q);
  std::map<std::string, int64_t> out;
  for (const auto& w : slice->weights) {
    std::string key;
    for (const auto& a : slice->dict.AttributeSet(w.attribute_set)) {
      key += slice->dict.strings[a.key] + "=" + slice->dict.strings[a.value] + ",";
    }
    out[key] += w.weight;
  }
  return out;
}

TEST_CASE("every corpus file opens") {
  testing::RequireCorpus();
  int opened = 0;
  for (const std::string& path : ListFiles(CorpusDir())) {
    if (!IsCaptureFile(path)) continue;
    CAPTURE(path);
    auto c = ImportFile(path);
    REQUIRE_MESSAGE(c.ok(), c.status().message());
    CHECK(!c->batch.samples.empty());
    ++opened;
  }
  CHECK(opened >= 42);
}

TEST_CASE("perf script files fold exactly like stackcollapse-perf.pl --all") {
  testing::RequireCorpus();
  std::string dir = CorpusDir() + "/flamegraph";
  int compared = 0;
  for (const std::string& path : ListFiles(dir)) {
    if (path.find("/results/") != std::string::npos || path.find("perf-") == std::string::npos) continue;
    std::string base = path.substr(path.rfind('/') + 1);
    std::string stem = base.substr(0, base.rfind('.'));
    std::string expected = ReadAll(dir + "/results/" + stem + "-collapsed-all.txt");
    CAPTURE(path);
    ImportOptions raw;  // the reference keeps mangled names as written
    raw.demangle = false;
    auto c = ImportFile(path, raw);
    REQUIRE_MESSAGE(c.ok(), c.status().message());
    CHECK(c->format == CaptureFormat::kPerfScript);
    CHECK(FoldedOf(*c, storage::GroupBy::kProcess, true, c->default_sample_type) == expected);
    ++compared;
  }
  CHECK(compared == 8);
}

TEST_CASE("pprof self totals per function match the file's own samples") {
  testing::RequireCorpus();
  for (const std::string& path : ListFiles(CorpusDir())) {
    if (path.size() < 6 || path.substr(path.size() - 6) != ".pb.gz") continue;
    CAPTURE(path);
    // Independent reading: zlib + the generated message, pprof's rules.
    perftools::profiles::Profile p;
    REQUIRE(p.ParseFromString(Gunzip(ReadAll(path))));
    const auto& st = p.string_table();
    int default_index = p.sample_type_size() - 1;
    for (int i = 0; i < p.sample_type_size(); ++i) {
      if (p.default_sample_type() != 0 && p.sample_type(i).type() == p.default_sample_type()) default_index = i;
    }
    std::map<uint64_t, const perftools::profiles::Location*> locs;
    for (const auto& l : p.location()) locs[l.id()] = &l;
    std::map<uint64_t, std::string> fnames;
    for (const auto& f : p.function()) fnames[f.id()] = st[static_cast<int>(f.name())];
    auto c = ImportFile(path);
    REQUIRE_MESSAGE(c.ok(), c.status().message());
    auto type_at = [&](int i) {
      return storage::SampleType{st[static_cast<int>(p.sample_type(i).type())],
                                 st[static_cast<int>(p.sample_type(i).unit())]};
    };
    CHECK(c->default_sample_type == type_at(default_index));  // pprof's rule
    // Every sample type is there, each with its own totals.
    for (int index = 0; index < p.sample_type_size(); ++index) {
      CAPTURE(index);
      std::map<std::string, int64_t> expected;
      for (const auto& s : p.sample()) {
        if (s.location_id_size() == 0 || s.value(index) == 0) continue;
        const auto* leaf = locs.at(s.location_id(0));
        std::string name;
        if (leaf->line_size() > 0) {
          name = fnames.at(leaf->line(0).function_id());
        }
        if (name.empty()) continue;  // unnamed frames are labelled by address
        expected[name] += s.value(index);
      }
      for (auto it = expected.begin(); it != expected.end();) {
        it = it->second == 0 ? expected.erase(it) : std::next(it);
      }
      storage::Query q;
      q.sample_type = type_at(index);
      auto slice = storage::SliceFromBatch(c->batch, q);
      CHECK(slice->sample_type.type == q.sample_type);
      std::map<std::string, int64_t> got;
      for (const auto& row : storage::BuildTopFunctions(slice)) {
        if (row.self != 0 && row.function.find("+0x") == std::string::npos &&
            row.function.rfind("0x", 0) != 0) {
          got[row.function] += row.self;
        }
      }
      CHECK(got == expected);
    }
  }
}

// Folded lines with every weight multiplied by `n`.
std::string TimesN(const std::string& folded, int64_t n) {
  std::string out;
  std::istringstream in(folded);
  std::string line;
  while (std::getline(in, line)) {
    size_t space = line.rfind(' ');
    out += line.substr(0, space + 1) + std::to_string(std::stoll(line.substr(space + 1)) * n) + "\n";
  }
  return out;
}

TEST_CASE("a large pprof (read by two threads) imports like the copies it is made of") {
  testing::RequireCorpus();
  // Copies of one profile with fresh location ids: distinct stacks by id,
  // the same names, so the folded weights are the copies' sum.
  perftools::profiles::Profile base;
  REQUIRE(base.ParseFromString(Gunzip(ReadAll(CorpusDir() + "/parca/alloc_objects.pb.gz"))));
  perftools::profiles::Profile big = base;
  big.clear_sample();
  big.clear_location();
  uint64_t max_id = 0;
  for (const auto& l : base.location()) max_id = std::max<uint64_t>(max_id, l.id());
  const int copies = static_cast<int>((6u << 20) / base.ByteSizeLong()) + 1;
  for (int c = 0; c < copies; ++c) {
    for (const auto& l : base.location()) {
      auto* nl = big.add_location();
      *nl = l;
      nl->set_id(l.id() + c * max_id);
    }
    for (const auto& s : base.sample()) {
      auto* ns = big.add_sample();
      *ns = s;
      for (int i = 0; i < ns->location_id_size(); ++i) ns->set_location_id(i, s.location_id(i) + c * max_id);
    }
  }
  std::string small_bytes = base.SerializeAsString();
  std::string big_bytes = big.SerializeAsString();
  REQUIRE(big_bytes.size() > (4u << 20));
  // pprof's rule (default_sample_type, read after the samples) and each
  // type by name: every value of every sample is read in one walk.
  std::vector<std::string> types = {""};
  for (const auto& st : base.sample_type()) types.push_back(base.string_table(static_cast<int>(st.type())));
  for (const std::string& type : types) {
    CAPTURE(type);
    ImportOptions o;
    o.sample_type = type;
    auto one = ImportBytes(small_bytes, "one.pb", o);
    auto all = ImportBytes(big_bytes, "big.pb", o);
    REQUIRE_MESSAGE(one.ok(), one.status().message());
    REQUIRE_MESSAGE(all.ok(), all.status().message());
    CHECK(all->sample_types == one->sample_types);
    CHECK(all->default_sample_type == one->default_sample_type);
    for (const storage::SampleType& kind : one->sample_types) {
      CHECK(FoldedOf(*all, storage::GroupBy::kThread, true, kind) ==
            TimesN(FoldedOf(*one, storage::GroupBy::kThread, true, kind), copies));
      auto attrs = AttributeWeights(*one, kind);
      for (auto& [k, w] : attrs) w *= copies;
      CHECK(AttributeWeights(*all, kind) == attrs);
    }
  }
}

TEST_CASE("pprof frames of Go code are Go frames, by their source files") {
  testing::RequireCorpus();
  auto c = ImportFile(CorpusDir() + "/parca/fib.pb.gz");
  REQUIRE(c.ok());
  const auto& d = c->batch.dict;
  size_t go = 0, go_files = 0;
  for (const storage::Frame& f : d.frames) {
    const std::string& file = d.strings[f.file];
    if (file.size() > 3 && file.substr(file.size() - 3) == ".go") {
      ++go_files;
      CHECK(f.type == storage::FrameType::kGo);
    }
    go += f.type == storage::FrameType::kGo;
  }
  CHECK(go_files > 10);
  CHECK(go == go_files);
}

TEST_CASE("round trips keep every stack and weight") {
  testing::RequireCorpus();
  for (const std::string& path : ListFiles(CorpusDir())) {
    if (!IsCaptureFile(path)) continue;
    CAPTURE(path);
    auto original = ImportFile(path);
    REQUIRE(original.ok());
    for (const storage::SampleType& kind : original->sample_types) {
    CAPTURE(storage::SampleTypeName(kind));
    storage::Query q;
    q.sample_type = kind;
    std::string folded = FoldedOf(*original, storage::GroupBy::kThread, true, kind);
    auto attrs = AttributeWeights(*original, kind);

    // otlp -> otlp: export, import, export again, import again.
    ExportOptions otlp;
    otlp.format = ExportFormat::kOtlp;
    auto bytes1 = ExportSlice(storage::SliceFromBatch(original->batch, q), otlp);
    REQUIRE(bytes1.ok());
    auto once = ImportBytes(*bytes1, "once.otlp.gz");
    REQUIRE_MESSAGE(once.ok(), once.status().message());
    CHECK(once->format == CaptureFormat::kOtlpProtobuf);
    auto bytes2 = ExportSlice(storage::SliceFromBatch(once->batch, q), otlp);
    REQUIRE(bytes2.ok());
    auto twice = ImportBytes(*bytes2, "twice.otlp.gz");
    REQUIRE(twice.ok());
    CHECK(FoldedOf(*once, storage::GroupBy::kThread, true, kind) == folded);
    CHECK(FoldedOf(*twice, storage::GroupBy::kThread, true, kind) == folded);
    CHECK(AttributeWeights(*twice, kind) == attrs);

    // pprof -> otlp -> pprof.
    if (original->format == CaptureFormat::kPprof) {
      ExportOptions pprof;
      pprof.format = ExportFormat::kPprof;
      auto back = ExportSlice(storage::SliceFromBatch(once->batch, q), pprof);
      REQUIRE(back.ok());
      auto again = ImportBytes(*back, "again.pb.gz");
      REQUIRE_MESSAGE(again.ok(), again.status().message());
      CHECK(again->format == CaptureFormat::kPprof);
      CHECK(again->sample_types == std::vector<storage::SampleType>{kind});
      CHECK(again->default_sample_type == kind);
      CHECK(FoldedOf(*again, storage::GroupBy::kThread, true, kind) == folded);
      CHECK(AttributeWeights(*again, kind) == attrs);
    }
    }
  }
}

TEST_CASE("malformed corpus variants fail with the file name and a position") {
  testing::RequireCorpus();
  std::string gz = ReadAll(CorpusDir() + "/pprof/sample.cpu.pb.gz");
  std::string raw = Gunzip(gz);
  struct Case {
    std::string name, bytes, expect;
  };
  std::vector<Case> cases = {
      {"truncated.pb.gz", gz.substr(0, gz.size() - 100), "truncated.pb.gz: byte "},
      {"truncated.pb", raw.substr(0, raw.size() * 2 / 3), "truncated.pb: byte "},
      {"wrongmagic.pb.gz", "\x1f\x8c" + gz.substr(2), "wrongmagic.pb.gz: byte "},
      {"huge.pb", std::string("\x0a\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 10), "huge.pb: byte 0:"},
      {"otlp-trunc.pb", std::string("\x0a\x05\x12\x03\x0a\x01", 6), "otlp-trunc.pb: byte "},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    auto r = ImportBytes(c.bytes, c.name);
    REQUIRE(!r.ok());
    INFO(r.status().message());
    CHECK(std::string(r.status().message()).rfind(c.expect, 0) == 0);
  }
  // Deeply nested OTLP: resource_profiles.scope_profiles... built by
  // nesting field 1 of AnyValue-style containers 5000 levels deep.
  std::string nested;
  for (int i = 0; i < 5000; ++i) {
    std::string wrapped = "\x0a";
    uint64_t len = nested.size();
    do {
      uint8_t b = len & 0x7f;
      len >>= 7;
      wrapped.push_back(static_cast<char>(b | (len ? 0x80 : 0)));
    } while (len);
    nested = wrapped + nested;
  }
  auto deep = ImportBytes(nested, "deep.pb");
  CHECK(!deep.ok());
  CHECK(std::string(deep.status().message()).rfind("deep.pb", 0) == 0);
}

TEST_CASE("perf 6.x output: default fields and -F comm,pid,tid,time,ip,sym,dso agree") {
  const char* src = std::getenv("KILN_SOURCE_DIR");
  std::string dir = std::string(src != nullptr ? src : ".") + "/tests/import/data/";
  auto full = ImportFile(dir + "dd-perf6-default.txt");
  auto fields = ImportFile(dir + "dd-perf6-F-comm-pid-tid-time-ip-sym-dso.txt");
  REQUIRE_MESSAGE(full.ok(), full.status().message());
  REQUIRE_MESSAGE(fields.ok(), fields.status().message());
  CHECK(full->batch.samples.size() == 58);
  CHECK(fields->batch.samples.size() == 58);
  CHECK(full->perf_event == "cpu-clock:ppp");
  // Periods of a clock event are nanoseconds of CPU time, not samples.
  CHECK(full->sample_types == std::vector<storage::SampleType>{{"cpu", "nanoseconds"}});
  CHECK(fields->sample_types == std::vector<storage::SampleType>{storage::OnCpuSamples()});
  // Same stacks; the default output weighs each sample by its period
  // (2004008 ns), the -F output counts samples.
  std::string counted = FoldedOf(*fields, storage::GroupBy::kProcess, true, fields->default_sample_type);
  std::string weighted = FoldedOf(*full, storage::GroupBy::kProcess, true, full->default_sample_type);
  std::istringstream a(counted), b(weighted);
  std::string la, lb;
  int lines = 0;
  while (std::getline(a, la) && std::getline(b, lb)) {
    size_t sa = la.rfind(' '), sb = lb.rfind(' ');
    CHECK(la.substr(0, sa) == lb.substr(0, sb));
    CHECK(std::stoll(la.substr(sa + 1)) * 2004008 == std::stoll(lb.substr(sb + 1)));
    ++lines;
  }
  CHECK(lines == 17);
  CHECK(counted.find("do_syscall_64_[k]") != std::string::npos);
  // pid and tid from the -F header.
  CHECK(fields->batch.dict.AttributeValue(fields->batch.samples[0].attribute_set, "process.pid") == "10987");
}

}  // namespace
}  // namespace kiln::capture
