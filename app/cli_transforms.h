// The transform flags of `kiln export` and `kiln diff` (--invert,
// --focus=FN, ...): one option per kind, applied in command-line order.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "storage/model/transforms.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace kiln::app {

class TransformFlags {
 public:
  // Adds the flags to `command`.
  explicit TransformFlags(CLI::App* command);
  // After parsing: the transforms in the order they were given.
  absl::StatusOr<std::vector<storage::Transform>> Collect() const;
  // The same into *out; false, with "kiln COMMAND: why" on stderr, when one
  // does not parse.
  bool CollectInto(std::vector<storage::Transform>* out) const;

 private:
  void Add(storage::Transform::Kind kind, bool takes_value, const std::string& help);

  CLI::App* command_;
  std::vector<std::pair<const CLI::Option*, std::string>> options_;
  const CLI::Option* option_for_callees_ = nullptr;
};

}  // namespace kiln::app
