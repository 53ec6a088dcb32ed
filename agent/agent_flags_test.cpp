#include "agent_flags.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>

using namespace kiln::agent;

namespace {

Result<AgentOptions> Parse(std::vector<std::string_view> args, std::map<std::string, std::string> env = {}) {
  return ParseAgentFlags(args, [env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

}  // namespace

TEST_CASE("flags: the OpenTelemetry profiler's command line") {
  auto o = Parse({"-collection-agent=127.0.0.1:11000", "-disable-tls"});
  REQUIRE(o.ok());
  CHECK(o->collection_agent == "127.0.0.1:11000");
  CHECK(o->disable_tls);
  CHECK(o->samples_per_second == 20);
  CHECK(o->reporter_interval == std::chrono::seconds(5));
  CHECK(o->symbolize);
}

TEST_CASE("flags: Go syntax variants") {
  auto o = Parse({"--collection-agent", "host:4317", "-samples-per-second", "99", "--reporter-interval=1m30s",
                  "-disable-tls=false", "-no-symbolize"});
  REQUIRE(o.ok());
  CHECK(o->collection_agent == "host:4317");
  CHECK_FALSE(o->disable_tls);
  CHECK(o->samples_per_second == 99);
  CHECK(o->reporter_interval == std::chrono::seconds(90));
  CHECK_FALSE(o->symbolize);
  CHECK(Parse({"-version"})->show_version);
  CHECK(Parse({"-h"})->show_help);
  CHECK(Parse({"-help"})->show_help);
}

TEST_CASE("flags: errors name the flag") {
  auto unknown = Parse({"-colection-agent=x:1"});
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error() == "flag provided but not defined: -colection-agent");
  auto missing = Parse({"-samples-per-second"});
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error() == "flag needs an argument: -samples-per-second");
  auto bad = Parse({"-samples-per-second=fast"});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().find("-samples-per-second") != std::string::npos);
  CHECK_FALSE(Parse({"-samples-per-second=0"}).ok());
  CHECK_FALSE(Parse({"-reporter-interval=5"}).ok());
  CHECK_FALSE(Parse({"-disable-tls=maybe"}).ok());
  CHECK_FALSE(Parse({"stray"}).ok());
  CHECK_FALSE(Parse({"-collection-agent=nohostport"}).ok());
}

TEST_CASE("flags: durations") {
  CHECK(ParseGoDuration("5s") == std::chrono::seconds(5));
  CHECK(ParseGoDuration("500ms") == std::chrono::milliseconds(500));
  CHECK(ParseGoDuration("1h") == std::chrono::hours(1));
  CHECK(ParseGoDuration("1.5s") == std::chrono::milliseconds(1500));
  CHECK(ParseGoDuration("250us") == std::chrono::microseconds(250));
  CHECK_FALSE(ParseGoDuration("5").has_value());
  CHECK_FALSE(ParseGoDuration("s").has_value());
  CHECK_FALSE(ParseGoDuration("5x").has_value());
}

TEST_CASE("flags: environment and tags") {
  auto o = Parse({"-tags=env=prod;team=perf;canary"},
                 {{"OTEL_RESOURCE_ATTRIBUTES", "service.name=shop,deployment.environment=a%20b"},
                  {"OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317"}});
  REQUIRE(o.ok());
  CHECK(o->collection_agent == "collector:4317");
  CHECK(o->disable_tls);  // http:// means plain text
  std::vector<std::pair<std::string, std::string>> want = {{"service.name", "shop"},
                                                           {"deployment.environment", "a b"},
                                                           {"env", "prod"},
                                                           {"team", "perf"},
                                                           {"kiln.tags", "canary"}};
  CHECK(o->resource_attributes == want);

  auto flag_wins = Parse({"-collection-agent=a:1"}, {{"OTEL_EXPORTER_OTLP_ENDPOINT", "https://b:2"}});
  CHECK(flag_wins->collection_agent == "a:1");
  CHECK_FALSE(flag_wins->disable_tls);
  auto tls = Parse({}, {{"OTEL_EXPORTER_OTLP_ENDPOINT", "https://b"}});
  CHECK(tls->collection_agent == "b:4317");
  CHECK_FALSE(tls->disable_tls);
  CHECK_FALSE(Parse({}, {{"OTEL_RESOURCE_ATTRIBUTES", "novalue"}}).ok());
}

TEST_CASE("flags: usage lists every flag") {
  std::string usage = AgentUsage();
  for (const char* flag :
       {"-collection-agent", "-disable-tls", "-samples-per-second", "-reporter-interval", "-tags",
        "-no-symbolize", "-version", "-help", "-auth-token-file", "-tls-ca-file", "OTEL_RESOURCE_ATTRIBUTES",
        "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_HEADERS"})
    CHECK(usage.find(flag) != std::string::npos);
}

TEST_CASE("-off-cpu-threshold takes a probability, as the OpenTelemetry profiler's") {
  auto env = [](const char*) -> const char* { return nullptr; };
  std::vector<std::string_view> ok = {"-off-cpu-threshold", "0.25"};
  auto parsed = ParseAgentFlags(ok, env);
  REQUIRE(parsed.ok());
  CHECK(parsed->off_cpu_threshold == doctest::Approx(0.25));
  std::vector<std::string_view> off = {};
  CHECK(ParseAgentFlags(off, env)->off_cpu_threshold == 0);
  for (std::string_view bad : {"1.5", "-0.1", "x", ""}) {
    std::vector<std::string_view> args = {"-off-cpu-threshold", bad};
    auto r = ParseAgentFlags(args, env);
    CHECK_FALSE(r.ok());
    if (!r.ok()) CHECK(r.error().find("off-cpu-threshold") != std::string::npos);
  }
}

TEST_CASE("a token and a CA for kiln: -auth-token-file, -tls-ca-file, OTEL_EXPORTER_OTLP_HEADERS") {
  char dir_template[] = "/tmp/kiln-agent-flags-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  const std::string token_file = dir + "/token", empty_file = dir + "/empty", ca_file = dir + "/ca.pem";
  std::ofstream(token_file) << "  abc123\n";
  std::ofstream(empty_file) << "\n";
  std::ofstream(ca_file) << "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

  auto o = Parse({"-collection-agent=kiln:11000", "-auth-token-file", token_file, "-tls-ca-file=" + ca_file},
                 {{"OTEL_EXPORTER_OTLP_HEADERS", "X-Team=perf,Authorization=Bearer%20old"}});
  REQUIRE(o.ok());
  CHECK(o->auth_token_file == token_file);
  CHECK(o->tls_ca_file == ca_file);
  auto headers = ExportHeaders(*o);
  REQUIRE(headers.ok());
  // Keys lower-cased (gRPC metadata), the token file's authorization wins.
  std::vector<std::pair<std::string, std::string>> want = {{"x-team", "perf"},
                                                           {"authorization", "Bearer abc123"}};
  CHECK(*headers == want);
  auto ca = ReadTlsCaFile(*o);
  REQUIRE(ca.ok());
  CHECK(ca->starts_with("-----BEGIN CERTIFICATE-----"));

  // The header alone, as OpenTelemetry SDKs take it.
  auto env_only = Parse({}, {{"OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20xyz"}});
  REQUIRE(env_only.ok());
  want = {{"authorization", "Bearer xyz"}};
  CHECK(*ExportHeaders(*env_only) == want);
  CHECK(ReadTlsCaFile(*env_only)->empty());

  // Files that cannot be used are named.
  auto empty = Parse({"-auth-token-file=" + empty_file});
  CHECK(ExportHeaders(*empty).error() == "-auth-token-file " + empty_file + " is empty");
  auto missing = Parse({"-auth-token-file=" + dir + "/none"});
  CHECK(ExportHeaders(*missing).error() ==
        "-auth-token-file " + dir + "/none is not a readable regular file");
  auto not_pem = Parse({"-tls-ca-file=" + token_file});
  CHECK(ReadTlsCaFile(*not_pem).error() ==
        "-tls-ca-file " + token_file + " is not PEM (no '-----BEGIN' line)");
  CHECK_FALSE(Parse({"-auth-token-file="}).ok());
  std::filesystem::remove_all(dir);
}
