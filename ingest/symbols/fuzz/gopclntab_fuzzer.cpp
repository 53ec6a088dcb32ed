// libFuzzer target for Go's line table reader (ingest/symbols/go_pclntab.h),
// which kiln's symbolizer and kiln-agent both run on whatever .gopclntab a
// file carries: the input is the section's bytes, read as if .text started
// at 0x401000 (where Go links it); a parsed table is looked up across its
// range and its first functions' lines and stack deltas walked. A finding
// is any crash, sanitizer report, leak or timeout; errors are the expected
// outcome for most inputs. Seeds: the .gopclntab of a Go tool on this
// machine (fuzz/run_fuzzers.sh).
#include <cstddef>
#include <cstdint>
#include <string>

#include "ingest/symbols/go_pclntab.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr uint64_t kText = 0x401000;
  auto table = kiln::symbols::GoLineTable::Parse(std::string(reinterpret_cast<const char*>(data), size), kText);
  if (!table.ok()) return 0;
  for (uint64_t a = kText; a < kText + 0x20000; a += 61) (void)table->Lookup(a);
  const uint32_t n = table->functions() < 64 ? table->functions() : 64;
  for (uint32_t i = 0; i < n; ++i) {
    (void)table->Function(i);
    table->ForEachLine(i, [](uint64_t, uint64_t, std::string_view, int64_t) {});
    table->ForEachSpDelta(i, [](uint64_t, uint64_t, int64_t) { return true; });
  }
  return 0;
}
