// libFuzzer entry point for the store's own decoders of what it reads back
// from disk: sample blocks, hourly stack summaries and symbol tables. A
// damaged store must give DataLoss, never a crash or an out-of-bounds read.
// The first byte chooses the decoder; whatever decodes must encode and
// decode again to the same value.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "storage/sample_block.h"
#include "storage/stack_summary.h"
#include "storage/symbol_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kiln::storage;
  if (size == 0) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0: {
      std::vector<BlockSample> samples;
      if (DecodeSampleBlock(input, &samples).ok()) {
        std::vector<BlockSample> again;
        if (!DecodeSampleBlock(EncodeSampleBlock(samples), &again).ok() || again != samples) std::abort();
        if (auto n = SampleBlockCount(input); !n.ok() || *n != samples.size()) std::abort();
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
