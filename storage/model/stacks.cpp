#include "storage/model/stacks.h"

namespace kiln::storage {

uint32_t FunctionTable::Intern(std::string_view name, FrameType type, uint32_t frame) {
  auto [it, added] = ids_.try_emplace(std::pair{std::string(name), type}, static_cast<uint32_t>(functions_.size()));
  if (added) functions_.push_back({std::string(name), type, frame});
  return it->second;
}

void Stacks::Add(const uint32_t* begin, const uint32_t* end, uint32_t attribute_set, int64_t weight,
                 uint64_t event_count) {
  elements.insert(elements.end(), begin, end);
  offsets.push_back(static_cast<uint32_t>(elements.size()));
  attribute_sets.push_back(attribute_set);
  weights.push_back(weight);
  events.push_back(event_count);
}

Stacks Stacks::EmptyLike() const {
  Stacks out;
  out.slice = slice;
  out.functions = functions;
  return out;
}

Stacks StacksOf(std::shared_ptr<const ProfileSlice> slice, bool show_inline) {
  Stacks out;
  auto functions = std::make_shared<FunctionTable>();
  out.slice = slice;
  if (!slice) {
    out.functions = std::move(functions);
    return out;
  }
  const ProfileDictionary& dict = slice->dict;
  // Function ids per slice frame, found once each.
  constexpr uint32_t kUnset = UINT32_MAX;
  std::vector<uint32_t> function_of(dict.frames.size(), kUnset);
  std::vector<uint32_t> stack;
  out.offsets.reserve(slice->weights.size() + 1);
  out.attribute_sets.reserve(slice->weights.size());
  out.weights.reserve(slice->weights.size());
  out.events.reserve(slice->weights.size());
  for (const StackWeight& w : slice->weights) {
    stack.clear();
    for (uint32_t f : dict.Stack(w.stack)) {
      const Frame& frame = dict.frames[f];
      if (!show_inline && frame.inlined) continue;
      uint32_t& id = function_of[f];
      if (id == kUnset) id = functions->Intern(FrameLabel(dict, f), frame.type, f);
      stack.push_back(id);
    }
    out.Add(stack.data(), stack.data() + stack.size(), w.attribute_set, w.weight, w.events);
  }
  out.functions = std::move(functions);
  return out;
}

}  // namespace kiln::storage
