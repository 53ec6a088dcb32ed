// `kiln mcp`: the Model Context Protocol over stdio (app/mcp_server.h).
#include <CLI/CLI.hpp>
#include <memory>

#include "app/cli.h"
#include "app/mcp_server.h"
#include "kiln_version.h"

namespace kiln::app {

Subcommand AddMcpCommand(CLI::App& cli, const std::string& default_data_dir) {
  auto o = std::make_shared<McpOptions>();
  o->data_dir = default_data_dir;
  o->version = kVersion;
  CLI::App* cmd = cli.add_subcommand(
      "mcp", "Answer a coding assistant's questions about a store or capture (Model Context Protocol over stdio)");
  cmd->add_option("--data-dir", o->data_dir, "Store directory (read-only; works while kiln runs)")
      ->capture_default_str();
  cmd->add_option("--input", o->input, "A capture file instead of a store");
  return {cmd, [o] { return RunMcp(*o); }};
}

}  // namespace kiln::app
