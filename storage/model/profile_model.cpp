#include "storage/model/profile_model.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>

namespace kiln::storage {

namespace {
// Indexed by FrameType; these are the OTLP `profile.frame.type` values.
constexpr std::array<std::string_view, kFrameTypeCount> kFrameTypeNames = {
    "unknown", "native", "kernel", "go",     "cpython",     "php", "jvm", "ruby",
    "perl",    "v8js",   "dotnet", "beam",   "luajit", "abort-marker", "jit",
};
}  // namespace

FrameType FrameTypeOfSourceFile(std::string_view path) {
  struct Ext {
    std::string_view ext;
    FrameType type;
  };
  static constexpr Ext kExts[] = {
      {".go", FrameType::kGo},      {".py", FrameType::kPython}, {".pyx", FrameType::kPython},
      {".java", FrameType::kJvm},   {".kt", FrameType::kJvm},    {".scala", FrameType::kJvm},
      {".clj", FrameType::kJvm},    {".rb", FrameType::kRuby},   {".php", FrameType::kPhp},
      {".js", FrameType::kV8js},    {".mjs", FrameType::kV8js},  {".cjs", FrameType::kV8js},
      {".ts", FrameType::kV8js},    {".pl", FrameType::kPerl},   {".pm", FrameType::kPerl},
      {".cs", FrameType::kDotnet},  {".fs", FrameType::kDotnet}, {".erl", FrameType::kBeam},
      {".ex", FrameType::kBeam},    {".exs", FrameType::kBeam},  {".lua", FrameType::kLuajit},
  };
  const size_t dot = path.rfind('.');
  if (dot == std::string_view::npos || path.find('/', dot) != std::string_view::npos) return FrameType::kUnknown;
  const std::string_view ext = path.substr(dot);
  for (const Ext& e : kExts) {
    if (e.ext == ext) return e.type;
  }
  return FrameType::kUnknown;
}

FrameType FrameTypeOfLabel(std::string_view label) {
  // "name (path/file.ext:line)" or "path/file.ext:line": the file is what
  // stands before the last ':' that is followed by a line number.
  for (size_t colon = label.rfind(':'); colon != std::string_view::npos && colon > 0;
       colon = label.rfind(':', colon - 1)) {
    size_t d = colon + 1;
    while (d < label.size() && label[d] >= '0' && label[d] <= '9') ++d;
    if (d == colon + 1) continue;
    size_t start = label.find_last_of(" (", colon - 1);
    start = start == std::string_view::npos ? 0 : start + 1;
    return FrameTypeOfSourceFile(label.substr(start, colon - start));
  }
  return FrameType::kUnknown;
}

std::string_view FrameTypeName(FrameType type) {
  auto i = static_cast<size_t>(type);
  return i < kFrameTypeNames.size() ? kFrameTypeNames[i] : "unknown";
}

FrameType FrameTypeFromName(std::string_view name) {
  if (name == "phpjit") return FrameType::kPhp;
  if (name == "python") return FrameType::kPython;
  for (size_t i = 0; i < kFrameTypeNames.size(); ++i) {
    if (kFrameTypeNames[i] == name) return static_cast<FrameType>(i);
  }
  return FrameType::kUnknown;
}

std::string_view ProfileDictionary::AttributeValue(uint32_t set, std::string_view key) const {
  for (const Attribute& a : AttributeSet(set)) {
    if (strings[a.key] == key) return strings[a.value];
  }
  return {};
}

uint32_t ProfileDictionary::AddString(std::string_view s) {
  if (s.empty()) return 0;
  strings.emplace_back(s);
  return static_cast<uint32_t>(strings.size() - 1);
}

uint32_t ProfileDictionary::AddStack(const std::vector<uint32_t>& root_first_frames) {
  stack_frames.insert(stack_frames.end(), root_first_frames.begin(), root_first_frames.end());
  stack_offsets.push_back(static_cast<uint32_t>(stack_frames.size()));
  return static_cast<uint32_t>(StackCount() - 1);
}

uint32_t ProfileDictionary::AddAttributeSet(std::vector<Attribute> attrs) {
  // Stable sort keeps insertion order among equal keys, so the last one is
  // the value that wins.
  std::stable_sort(attrs.begin(), attrs.end(), [this](const Attribute& a, const Attribute& b) {
    return strings[a.key] < strings[b.key];
  });
  std::vector<Attribute> unique;
  unique.reserve(attrs.size());
  for (const Attribute& a : attrs) {
    if (!unique.empty() && strings[unique.back().key] == strings[a.key]) {
      unique.back() = a;
    } else {
      unique.push_back(a);
    }
  }
  attributes.insert(attributes.end(), unique.begin(), unique.end());
  attribute_set_offsets.push_back(static_cast<uint32_t>(attributes.size()));
  return static_cast<uint32_t>(AttributeSetCount() - 1);
}

uint32_t ProfileDictionary::AddSampleType(const SampleTypeInfo& info) {
  if (std::optional<uint32_t> i = SampleTypeIndex(info.type)) {
    if (info.period != 0 || !info.period_type.empty()) sample_types[*i] = info;
    return *i;
  }
  sample_types.push_back(info);
  return static_cast<uint32_t>(sample_types.size() - 1);
}

std::optional<uint32_t> ProfileDictionary::SampleTypeIndex(const SampleType& type) const {
  for (size_t i = 0; i < sample_types.size(); ++i) {
    if (sample_types[i].type == type) return static_cast<uint32_t>(i);
  }
  return std::nullopt;
}

std::string FrameLabel(const ProfileDictionary& dict, uint32_t frame_index) {
  const Frame& frame = dict.frames[frame_index];
  if (frame.function != 0) return dict.strings[frame.function];
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(frame.address));
  if (frame.executable == 0) return hex;
  std::string_view file = dict.strings[dict.executables[frame.executable].file_name];
  size_t slash = file.find_last_of('/');
  if (slash != std::string_view::npos) file.remove_prefix(slash + 1);
  if (file.empty()) return hex;
  std::string label(file);
  label += '+';
  label += hex;
  return label;
}

bool IsLoopbackAddress(std::string_view host) {
  return host.starts_with("127.") || host == "::1" || host.starts_with("::ffff:127.");
}

namespace {

// The length of the valid UTF-8 sequence at `p` (of `n` bytes), or 0.
size_t Utf8SequenceLength(const unsigned char* p, size_t n) {
  const unsigned char c = p[0];
  if (c < 0x80) return 1;
  size_t len = 0;
  uint32_t cp = 0;
  if ((c & 0xE0) == 0xC0) {
    len = 2;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    len = 3;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    len = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (n < len) return 0;
  for (size_t i = 1; i < len; ++i) {
    if ((p[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (p[i] & 0x3F);
  }
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

}  // namespace

std::string ToValidUtf8(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  std::string out;
  size_t i = 0;
  // Valid text (nearly always) is copied as it is.
  while (i < text.size()) {
    const size_t len = Utf8SequenceLength(p + i, text.size() - i);
    if (len == 0) break;
    i += len;
  }
  if (i == text.size()) return std::string(text);
  out.assign(text.data(), i);
  while (i < text.size()) {
    const size_t len = Utf8SequenceLength(p + i, text.size() - i);
    if (len == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    } else {
      out.append(text.data() + i, len);
      i += len;
    }
  }
  return out;
}

int64_t UnixNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace kiln::storage
