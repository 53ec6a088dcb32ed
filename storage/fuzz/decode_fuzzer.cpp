// libFuzzer entry point for the store's own decoders of what it reads back
// from disk: sample blocks, hourly stack summaries and symbol tables. A
// damaged store must give DataLoss, never a crash or an out-of-bounds read.
// The first byte chooses the decoder; whatever decodes must encode and
// decode again to the same value.
#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <tuple>

#include "storage/sample_block.h"
#include "storage/stack_summary.h"
#include "storage/symbol_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kiln::storage;
  if (size == 0) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0: {
      // A few bytes of constant columns can stand for a million samples:
      // decoding those is the same code, slower; past 64 k the fuzzer
      // spends its time elsewhere.
      if (auto n = SampleBlockCount(input); n.ok() && *n > 65536) break;
      std::vector<BlockSample> samples;
      if (DecodeSampleBlock(input, &samples).ok()) {
        if (auto n = SampleBlockCount(input); !n.ok() || *n != samples.size()) std::abort();
        // The same samples again (a damaged block need not be in the
        // encoder's order), where their times are as far apart as real
        // ones can be: the encoder takes differences of them.
        int64_t lo = INT64_MAX, hi = INT64_MIN;
        for (const BlockSample& b : samples) {
          lo = std::min(lo, b.time_ns);
          hi = std::max(hi, b.time_ns);
        }
        if (samples.empty() || (lo > INT64_MIN / 4 && hi < INT64_MAX / 4)) {
          std::vector<BlockSample> again;
          if (!DecodeSampleBlock(EncodeSampleBlock(samples), &again).ok()) std::abort();
          auto order = [](const BlockSample& a, const BlockSample& b) {
            return std::tie(a.attribute_set, a.time_ns, a.stack, a.link, a.value) <
                   std::tie(b.attribute_set, b.time_ns, b.stack, b.link, b.value);
          };
          std::sort(samples.begin(), samples.end(), order);
          std::sort(again.begin(), again.end(), order);
          if (again != samples) std::abort();
        }
      }
      break;
    }
    case 1: {
      StackSummary s;
      if (DecodeStackSummary(input, 7, &s).ok()) {
        StackSummary again;
        if (!DecodeStackSummary(EncodeStackSummary(s), 7, &again).ok() || !(again == s)) std::abort();
      }
      break;
    }
    case 2: {
      auto table = SymbolTable::Deserialize(input);
      if (table.ok()) {
        std::vector<SymbolizedFrame> chain;
        (void)table->Lookup(0x1000, &chain);
        (void)table->Lookup(~uint64_t{0}, &chain);
      }
      break;
    }
  }
  return 0;
}
