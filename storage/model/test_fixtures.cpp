#include "storage/model/test_fixtures.h"

#include <cstdlib>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "storage/model/query.h"

namespace kiln::storage::testing {

ProfileBatch BatchFromFolded(std::string_view text, const FoldedFixtureOptions& options) {
  ProfileBatch batch;
  ProfileDictionary& d = batch.dict;
  std::vector<Attribute> attrs;
  if (!options.process.empty()) {
    attrs.push_back({d.AddString(attr::kProcessExecutableName), d.AddString(options.process)});
  }
  if (!options.thread.empty()) {
    attrs.push_back({d.AddString(attr::kThreadName), d.AddString(options.thread)});
  }
  for (const auto& [key, value] : options.attributes) attrs.push_back({d.AddString(key), d.AddString(value)});
  uint32_t set = attrs.empty() ? 0 : d.AddAttributeSet(attrs);
  const uint32_t sample_type = d.AddSampleType(options.sample_type);
  int64_t t = options.first_time_ns;
  std::map<std::string, uint32_t> executables;
  for (absl::string_view line :
       absl::StrSplit(absl::string_view(text.data(), text.size()), '\n', absl::SkipWhitespace())) {
    size_t space = line.find_last_of(' ');
    // absl::string_view (Debian builds abseil without std::string_view).
    int64_t count = 0;
    if (space == std::string_view::npos || !absl::SimpleAtoi(line.substr(space + 1), &count)) {
      std::abort();  // a broken fixture is a broken test
    }
    std::vector<uint32_t> frames;
    for (absl::string_view part : absl::StrSplit(line.substr(0, space), ';')) {
      std::string_view name(part.data(), part.size());
      Frame f;
      f.type = FrameType::kNative;
      if (name.size() > 2 && name.substr(name.size() - 2) == "@k") {
        f.type = FrameType::kKernel;
        name.remove_suffix(2);
      } else if (name.size() > 2 && name.substr(name.size() - 2) == "@i") {
        f.inlined = true;
        name.remove_suffix(2);
      }
      if (size_t plus = name.find("+0x"); plus != std::string_view::npos) {
        std::string exe(name.substr(0, plus));
        auto [it, added] = executables.try_emplace(exe, static_cast<uint32_t>(d.executables.size()));
        if (added) {
          Executable e;
          e.file_name = d.AddString(exe);
          d.executables.push_back(e);
        }
        f.executable = it->second;
        f.address = std::strtoull(std::string(name.substr(plus + 3)).c_str(), nullptr, 16);
      } else {
        f.function = d.AddString(name);
      }
      d.frames.push_back(f);
      frames.push_back(static_cast<uint32_t>(d.frames.size() - 1));
    }
    uint32_t stack = d.AddStack(frames);
    for (int64_t i = 0; i < count; ++i) {
      batch.samples.push_back({t, stack, set, 0, sample_type, options.value});
      t += 1'000'000;
    }
  }
  return batch;
}

ProfileBatch OneNativeSample(const ExecutableNames& executable, uint64_t address,
                             const std::vector<std::pair<std::string, std::string>>& attributes) {
  ProfileBatch b;
  Executable e;
  e.file_name = b.dict.AddString(executable.file_name);
  e.htlhash = b.dict.AddString(executable.htlhash);
  e.gnu_build_id = b.dict.AddString(executable.gnu_build_id);
  b.dict.executables.push_back(e);
  Frame frame;
  frame.executable = static_cast<uint32_t>(b.dict.executables.size() - 1);
  frame.address = address;
  frame.type = FrameType::kNative;
  b.dict.frames.push_back(frame);
  const uint32_t stack = b.dict.AddStack({static_cast<uint32_t>(b.dict.frames.size() - 1)});
  std::vector<Attribute> attrs;
  for (const auto& [key, value] : attributes)
    attrs.push_back({b.dict.AddString(key), b.dict.AddString(value)});
  const uint32_t set = attrs.empty() ? 0 : b.dict.AddAttributeSet(attrs);
  b.samples.push_back({1'760'000'000'000'000'000, stack, set, 0, 0, 1});
  return b;
}

void AppendBatch(ProfileBatch* batch, const ProfileBatch& more) {
  ProfileDictionary& d = batch->dict;
  const ProfileDictionary& m = more.dict;
  auto s0 = static_cast<uint32_t>(d.strings.size()), e0 = static_cast<uint32_t>(d.executables.size()),
       f0 = static_cast<uint32_t>(d.frames.size()), k0 = static_cast<uint32_t>(d.StackCount()),
       a0 = static_cast<uint32_t>(d.AttributeSetCount()), l0 = static_cast<uint32_t>(d.links.size());
  auto str = [&](uint32_t i) { return i == 0 ? 0 : i + s0; };
  d.strings.insert(d.strings.end(), m.strings.begin(), m.strings.end());
  for (const Executable& e : m.executables) {
    d.executables.push_back({str(e.file_name), str(e.htlhash), str(e.gnu_build_id), str(e.go_build_id)});
  }
  for (const Frame& f : m.frames) {
    Frame g = f;
    g.function = str(f.function);
    g.file = str(f.file);
    g.executable = f.executable == 0 ? 0 : f.executable + e0;
    d.frames.push_back(g);
  }
  for (uint32_t i = 0; i < m.StackCount(); ++i) {
    std::vector<uint32_t> frames;
    for (uint32_t f : m.Stack(i)) frames.push_back(f + f0);
    d.AddStack(frames);
  }
  for (uint32_t i = 0; i < m.AttributeSetCount(); ++i) {
    std::vector<Attribute> attrs;
    for (const Attribute& a : m.AttributeSet(i)) attrs.push_back({str(a.key), str(a.value)});
    d.AddAttributeSet(attrs);
  }
  d.links.insert(d.links.end(), m.links.begin(), m.links.end());
  std::vector<uint32_t> types;
  for (const SampleTypeInfo& t : m.sample_types) types.push_back(d.AddSampleType(t));
  for (Sample s : more.samples) {
    s.sample_type = types[s.sample_type];
    s.stack += k0;
    s.attribute_set += a0;
    s.link += l0;
    batch->samples.push_back(s);
  }
}

std::shared_ptr<const ProfileSlice> WholeSlice(const ProfileBatch& batch) {
  Query query;
  if (!batch.samples.empty()) query.sample_type = batch.dict.sample_types[batch.samples[0].sample_type].type;
  return SliceFromBatch(batch, query);
}

}  // namespace kiln::storage::testing
