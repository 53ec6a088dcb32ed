#include "app/cli_transforms.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>

namespace kiln::app {

TransformFlags::TransformFlags(CLI::App* command) : command_(command) {
  using Kind = storage::Transform::Kind;
  Add(Kind::kInvert, false, "Reverse each stack: leaf first (a bottom-up tree)");
  Add(Kind::kFocusFunction, true, "Keep stacks through FN, each starting at FN's outermost call");
  option_for_callees_ = command->add_option("--callees-of", "The same as --focus (FN's callees, merged)")
                            ->allow_extra_args(false)
                            ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  Add(Kind::kFocusSubtree, true, "Keep stacks starting with the path A;B;C, each starting at C");
  Add(Kind::kCallersOf, true, "Keep stacks through FN, each inverted from FN's innermost call up to the root");
  Add(Kind::kMerge, true, "Remove FN's frames; their weight goes to the caller");
  Add(Kind::kHide, true, "Remove frames whose name matches REGEX (RE2); the weight stays");
  Add(Kind::kCollapseRecursion, false,
      "Consecutive repeats of a frame become one; with =FN, all of FN's recursion (also indirect)");
  Add(Kind::kCollapseDirectRecursion, true, "Consecutive repeats of FN become one");
  Add(Kind::kCollapseLibrary, true, "Consecutive frames of executable EXE (file name) become one frame");
  Add(Kind::kDropKernel, false, "Remove kernel frames");
}

absl::StatusOr<std::vector<storage::Transform>> TransformFlags::Collect() const {
  std::vector<storage::Transform> out;
  std::map<const CLI::Option*, size_t> seen;
  for (const CLI::Option* o : command_->parse_order()) {
    std::string flag;
    for (const auto& [option, name] : options_) {
      if (option == o) flag = name;
    }
    if (o == option_for_callees_) flag = "callees-of";
    if (flag.empty()) continue;
    const size_t k = seen[o]++;
    const std::vector<std::string>& values = o->results();
    std::string spec = flag;
    if (k < values.size() && !values[k].empty() && values[k] != "true") spec += "=" + values[k];
    absl::StatusOr<storage::Transform> t = storage::ParseTransform(spec);
    if (!t.ok()) return t.status();
    out.push_back(*std::move(t));
  }
  return out;
}

bool TransformFlags::CollectInto(std::vector<storage::Transform>* out) const {
  absl::StatusOr<std::vector<storage::Transform>> transforms = Collect();
  if (!transforms.ok()) {
    std::fprintf(stderr, "kiln %s: %s\n", command_->get_name().c_str(), std::string(transforms.status().message()).c_str());
    return false;
  }
  *out = *std::move(transforms);
  return true;
}

void TransformFlags::Add(storage::Transform::Kind kind, bool takes_value, const std::string& help) {
  const std::string name(storage::TransformFlag(kind));
  // One value per use (never the positional arguments after it), every
  // use kept: --hide a --hide b hides both.
  CLI::Option* o = command_->add_option("--" + name, help)
                       ->allow_extra_args(false)
                       ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  if (!takes_value) o->expected(0, 1);
  options_.emplace_back(o, name);
}

}  // namespace kiln::app
