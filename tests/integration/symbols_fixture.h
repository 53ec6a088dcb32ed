// Helpers of the symbolization integration tests: ids and addresses of the
// test program taken with coreutils and binutils (independent of kiln's ELF
// reader), OTLP requests with its native frames, and waiting for names to
// show up in `kiln export`. Include from one test file each.
#pragma once

#include <doctest/doctest.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "ingest/otlp_request_builder.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.grpc.pb.h"
#include "tests/integration/elf_oracle.h"
#include "tests/integration/kiln_process.h"
#include "tests/integration/otlp_send.h"

namespace kiln::testing {
namespace {

namespace otlp = opentelemetry::proto::collector::profiles::v1development;
using ingest::OtlpRequestBuilder;

constexpr uint64_t kT0 = 1'760'000'000'000'000'000;

// A desktop's DEBUGINFOD_URLS (Debian sets one system-wide) must not send
// the tests to the internet; the debuginfod test sets its own server.
const bool kNoAmbientDebuginfod = (unsetenv("DEBUGINFOD_URLS"), true);

// What the OpenTelemetry eBPF profiler sends for the test program: native
// frames with an executable id and ELF addresses but no names. The
// addresses are 4 bytes into main, kiln_victim_middle and kiln_victim_leaf
// of `symbols_from` (the unstripped build: same addresses as its copies).
otlp::ExportProfilesServiceRequest VictimRequest(const std::string& mapping_path, const std::string& htlhash,
                                                 const std::string& gnu_build_id,
                                                 const std::string& symbols_from, int samples = 3) {
  OtlpRequestBuilder b;
  auto* rp = b.Resource({{"process.executable.name", "victim"}, {"process.pid", "4242"}});
  auto* profile = b.AddProfile(rp, "samples", "count", "cpu", "nanoseconds", kT0);
  const int32_t mapping = b.Mapping(mapping_path, htlhash);
  if (!gnu_build_id.empty()) {
    b.request.mutable_dictionary()->mutable_mapping_table(mapping)->add_attribute_indices(
        b.StringAttribute("process.executable.build_id.gnu", gnu_build_id));
  }
  const int32_t main_loc = b.Location(mapping, NmAddress(symbols_from, "main") + 4, {});
  const int32_t middle = b.Location(mapping, NmAddress(symbols_from, "kiln_victim_middle") + 4, {});
  const int32_t leaf = b.Location(mapping, NmAddress(symbols_from, "kiln_victim_leaf") + 4, {});
  std::vector<uint64_t> times;
  for (int i = 0; i < samples; ++i) times.push_back(kT0 + static_cast<uint64_t>(i) * 1000);
  OtlpRequestBuilder::AddSample(profile, b.Stack({leaf, middle, main_loc}), {}, times);
  return std::move(b.request);
}

constexpr const char* kNamed = "victim;main;kiln_victim_middle;kiln_victim_leaf 3";

// `kiln export --format folded` of `dir` until it prints `line` (kiln
// symbolizes in the background) or `seconds` pass; returns the last output.
std::string WaitForFolded(const std::string& dir, const std::string& line, int seconds = 60) {
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    CommandResult r = RunKiln({"export", "--data-dir", dir, "--format", "folded"});
    out = r.out + r.err;
    if (r.exit_code == 0 && out.find(line) != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  return out;
}

// `kiln symbols list` until the block of `file` shows `text`.
std::string WaitForList(const std::string& dir, const std::string& text, int seconds = 60) {
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    CommandResult r = RunKiln({"symbols", "list", "--data-dir", dir});
    out = r.out + r.err;
    if (r.exit_code == 0 && out.find(text) != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  return out;
}

}  // namespace
}  // namespace kiln::testing
