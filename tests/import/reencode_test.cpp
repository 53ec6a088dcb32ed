// pprof files as other encoders may legally write them: fields in any order
// (Sample.value before Sample.location_id, labels first, the string table
// before the samples) and repeated scalars unpacked or split over several
// packed runs. protobuf allows all of it and Go's reader takes all of it.
// tools/reencode_pprof.py re-encodes every corpus pprof with the official
// Python protobuf library (pprof's profile.proto compiled by protoc); each
// variant must import exactly as the original does: the same sample types,
// the same default, and per type the same folded stacks and attributes.
//
// Needs python3 with google.protobuf (Debian: python3-protobuf) and protoc;
// without them it says which is missing and exits 77 (skipped).
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "ingest/capture/capture.h"
#include "ingest/capture/export.h"
#include "storage/model/query.h"
#include "tests/child_process.h"
#include "tests/import/corpus_files.h"

namespace kiln::capture {
namespace {

namespace fs = std::filesystem;

std::string Source() {
  const char* src = std::getenv("KILN_SOURCE_DIR");
  return src != nullptr ? src : ".";
}

int Run(const std::vector<std::string>& argv, const std::string& log) {
  return kiln::testing::WaitChild(kiln::testing::SpawnChild(argv, kiln::testing::ChildOutput::File(log),
                                                            kiln::testing::ChildOutput::File(log)));
}

// Folded lines of one sample type, grouped by thread so labels count too.
std::string Folded(const ImportedCapture& c, const storage::SampleType& type) {
  storage::Query q;
  q.sample_type = type;
  ExportOptions o;
  o.tree.group_by = storage::GroupBy::kThread;
  o.annotate = true;
  return FoldedText(storage::SliceFromBatch(c.batch, q), o);
}

TEST_CASE("pprof with fields reordered and repeated fields unpacked or split imports like the original") {
  testing::RequireCorpus();
  testing::TempDir tmp;
  const std::string dir = tmp;
  const std::string log = dir + "/tools.log";
  // The generated module, from the same profile.proto Kiln builds with.
  if (Run({"/usr/bin/python3", "-c", "import google.protobuf"}, log) != 0) {
    std::fprintf(stderr, "skipped: python3 has no google.protobuf (Debian: python3-protobuf)\n");
    std::exit(77);
  }
  if (Run({"protoc", "--version"}, log) != 0) {
    std::fprintf(stderr, "skipped: protoc not found (Debian: protobuf-compiler)\n");
    std::exit(77);
  }
  fs::create_directories(dir + "/py");
  fs::create_directories(dir + "/out");
  REQUIRE(Run({"protoc", "-I" + Source() + "/proto/pprof", "--python_out=" + dir + "/py",
               Source() + "/proto/pprof/profile.proto"},
              log) == 0);
  std::vector<std::string> originals;
  for (const auto& e : fs::recursive_directory_iterator(testing::CorpusDir())) {
    const std::string p = e.path().string();
    if (p.size() > 6 && p.substr(p.size() - 6) == ".pb.gz") originals.push_back(p);
  }
  REQUIRE(originals.size() >= 10);
  std::vector<std::string> argv = {"/usr/bin/python3", Source() + "/tests/import/tools/reencode_pprof.py",
                                   dir + "/py", dir + "/out"};
  argv.insert(argv.end(), originals.begin(), originals.end());
  const int rc = Run(argv, log);
  INFO(testing::ReadAll(log));
  REQUIRE(rc == 0);

  int compared = 0;
  for (const std::string& path : originals) {
    CAPTURE(path);
    auto original = ImportFile(path);
    REQUIRE_MESSAGE(original.ok(), original.status().message());
    for (const char* mode : {"reversed", "split"}) {
      const std::string variant = dir + "/out/" + fs::path(path).filename().string() + "." + mode + ".pb";
      CAPTURE(variant);
      auto c = ImportFile(variant);
      REQUIRE_MESSAGE(c.ok(), c.status().message());
      CHECK(c->sample_types == original->sample_types);
      CHECK(c->default_sample_type == original->default_sample_type);
      CHECK(c->batch.samples.size() == original->batch.samples.size());
      for (const storage::SampleType& type : original->sample_types) {
        CAPTURE(storage::SampleTypeName(type));
        CHECK(Folded(*c, type) == Folded(*original, type));
      }
      ++compared;
    }
  }
  CHECK(compared == static_cast<int>(2 * originals.size()));
}

}  // namespace
}  // namespace kiln::capture
