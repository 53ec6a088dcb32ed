// The tools `kiln mcp` offers (mcp_server.h): each a read-only question to
// the store, answered as short text for the assistant plus the same facts
// as structured JSON. Weights are in the sample type's unit; every list
// says when it was cut short.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "ingest/capture/capture_store_dirs.h"
#include "storage/store.h"

namespace kiln::app {

class McpTools {
 public:
  // What a tool reads: a store (the main one or a capture's), opened by Call.
  struct Source {
    storage::Store* store = nullptr;
    std::string name;   // the store directory or capture file
    bool capture = false;
    int64_t now_ns = 0;  // what relative times count back from
    std::optional<storage::SampleType> default_type;  // a capture's own (pprof's default_sample_type)
  };

  // A store directory (opened read-only, again for a call when the last
  // opening is older than a second) or, with `input`, a capture imported
  // into a temporary store.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<McpTools>> Open(const std::string& data_dir,
                                                                      const std::string& input);

  // tools/list's `tools`: name, description and input schema of each.
  nlohmann::json List() const;
  // Whether `name` is a tool.
  bool Has(const std::string& name) const;
  // tools/call's result: {content: [{type: text, text}], structuredContent,
  // isError}. Bad arguments are a result with isError (the assistant reads
  // why), not a protocol error.
  nlohmann::json Call(const std::string& name, const nlohmann::json& arguments);

  void SetClock(std::function<int64_t()> now_ns) { clock_ = std::move(now_ns); }

 private:
  McpTools() = default;
  // The main source, reopened when stale.
  absl::StatusOr<Source> Main();
  // A capture file named by a diff side, imported once.
  absl::StatusOr<Source> Capture(const std::string& path);

  std::string data_dir_;
  std::unique_ptr<storage::Store> store_;
  int64_t store_opened_ns_ = 0;  // steady clock
  std::string main_capture_;     // when the main source is a capture
  struct CaptureStore {
    std::unique_ptr<capture::TemporaryStore> store;
    storage::SampleType default_type;
  };
  std::map<std::string, CaptureStore> captures_;
  std::function<int64_t()> clock_;
};

}  // namespace kiln::app
