#include "ingest/capture/batch_builder.h"

#include <algorithm>

namespace kiln::capture {

using storage::Attribute;

BatchBuilder::BatchBuilder(storage::ProfileBatch* batch) : batch_(batch) {
  // Index 0 of every table is the empty element; make the maps know it.
  auto& d = batch_->dict;
  for (uint32_t i = 0; i < d.strings.size(); ++i) strings_.try_emplace(d.strings[i], i);
  for (uint32_t i = 0; i < d.executables.size(); ++i)
    executables_.try_emplace(ExecutableKey{d.executables[i]}, i);
  for (uint32_t i = 0; i < d.frames.size(); ++i) frames_.try_emplace(FrameKey{d.frames[i]}, i);
  for (uint32_t i = 0; i < d.StackCount(); ++i) {
    auto s = d.Stack(i);
    stacks_.try_emplace(std::string(reinterpret_cast<const char*>(s.begin()), s.size() * 4), i);
  }
  for (uint32_t i = 0; i < d.AttributeSetCount(); ++i) {
    auto s = d.AttributeSet(i);
    attr_sets_.try_emplace(
        std::string(reinterpret_cast<const char*>(s.begin()), s.size() * sizeof(Attribute)), i);
  }
}

namespace {

// Length of the well-formed UTF-8 sequence at s[i], or 0.
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  uint8_t c = b(i);
  if (c < 0x80) return 1;
  size_t n = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  }
  uint32_t cp = n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 0x07;
  for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (b(i + k) & 0x3F);
  // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
  if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
      (cp >= 0xD800 && cp < 0xE000) || cp > 0x10FFFF) {
    return 0;
  }
  return n;
}

// Every string Kiln stores is UTF-8 (OTLP strings must be, and the UI draws
// them): invalid bytes become U+FFFD.
std::string ValidUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t n = Utf8SequenceLength(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

bool IsAscii(std::string_view s) {
  for (char c : s) {
    if (static_cast<uint8_t>(c) >= 0x80) return false;
  }
  return true;
}

}  // namespace

uint32_t BatchBuilder::String(std::string_view s) {
  auto it = strings_.find(absl::string_view(s.data(), s.size()));
  if (it != strings_.end()) return it->second;
  auto& v = batch_->dict.strings;
  uint32_t id = static_cast<uint32_t>(v.size());
  if (IsAscii(s)) {
    v.emplace_back(s);
  } else {
    v.push_back(ValidUtf8(s));
  }
  strings_.emplace(std::string(s), id);
  return id;
}

uint32_t BatchBuilder::Executable(const storage::Executable& executable) {
  auto [it, inserted] = executables_.try_emplace(ExecutableKey{executable},
                                                 static_cast<uint32_t>(batch_->dict.executables.size()));
  if (inserted) batch_->dict.executables.push_back(executable);
  return it->second;
}

uint32_t BatchBuilder::Frame(const storage::Frame& frame) {
  auto [it, inserted] =
      frames_.try_emplace(FrameKey{frame}, static_cast<uint32_t>(batch_->dict.frames.size()));
  if (inserted) batch_->dict.frames.push_back(frame);
  return it->second;
}

uint32_t BatchBuilder::Stack(const uint32_t* frames, size_t count) {
  std::string_view key(reinterpret_cast<const char*>(frames), count * sizeof(uint32_t));
  auto it = stacks_.find(absl::string_view(key.data(), key.size()));
  if (it != stacks_.end()) return it->second;
  auto& d = batch_->dict;
  uint32_t id = static_cast<uint32_t>(d.StackCount());
  d.stack_frames.insert(d.stack_frames.end(), frames, frames + count);
  d.stack_offsets.push_back(static_cast<uint32_t>(d.stack_frames.size()));
  stacks_.emplace(std::string(key), id);
  return id;
}

uint32_t BatchBuilder::AppendStack(const uint32_t* frames, size_t count) {
  auto& d = batch_->dict;
  uint32_t id = static_cast<uint32_t>(d.StackCount());
  d.stack_frames.insert(d.stack_frames.end(), frames, frames + count);
  d.stack_offsets.push_back(static_cast<uint32_t>(d.stack_frames.size()));
  return id;
}

uint32_t BatchBuilder::AttributeSet(std::vector<Attribute> attributes) {
  auto& d = batch_->dict;
  // Sort by key string; stable so that "last value wins" can keep the last.
  std::stable_sort(attributes.begin(), attributes.end(), [&](const Attribute& a, const Attribute& b) {
    return d.strings[a.key] < d.strings[b.key];
  });
  std::vector<Attribute> unique;
  unique.reserve(attributes.size());
  for (const Attribute& a : attributes) {
    if (!unique.empty() && unique.back().key == a.key) {
      unique.back() = a;
    } else {
      unique.push_back(a);
    }
  }
  std::string_view key(reinterpret_cast<const char*>(unique.data()), unique.size() * sizeof(Attribute));
  auto it = attr_sets_.find(absl::string_view(key.data(), key.size()));
  if (it != attr_sets_.end()) return it->second;
  uint32_t id = static_cast<uint32_t>(d.AttributeSetCount());
  d.attributes.insert(d.attributes.end(), unique.begin(), unique.end());
  d.attribute_set_offsets.push_back(static_cast<uint32_t>(d.attributes.size()));
  attr_sets_.emplace(std::string(key), id);
  return id;
}

uint32_t BatchBuilder::AttributeSet(std::vector<std::pair<std::string, std::string>> key_values) {
  std::vector<Attribute> attributes;
  attributes.reserve(key_values.size());
  for (auto& [k, v] : key_values) attributes.push_back({String(k), String(v)});
  return AttributeSet(std::move(attributes));
}

}  // namespace kiln::capture
