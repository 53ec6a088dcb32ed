// libFuzzer target for the ELF/DWARF readers (see ingest/symbols/
// CMakeLists.txt, KILN_BUILD_FUZZERS): the input is one ELF file, read by
// ReadElfIdentityFromBytes and, through a memfd (libdw reads files), by
// ReadSymbols; whatever table comes out is looked up at a spread of
// addresses. A finding is any crash, sanitizer report, leak or timeout;
// errors are the expected outcome for most inputs.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ingest/symbols/elf_identity.h"
#include "ingest/symbols/elf_symbols.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto id = kiln::symbols::ReadElfIdentityFromBytes(bytes, "fuzz");
  (void)id;

  int fd = memfd_create("kiln-elf-fuzz", MFD_CLOEXEC);
  if (fd < 0) return 0;
  size_t written = 0;
  while (written < size) {
    ssize_t n = write(fd, data + written, size - written);
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  auto symbols = kiln::symbols::ReadSymbols({path});
  if (symbols.ok()) {
    std::vector<kiln::storage::SymbolizedFrame> chain;
    for (uint64_t a = 0; a < 0x10000; a += 13) symbols->table.Lookup(a, &chain);
    for (uint64_t a = 0x400000; a < 0x410000; a += 13) symbols->table.Lookup(a, &chain);
  }
  close(fd);
  return 0;
}
