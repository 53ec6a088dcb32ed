// kiln mcp's protocol and tools against a real store built from folded
// fixtures: the answers are checked against the fixture's own counts.
// (tests/mcp/ drives the built kiln with the official MCP SDK client.)
#include "app/mcp_server.h"

#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "storage/model/test_fixtures.h"
#include "storage/store.h"
#include "tests/temp_dir.h"

namespace kiln::app {
namespace {

using json = nlohmann::json;
using storage::testing::BatchFromFolded;
using storage::testing::FoldedFixtureOptions;

constexpr int64_t kOld = 1'795'900'000'000'000'000;   // 2026-11-28T21:06:40Z
constexpr int64_t kNew = 1'795'935'000'000'000'000;   // about 10 hours later
constexpr int64_t kNow = kNew + 60'000'000'000;        // the test's clock

// Old: main;parse 60 + main;work;hash 40 (python3, pid 11).
// New: main;work;hash 90 + main;parse 10 (python3, pid 11) and
//      main;serve 50 (nginx, pid 22).
void FillStore(const std::string& dir) {
  auto store = storage::Store::Open(dir, storage::Store::Mode::kReadWrite);
  REQUIRE(store.ok());
  FoldedFixtureOptions py{.first_time_ns = kOld, .process = "python3", .attributes = {{"process.pid", "11"}}};
  REQUIRE((*store)->Write(BatchFromFolded("main;parse 60\nmain;work;hash 40", py)).ok());
  py.first_time_ns = kNew;
  REQUIRE((*store)->Write(BatchFromFolded("main;work;hash 90\nmain;parse 10", py)).ok());
  FoldedFixtureOptions nginx{.first_time_ns = kNew, .process = "nginx", .attributes = {{"process.pid", "22"}}};
  REQUIRE((*store)->Write(BatchFromFolded("main;serve 50", nginx)).ok());
}

class Session {
 public:
  explicit Session(const std::string& dir) {
    auto server = McpServer::Create({.data_dir = dir, .input = "", .version = "test"});
    REQUIRE(server.ok());
    server_ = *std::move(server);
    server_->SetClock([] { return kNow; });
  }
  json Request(const std::string& method, json params = json::object()) {
    const json message = {{"jsonrpc", "2.0"}, {"id", ++id_}, {"method", method}, {"params", params}};
    std::optional<std::string> answer = server_->HandleLine(message.dump());
    REQUIRE(answer.has_value());
    json parsed = json::parse(*answer);
    CHECK(parsed["id"] == id_);
    return parsed;
  }
  // A tool's result; `error` says whether it should be a tool error.
  json Call(const std::string& tool, json arguments = json::object(), bool error = false) {
    json r = Request("tools/call", {{"name", tool}, {"arguments", arguments}});
    REQUIRE(r.contains("result"));
    CAPTURE(r.dump());
    CHECK(r["result"]["isError"] == error);
    return r["result"];
  }
  McpServer& server() { return *server_; }

 private:
  std::unique_ptr<McpServer> server_;
  int id_ = 0;
};

const json* Row(const json& rows, const std::string& function) {
  for (const json& r : rows) {
    if (r["function"] == function) return &r;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("mcp: initialize, list tools, errors as JSON-RPC says") {
  testing::TempDir dir;
  FillStore(dir.path);
  Session s(dir.path);
  json init = s.Request("initialize", {{"protocolVersion", "2025-06-18"},
                                       {"capabilities", json::object()},
                                       {"clientInfo", {{"name", "test"}, {"version", "1"}}}});
  CHECK(init["result"]["protocolVersion"] == "2025-06-18");
  CHECK(init["result"]["serverInfo"]["name"] == "kiln");
  CHECK(init["result"]["capabilities"].contains("tools"));
  // A client asking for a revision we do not know gets our newest.
  CHECK(s.Request("initialize", {{"protocolVersion", "1999-01-01"}})["result"]["protocolVersion"] == "2025-11-25");
  // Notifications get no answer.
  CHECK_FALSE(s.server().HandleLine(R"({"jsonrpc":"2.0","method":"notifications/initialized"})").has_value());

  json tools = s.Request("tools/list")["result"]["tools"];
  std::vector<std::string> names;
  for (const json& t : tools) {
    names.push_back(t["name"]);
    CHECK(t["inputSchema"]["type"] == "object");
    CHECK_FALSE(t["description"].get<std::string>().empty());
  }
  CHECK(names == std::vector<std::string>{"sample_types", "sources", "attribute_values", "top_functions",
                                          "hot_paths", "diff", "source_lines", "flamegraph"});

  CHECK(json::parse(*s.server().HandleLine("{not json"))["error"]["code"] == -32700);
  CHECK(s.Request("resources/list")["error"]["code"] == -32601);
  CHECK(s.Request("tools/call", {{"name", "drop_tables"}})["error"]["code"] == -32602);
  // Bad arguments are the tool's answer, saying what is wrong.
  auto error_text = [&](const std::string& tool, json args) {
    json r = s.Call(tool, args, /*error=*/true);
    return r["content"][0]["text"].get<std::string>();
  };
  CHECK(error_text("top_functions", {{"limt", 5}}).find("unknown argument \"limt\"") != std::string::npos);
  CHECK(error_text("top_functions", {{"limit", 0}}).find("1..500") != std::string::npos);
  CHECK(error_text("top_functions", {{"sample_type", "alloc_space"}}).find("there are: samples") != std::string::npos);
  CHECK(error_text("top_functions", {{"last", "soon"}}).find("cannot read duration") != std::string::npos);
  CHECK(error_text("top_functions", {{"from", "now"}, {"to", "now-1h"}}).find("before") != std::string::npos);
  CHECK(error_text("hot_paths", json::object()).find("missing argument \"function\"") != std::string::npos);
  CHECK(error_text("hot_paths", {{"function", "a"}}).find("matches 3 functions") != std::string::npos);
}

TEST_CASE("mcp: top_functions, sources and sample_types answer what the store holds") {
  testing::TempDir dir;
  FillStore(dir.path);
  Session s(dir.path);
  // No arguments: everything, on-CPU samples, hottest self first.
  json all = s.Call("top_functions")["structuredContent"];
  CHECK(all["total"] == 250);
  CHECK(all["samples"] == 250);
  CHECK(all["functions"][0]["function"] == "hash");
  CHECK(all["functions"][0]["self"] == 130);
  CHECK((*Row(all["functions"], "main"))["total"] == 250);
  CHECK((*Row(all["functions"], "parse"))["self"] == 70);
  CHECK((*Row(all["functions"], "work"))["total"] == 130);
  CHECK((*Row(all["functions"], "hash"))["self_share"].get<double>() == doctest::Approx(130.0 / 250));
  CHECK(all["functions_total"] == 5);
  CHECK(all["truncated"] == false);

  // Truncation is loud.
  json two = s.Call("top_functions", {{"limit", 2}});
  CHECK(two["structuredContent"]["functions"].size() == 2);
  CHECK(two["structuredContent"]["truncated"] == true);
  CHECK(two["content"][0]["text"].get<std::string>().find("TRUNCATED: showing 2 of 5 functions") != std::string::npos);

  // The last hour (the clock is a minute after the new samples) and a filter.
  json recent = s.Call("top_functions", {{"last", "1h"}, {"filters", {{"process.executable.name", "python3"}}}})
                    ["structuredContent"];
  CHECK(recent["total"] == 100);
  CHECK((*Row(recent["functions"], "hash"))["self"] == 90);
  CHECK(Row(recent["functions"], "serve") == nullptr);
  // Sorted by total, matching a name.
  json by_total = s.Call("top_functions", {{"sort", "total"}, {"match", "A"}})["structuredContent"];
  CHECK(by_total["functions"][0]["function"] == "main");
  CHECK(by_total["functions"].size() == 3);  // main, parse, hash

  // An empty range says where the data is.
  json future = s.Call("top_functions", {{"from", "2030-01-01T00:00:00Z"}});
  CHECK(future["structuredContent"]["total"] == 0);
  CHECK(future["content"][0]["text"].get<std::string>().find("Nothing matched. The stored samples span") !=
        std::string::npos);

  json types = s.Call("sample_types")["structuredContent"];
  CHECK(types["samples"] == 250);
  CHECK(types["default_sample_type"] == "samples/count");
  REQUIRE(types["sample_types"].size() == 1);
  CHECK(types["sample_types"][0]["samples"] == 250);

  json sources = s.Call("sources")["structuredContent"];
  REQUIRE(sources["processes"].size() == 2);
  CHECK(sources["processes"][0]["pid"] == "11");
  CHECK(sources["processes"][0]["name"] == "python3");
  CHECK(sources["processes"][0]["weight"] == 200);
  CHECK(sources["processes"][1]["weight"] == 50);

  json keys = s.Call("attribute_values")["structuredContent"]["keys"];
  bool has_pid = false;
  for (const json& k : keys) has_pid |= k["key"] == "process.pid" && k["values"] == 2;
  CHECK(has_pid);
  json pids = s.Call("attribute_values", {{"key", "process.pid"}, {"limit", 1}})["structuredContent"];
  CHECK(pids["values"] == json::array({"11"}));
  CHECK(pids["truncated"] == true);
}

TEST_CASE("mcp: hot_paths, flamegraph and diff") {
  testing::TempDir dir;
  FillStore(dir.path);
  Session s(dir.path);
  json hot = s.Call("hot_paths", {{"function", "hash"}})["structuredContent"];
  CHECK(hot["function_total"] == 130);
  CHECK(hot["function_self"] == 130);
  REQUIRE(hot["callers"].size() == 1);
  CHECK(hot["callers"][0]["frames"] == json::array({"main", "work", "hash"}));
  CHECK(hot["callers"][0]["weight"] == 130);
  // A name only one function contains picks it.
  json work = s.Call("hot_paths", {{"function", "wor"}})["structuredContent"];
  CHECK(work["function"] == "work");
  REQUIRE(work["callees"].size() == 1);
  CHECK(work["callees"][0]["frames"] == json::array({"work", "hash"}));

  json flame = s.Call("flamegraph", {{"group_by", "process"}})["structuredContent"];
  CHECK(flame["folded"] == json::array({"python3;main;work;hash 130", "python3;main;parse 70", "nginx;main;serve 50"}));
  json capped = s.Call("flamegraph", {{"limit", 1}});
  CHECK(capped["structuredContent"]["shown_weight"] == 130);
  CHECK(capped["content"][0]["text"].get<std::string>().find("TRUNCATED: showing 1 of 3 stacks (52.0% of the weight)") !=
        std::string::npos);

  // The old range against the new, python3 only: hash grew from 40 % to
  // 90 %, parse shrank from 60 % to 10 %, both far beyond noise.
  const json python = {{"process.executable.name", "python3"}};
  json diff = s.Call("diff", {{"base", {{"to", "2026-11-29T00:00:00Z"}}},
                              {"target", {{"last", "1h"}}},
                              {"filters", python}})["structuredContent"];
  CHECK(diff["base"]["total"] == 100);
  CHECK(diff["target"]["total"] == 100);
  REQUIRE(diff["grew"].size() == 2);  // hash and work
  CHECK(diff["grew"][0]["function"] == "hash");
  CHECK(diff["grew"][0]["change"].get<double>() == doctest::Approx(0.5));
  CHECK(diff["grew"][0]["significant"] == true);
  REQUIRE(diff["shrank"].size() == 1);
  CHECK(diff["shrank"][0]["function"] == "parse");
  CHECK(diff["shrank"][0]["z"].get<double>() < -3.29);
  json err = s.Call("diff", {{"base", {{"sample_type", "cpu"}}}, {"target", json::object()}}, true);
  CHECK(err["content"][0]["text"].get<std::string>().find("sample_type is shared") != std::string::npos);
}

TEST_CASE("mcp: answers include what a running kiln wrote after the server opened the store") {
  testing::TempDir dir;
  FillStore(dir.path);
  Session s(dir.path);
  CHECK(s.Call("top_functions")["structuredContent"]["total"] == 250);
  {
    // As kiln would: the store open for writing while the server reads.
    auto writer = storage::Store::Open(dir.path, storage::Store::Mode::kReadWrite);
    REQUIRE(writer.ok());
    FoldedFixtureOptions late{.first_time_ns = kNew + 1'000'000'000};
    REQUIRE((*writer)->Write(BatchFromFolded("main;late 7", late)).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    json after = s.Call("top_functions")["structuredContent"];
    CHECK(after["total"] == 257);
    CHECK((*Row(after["functions"], "late"))["self"] == 7);
  }
}

TEST_CASE("mcp: a capture file, and a diff of two captures") {
  testing::TempDir dir;
  const std::string before = dir.path + "/before.folded", after = dir.path + "/after.folded";
  std::ofstream(before) << "main;a 30\nmain;b 70\n";
  std::ofstream(after) << "main;a 80\nmain;b 20\n";
  auto server = McpServer::Create({.data_dir = "", .input = before, .version = "test"});
  REQUIRE(server.ok());
  auto call = [&](const std::string& tool, json args) {
    json m = {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/call"}, {"params", {{"name", tool}, {"arguments", args}}}};
    return json::parse(*(*server)->HandleLine(m.dump()))["result"];
  };
  json top = call("top_functions", json::object())["structuredContent"];
  CHECK(top["total"] == 100);
  CHECK(top["functions"][0]["function"] == "b");
  json diff = call("diff", {{"base", json::object()}, {"target", {{"input", after}}}})["structuredContent"];
  REQUIRE(diff["grew"].size() == 1);
  CHECK(diff["grew"][0]["function"] == "a");
  CHECK(diff["grew"][0]["target_total"] == 80);
  json missing = call("diff", {{"base", json::object()}, {"target", {{"input", dir.path + "/nope.pb"}}}});
  CHECK(missing["isError"] == true);
  CHECK(McpServer::Create({.data_dir = "", .input = dir.path + "/nope.pb", .version = ""}).status().message().find(
            "nope.pb") != std::string_view::npos);
}

}  // namespace kiln::app
