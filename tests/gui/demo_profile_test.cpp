#include "app/demo_profile.h"

#include <doctest/doctest.h>

#include <set>

#include "storage/model/flame_tree.h"

namespace kiln::app {
namespace {

using storage::FrameType;

constexpr int64_t kNow = 1'800'000'000'000'000'000;

TEST_CASE("the demo profile is deterministic and covers every view") {
  const storage::ProfileBatch a = BuildDemoProfile(kNow);
  const storage::ProfileBatch b = BuildDemoProfile(kNow);
  REQUIRE(a.samples.size() > 10'000);
  CHECK(a.samples.size() == b.samples.size());
  CHECK(a.dict.strings == b.dict.strings);
  CHECK(a.samples.front().time_ns == b.samples.front().time_ns);

  std::set<FrameType> types;
  for (const auto& f : a.dict.frames) types.insert(f.type);
  for (FrameType t :
       {FrameType::kKernel, FrameType::kNative, FrameType::kPython, FrameType::kGo, FrameType::kJvm}) {
    CHECK(types.count(t) == 1);
  }
  std::set<storage::SampleType> kinds;
  int64_t first = kNow, last = 0;
  for (const auto& s : a.samples) {
    kinds.insert(a.dict.sample_types[s.sample_type].type);
    first = std::min(first, s.time_ns);
    last = std::max(last, s.time_ns);
    REQUIRE(s.stack < a.dict.StackCount());
    REQUIRE(s.attribute_set < a.dict.AttributeSetCount());
  }
  CHECK(kinds == std::set<storage::SampleType>{storage::OnCpuSamples(), storage::OffCpuTime()});
  CHECK(first >= kNow - 15 * 60 * 1'000'000'000LL);
  CHECK(last < kNow);
  CHECK(last - first > 14 * 60 * 1'000'000'000LL);

  size_t deepest = 0;
  for (uint32_t s = 0; s < a.dict.StackCount(); ++s) deepest = std::max(deepest, a.dict.Stack(s).size());
  CHECK(deepest > 40);  // deep recursion

  std::set<std::string> processes;
  for (uint32_t s = 0; s < a.dict.AttributeSetCount(); ++s) {
    const auto name = a.dict.AttributeValue(s, storage::attr::kProcessExecutableName);
    if (!name.empty()) processes.insert(std::string(name));
  }
  CHECK(processes.size() >= 10);
}

}  // namespace
}  // namespace kiln::app
