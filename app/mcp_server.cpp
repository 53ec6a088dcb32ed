#include "app/mcp_server.h"

#include <cstdio>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "app/mcp_tools.h"

namespace kiln::app {

namespace {

using json = nlohmann::json;

// Protocol revisions this server speaks; it answers a client's own when it
// is one of them, else the newest. Tools-only servers behave the same in
// all of them.
constexpr const char* kProtocolVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

json Error(const json& id, int code, std::string message) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", std::move(message)}}}};
}

json Result(const json& id, json result) { return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}}; }

constexpr char kInstructions[] =
    "Kiln holds CPU (and off-CPU, allocation...) profiles: sampled call stacks with weights. Start with "
    "sample_types (what is measured, which span of time), then top_functions; hot_paths and source_lines "
    "explain one function; diff compares two time ranges or two capture files. Weights are in the sample "
    "type's unit; shares are of the selection's total. Times: RFC 3339, Unix ns, now-15m, or last: 15m.";

}  // namespace

absl::StatusOr<std::unique_ptr<McpServer>> McpServer::Create(const McpOptions& options) {
  absl::StatusOr<std::unique_ptr<McpTools>> tools = McpTools::Open(options.data_dir, options.input);
  if (!tools.ok()) return tools.status();
  return std::unique_ptr<McpServer>(new McpServer(*std::move(tools), options.version));
}

McpServer::McpServer(std::unique_ptr<McpTools> tools, std::string version)
    : tools_(std::move(tools)), version_(std::move(version)) {}

McpServer::~McpServer() = default;

void McpServer::SetClock(std::function<int64_t()> now_ns) { tools_->SetClock(std::move(now_ns)); }

std::optional<std::string> McpServer::HandleLine(std::string_view line) {
  json message = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (message.is_discarded()) return Error(nullptr, -32700, "parse error: not JSON").dump();
  if (!message.is_object() || message.value("jsonrpc", "") != "2.0" || !message.contains("method") ||
      !message["method"].is_string()) {
    // A response to a request of ours (we send none) or not JSON-RPC.
    if (message.is_object() && (message.contains("result") || message.contains("error"))) return std::nullopt;
    return Error(message.is_object() && message.contains("id") ? message["id"] : json(nullptr), -32600,
                 "invalid request: want a JSON-RPC 2.0 object with a method")
        .dump();
  }
  const std::string method = message["method"];
  if (!message.contains("id")) return std::nullopt;  // notifications: initialized, cancelled
  const json id = message["id"];
  const json params = message.value("params", json::object());
  if (method == "initialize") {
    std::string version = kProtocolVersions[0];
    if (params.contains("protocolVersion") && params["protocolVersion"].is_string()) {
      for (const char* v : kProtocolVersions) {
        if (params["protocolVersion"] == v) version = v;
      }
    }
    return Result(id, {{"protocolVersion", version},
                       {"capabilities", {{"tools", {{"listChanged", false}}}}},
                       {"serverInfo", {{"name", "kiln"}, {"title", "Kiln profiles"}, {"version", version_}}},
                       {"instructions", kInstructions}})
        .dump();
  }
  if (method == "ping") return Result(id, json::object()).dump();
  if (method == "tools/list") return Result(id, {{"tools", tools_->List()}}).dump();
  if (method == "tools/call") {
    if (!params.is_object() || !params.contains("name") || !params["name"].is_string()) {
      return Error(id, -32602, "tools/call wants params.name").dump();
    }
    const std::string name = params["name"];
    if (!tools_->Has(name)) return Error(id, -32602, absl::StrCat("unknown tool: ", name)).dump();
    return Result(id, tools_->Call(name, params.value("arguments", json::object()))).dump();
  }
  return Error(id, -32601, absl::StrCat("method not found: ", method)).dump();
}

int RunMcp(const McpOptions& options) {
  absl::StatusOr<std::unique_ptr<McpServer>> server = McpServer::Create(options);
  if (!server.ok()) {
    std::cerr << "kiln mcp: " << server.status().message() << "\n";
    return 1;
  }
  std::cerr << "kiln mcp: serving " << (options.input.empty() ? options.data_dir : options.input)
            << " over stdio (MCP); end with EOF\n";
  std::ios::sync_with_stdio(false);
  for (std::string line; std::getline(std::cin, line);) {
    if (line.empty() || line == "\r") continue;
    if (std::optional<std::string> answer = (*server)->HandleLine(line)) {
      std::cout << *answer << '\n';
      std::cout.flush();
    }
  }
  return 0;
}

}  // namespace kiln::app
