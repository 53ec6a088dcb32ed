// libFuzzer target for kiln-agent's perf map reader (agent/perf_map.h),
// which reads whatever a profiled process wrote to /tmp/perf-PID.map: any
// process on the host can put anything there. The first byte of the input
// picks where the rest is cut into two reads (a runtime appends while the
// agent reads, so a line may arrive in two parts). A finding is any crash,
// sanitizer report, leak or timeout, or the cut changing what was read:
// the lines and the names found must not depend on where a read stopped.
// Seeds: real perf maps from Node, OpenJDK 17 and CPython 3.13 (seeds/).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "agent/perf_map.h"

namespace {

std::string Describe(const std::optional<kiln::agent::JitSymbol>& s) {
  if (!s) return "-";
  return s->function + "|" + s->file + "|" + std::to_string(s->line) + "|" +
         std::to_string(static_cast<int>(s->runtime));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::size_t cut = text.empty() ? 0 : (data[0] * text.size()) / 256;

  kiln::agent::PerfMap whole;
  const std::size_t used_whole = whole.Add(text);

  kiln::agent::PerfMap parts;
  std::size_t used = parts.Add(text.substr(0, cut));
  // As PerfMaps does: the next read starts where the last complete line ended.
  used += parts.Add(text.substr(used));

  if (used != used_whole || whole.good_lines() != parts.good_lines() || whole.bad_lines() != parts.bad_lines() ||
      whole.ranges() != parts.ranges())
    std::abort();
  // Look up the addresses the input names and their neighbours.
  for (std::size_t at = 0; at < text.size() && at < 4096; at += 7) {
    std::uint64_t address = 0;
    for (std::size_t i = at; i < text.size() && i < at + 12; ++i) address = address << 8 | static_cast<unsigned char>(text[i]);
    for (std::uint64_t a : {address, address & std::uint64_t{0xffffffffff}, static_cast<std::uint64_t>(at) << 4})
      if (Describe(whole.Find(a)) != Describe(parts.Find(a))) std::abort();
  }
  (void)kiln::agent::ParseJitName(text.substr(0, 512));
  return 0;
}
