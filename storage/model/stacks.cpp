#include "storage/model/stacks.h"

#include "absl/hash/hash.h"

namespace kiln::storage {

uint32_t FunctionTable::Intern(std::string_view name, FrameType type, std::string_view executable,
                              uint32_t frame) {
  auto [it, added] = ids_.try_emplace(std::tuple{std::string(name), type, std::string(executable)},
                                      static_cast<uint32_t>(functions_.size()));
  if (added) functions_.push_back({std::string(name), type, std::string(executable), frame});
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
      if (id == kUnset) {
        id = functions->Intern(FrameLabel(dict, f), frame.type, dict.strings[dict.executables[frame.executable].file_name],
                               f);
      }
      stack.push_back(id);
    }
    out.Add(stack.data(), stack.data() + stack.size(), w.attribute_set, w.weight, w.events);
  }
  out.functions = std::move(functions);
  return out;
}

std::shared_ptr<const ProfileSlice> SliceOfStacks(const Stacks& stacks) {
  auto out = std::make_shared<ProfileSlice>();
  if (!stacks.slice) return out;
  const ProfileSlice& in = *stacks.slice;
  out->dict = in.dict;
  ProfileDictionary& d = out->dict;
  d.frames.resize(1);
  d.stack_offsets = {0, 0};
  d.stack_frames.clear();
  out->sample_type = in.sample_type;
  out->from_ns = in.from_ns;
  out->to_ns = in.to_ns;
  out->first_sample_ns = in.first_sample_ns;
  out->last_sample_ns = in.last_sample_ns;
  constexpr uint32_t kUnset = UINT32_MAX;
  std::vector<uint32_t> frame_of(stacks.functions->size(), kUnset);
  absl::flat_hash_map<std::vector<uint32_t>, uint32_t> stack_ids;
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>, size_t> weight_index;
  std::vector<uint32_t> frames;
  for (size_t i = 0; i < stacks.size(); ++i) {
    frames.clear();
    auto [begin, end] = stacks.Stack(i);
    for (const uint32_t* p = begin; p != end; ++p) {
      uint32_t& f = frame_of[*p];
      if (f == kUnset) {
        const StackFunction& fn = (*stacks.functions)[*p];
        Frame frame;
        if (fn.frame != 0) {
          frame = in.dict.frames[fn.frame];
          frame.inlined = false;  // a function of its own now
        } else {
          frame.function = d.AddString(fn.name);
          frame.type = fn.type;
        }
        f = static_cast<uint32_t>(d.frames.size());
        d.frames.push_back(frame);
      }
      frames.push_back(f);
    }
    auto [it, added] = stack_ids.try_emplace(frames, 0);
    if (added) it->second = frames.empty() ? 0 : d.AddStack(frames);
    auto [w, new_weight] = weight_index.try_emplace(std::pair{it->second, stacks.attribute_sets[i]}, out->weights.size());
    if (new_weight) out->weights.push_back({it->second, stacks.attribute_sets[i], 0, 0});
    out->weights[w->second].weight += stacks.weights[i];
    out->weights[w->second].events += stacks.events[i];
    out->total_weight += stacks.weights[i];
    out->total_events += stacks.events[i];
  }
  return out;
}

}  // namespace kiln::storage
