// `kiln dump`, run as a user runs it: the text for a small corpus file
// (golden, read against the file's own two stacks), --json checked against
// official protobuf decoding (protoc --decode of the same OTLP request): as
// many samples, the same total value, every line a JSON object; and
// `kiln dump --listen` printing what a real gRPC client sends it.
#include <doctest/doctest.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ingest/otlp_request_builder.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.grpc.pb.h"
#include "tests/child_process.h"
#include "tests/temp_dir.h"

namespace {

namespace fs = std::filesystem;
using kiln::testing::ChildOutput;
using kiln::testing::ReadWholeFile;
using kiln::testing::TempDir;
using kiln::testing::ScopedChild;
using kiln::testing::SpawnChild;
using kiln::testing::WaitChild;

std::string Source() {
  const char* s = std::getenv("KILN_SOURCE_DIR");
  return s != nullptr ? s : ".";
}

std::pair<int, std::string> Run(const std::vector<std::string>& argv, const std::string& out) {
  int code = WaitChild(SpawnChild(argv, ChildOutput::File(out)));
  return {code, ReadWholeFile(out)};
}

TEST_CASE("kiln dump: each sample with its type, value, time and stack, leaf first") {
  TempDir dir;
  const auto [code, text] =
      Run({KILN_BINARY, "dump", Source() + "/tests/data/corpus/parca/two-stacks.pb.gz"}, dir.path + "/out");
  CHECK(code == 0);
  // Parca's two-stacks profile: two CPU samples (316 and 52.6 ms), each a
  // two-frame stack whose leaf names why its unwinding stopped.
  const std::string expected =
      "# " + Source() + "/tests/data/corpus/parca/two-stacks.pb.gz: pprof (gzip), 2 samples\n"
      "\n"
      "sample 1: cpu/nanoseconds = 316 ms at 2024-05-21T11:12:23.109000000Z\n"
      "  stack, leaf first (2 frames):\n"
      "    PcNotCovered  [native]\n"
      "    unwind failed  [native]\n"
      "\n"
      "sample 2: cpu/nanoseconds = 52.6 ms at 2024-05-21T11:12:23.109000000Z\n"
      "  stack, leaf first (2 frames):\n"
      "    ChunkNotFound  [native]\n"
      "    unwind failed  [native]\n"
      "\n";
  CHECK(text == expected);
}

TEST_CASE("kiln dump --json: as many samples and the same total as protoc decodes from the OTLP request") {
  REQUIRE_MESSAGE(access("/usr/bin/python3", X_OK) == 0, "/usr/bin/python3 reads protoc's output");
  TempDir dir;
  const std::string otlp = dir.path + "/p.otlp";
  REQUIRE(Run({KILN_BINARY, "export", "--input", Source() + "/tests/data/corpus/parca/profile1.pb.gz", "--format",
               "otlp", "-o", otlp},
              dir.path + "/export.out")
              .first == 0);
  const auto [code, lines] = Run({KILN_BINARY, "dump", "--json", otlp}, dir.path + "/dump.json");
  REQUIRE(code == 0);
  // The oracle: protoc decodes the request (gzip as kiln wrote it); each
  // Sample is one sample per timestamp (or one without), its values summed.
  const std::string script = dir.path + "/check.py";
  std::ofstream(script)
      << "import json, re, subprocess, sys, gzip\n"
         "raw = open(sys.argv[1], 'rb').read()\n"
         "if raw[:2] == b'\\x1f\\x8b': raw = gzip.decompress(raw)\n"
         "text = subprocess.run([sys.argv[2], '--decode=opentelemetry.proto.collector.profiles.v1development."
         "ExportProfilesServiceRequest', '-I', sys.argv[3], 'opentelemetry/proto/collector/profiles/v1development/"
         "profiles_service.proto'], input=raw, capture_output=True, check=True).stdout.decode()\n"
         "count = total = 0\n"
         "for block in re.findall(r'\\n(\\s+)samples \\{\\n(.*?)\\n\\1\\}', text, re.S):\n"
         "    body = block[1]\n"
         "    times = len(re.findall(r'timestamps_unix_nano:', body))\n"
         "    values = [int(v) for v in re.findall(r'\\bvalues: (-?\\d+)', body)]\n"
         "    count += max(1, times)\n"
         "    total += sum(values) if values else max(1, times)\n"
         "dumped = [json.loads(line) for line in open(sys.argv[4])]\n"
         "assert all(isinstance(d, dict) and d['stack'] for d in dumped), 'a line without a stack'\n"
         "print(count, total, len(dumped), sum(d['value'] for d in dumped))\n";
  const auto [check_code, check] =
      Run({"/usr/bin/python3", script, otlp, KILN_PROTOC, Source() + "/proto", dir.path + "/dump.json"},
          dir.path + "/check.out");
  REQUIRE_MESSAGE(check_code == 0, check);
  std::istringstream in(check);
  long long count = 0, total = 0, dumped = 0, dumped_total = 0;
  in >> count >> total >> dumped >> dumped_total;
  MESSAGE("protoc: " << count << " samples, total " << total << "; kiln dump --json: " << dumped << ", "
                     << dumped_total);
  CHECK(count > 10);
  CHECK(dumped == count);
  CHECK(dumped_total == total);
}

TEST_CASE("kiln dump: a file that is not a profile is refused by name, exit 1") {
  TempDir dir;
  const std::string png = dir.path + "/x.png";
  std::ofstream(png) << std::string("\x89PNG\r\n\x1a\n", 8) << std::string(64, '\0');
  const auto [code, out] = Run({KILN_BINARY, "dump", png}, dir.path + "/out");
  CHECK(code == 1);
  CHECK(out.empty());
}

TEST_CASE("kiln dump --listen: prints each request a sender makes, with the sender, and stores nothing") {
  TempDir dir;
  const std::string out = dir.path + "/out";
  ScopedChild dump(SpawnChild({KILN_BINARY, "dump", "--listen", "127.0.0.1:0"}, ChildOutput::File(out)));
  // Its first line says where it listens (port 0: one the system chose).
  const std::string marker = "listening on 127.0.0.1:";
  std::string text;
  for (int i = 0; i < 300 && text.find(" for OTLP") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    text = ReadWholeFile(out);
  }
  const size_t at = text.find(marker);
  REQUIRE_MESSAGE(at != std::string::npos, text);
  const int port = std::atoi(text.c_str() + at + marker.size());
  REQUIRE(port > 0);

  namespace collector = opentelemetry::proto::collector::profiles::v1development;
  kiln::ingest::OtlpRequestBuilder b;
  const int32_t exe = b.Mapping("/usr/bin/app", "00112233445566778899aabbccddeeff");
  const int32_t stack = b.Stack({b.Location(exe, 0x1234, {{"leaf_fn", "app.c", 12}}), b.Location(exe, 0x10, {{"main"}})});
  auto* p = b.AddProfile(b.Resource({{"process.pid", "42"}, {"process.executable.name", "app"}}));
  kiln::ingest::OtlpRequestBuilder::AddSample(p, stack, {b.StringAttribute("thread.name", "worker-1")},
                                              {1'700'000'000'000'000'000ull, 1'700'000'000'001'000'000ull});
  auto stub = collector::ProfilesService::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  collector::ExportProfilesServiceResponse response;
  REQUIRE(stub->Export(&context, b.request, &response).ok());

  // A profile whose sample names a stack the request does not have: the
  // receiver refuses that profile, and dump prints why, with the field.
  kiln::ingest::OtlpRequestBuilder bad;
  auto* q = bad.AddProfile(bad.Resource({{"process.pid", "43"}}));
  kiln::ingest::OtlpRequestBuilder::AddSample(q, 99, {}, {1'700'000'000'000'000'000ull});
  grpc::ClientContext bad_context;
  collector::ExportProfilesServiceResponse bad_response;
  REQUIRE(stub->Export(&bad_context, bad.request, &bad_response).ok());
  CHECK(bad_response.partial_success().rejected_profiles() == 1);

  for (int i = 0; i < 300 && ReadWholeFile(out).find("# warning: rejected") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(dump.Stop(SIGINT) == 0);
  text = ReadWholeFile(out);
  MESSAGE(text);
  // The Log's own line, as the receiver answered the sender.
  CHECK(text.find("# warning: rejected 1 of 1 profiles from ipv4:127.0.0.1:") != std::string::npos);
  CHECK(text.find(bad_response.partial_success().error_message()) != std::string::npos);
  CHECK(bad_response.partial_success().error_message().find("stack_index") != std::string::npos);
  CHECK(text.find("# request from ipv4:127.0.0.1:") != std::string::npos);
  CHECK(text.find("sample 1: samples/count = 1 sample at 2023-11-14T22:13:20.000000000Z") != std::string::npos);
  CHECK(text.find("sample 2: samples/count = 1 sample at 2023-11-14T22:13:20.001000000Z") != std::string::npos);
  CHECK(text.find("process.pid=42") != std::string::npos);
  CHECK(text.find("thread.name=worker-1") != std::string::npos);
  CHECK(text.find("    leaf_fn  app.c:12  [native]  /usr/bin/app 0x1234\n    main") != std::string::npos);
  CHECK(text.find("# kiln dump: stopped after 2 samples") != std::string::npos);
}

}  // namespace
