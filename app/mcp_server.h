// `kiln mcp`: the Model Context Protocol over stdio, so a coding assistant
// can ask a store or a capture what is hot, who calls it and what changed.
//
// Transport: one JSON-RPC 2.0 message per line on stdin, one answer per
// line on stdout (MCP's stdio transport); nothing else is written to
// stdout. Every tool is read-only: a store directory is opened read-only
// (it may be the store a running kiln writes) and opened again for a call
// when its last opening is older than a second, so answers include what
// has arrived since. A capture file is imported once into a temporary
// store (capture_store_dirs.h), removed when the server ends.
//
// Threads: one; HandleLine is called for each line in order.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kiln::app {

struct McpOptions {
  std::string data_dir;  // the store to answer from, or
  std::string input;     // a capture file (OTLP, pprof, folded, perf script)
  std::string version;   // kiln's, for the initialize answer
};

class McpTools;

class McpServer {
 public:
  // Fails when the store cannot be opened or the capture not imported.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<McpServer>> Create(const McpOptions& options);
  ~McpServer();

  // One message in; the answer to write as one line, or nothing (a
  // notification, or a response from the client).
  std::optional<std::string> HandleLine(std::string_view line);

  // What relative times ("last": "15m", "now-1h") count back from for a
  // store: the clock (Unix ns). Tests set a fixed one.
  void SetClock(std::function<int64_t()> now_ns);

 private:
  explicit McpServer(std::unique_ptr<McpTools> tools, std::string version);
  std::unique_ptr<McpTools> tools_;
  std::string version_;
};

// Reads stdin until it ends, answering on stdout; the exit code.
int RunMcp(const McpOptions& options);

}  // namespace kiln::app
