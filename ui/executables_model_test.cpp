#include "ui/executables_model.h"

#include <doctest/doctest.h>

#include <map>

#include "storage/model/test_fixtures.h"

namespace kiln::ui {
namespace {

using storage::SymbolStatus;
using State = storage::SymbolStatus::State;

storage::ProfileSlice SliceFromFolded(std::string_view folded) {
  return *storage::testing::WholeSlice(storage::testing::BatchFromFolded(folded));
}

}  // namespace

TEST_CASE("symbol status text says where the symbols came from, or why there are none") {
  CHECK(SymbolStatusText(SymbolStatus{}) == "not attempted");
  CHECK(SymbolStatusText({State::kSymbolized, "local file /usr/bin/app", "", 42, 1}) ==
        "symbols from local file with 42 functions");
  CHECK(SymbolStatusText({State::kSymbolized, "debuginfod http://127.0.0.1:8002", "", 1, 1}) ==
        "symbols from debuginfod with 1 function");
  CHECK(SymbolStatusText({State::kSymbolized, "debug file /usr/lib/debug/.build-id/ab/cd.debug", "", 7, 1}) ==
        "symbols from debug file with 7 functions");
  CHECK(SymbolStatusText({State::kNoSymbols, "tried local file, debug files", "", 0, 1}) ==
        "no symbols found");
  CHECK(SymbolStatusText({State::kFailed, "local file /x", "/x: section 7 extends past the end of the file",
                          0, 1}) == "failed: /x: section 7 extends past the end of the file");
  CHECK(SymbolStatusText({State::kFailed, "", "", 0, 1}) == "failed: unknown reason");
}

TEST_CASE("an executable's status: a stored table wins over a newer failure under its other key") {
  SymbolStatusMap statuses;
  const std::string htl = "0123456789abcdef0123456789abcdef";
  statuses[storage::HtlhashSymbolKey(htl)] = {State::kSymbolized, "added file /tmp/app.debug", "", 12, 100};
  statuses[storage::GnuBuildIdSymbolKey("beef")] = {State::kFailed, "debuginfod http://x", "timeout", 0, 200};
  CHECK(StatusOfExecutable(statuses, htl, "beef").state == State::kSymbolized);
  CHECK(StatusOfExecutable(statuses, "", "beef").state == State::kFailed);
  CHECK(StatusOfExecutable(statuses, "ffffffffffffffffffffffffffffffff", "").state == State::kNotAttempted);

  storage::ExecutableRow row;
  row.file_name = "/usr/bin/app";
  CHECK(ExecutableStatusText(statuses, row) == "no id (cannot be matched)");
  row.htlhash = htl;
  CHECK(ExecutableStatusText(statuses, row) == "symbols from added file with 12 functions");
}

TEST_CASE("unsymbolized addresses of one executable, heaviest first, counted once per stack") {
  const storage::ProfileSlice slice = SliceFromFolded(
      "main;app+0x10;app+0x20 3\n"
      "main;app+0x20;app+0x20 2\n"  // recursion: once per stack
      "main;libc.so+0x99 5\n"
      "main;app+0x30 2\n");
  storage::ExecutableRow app;
  app.file_name = "app";
  const std::vector<UnsymbolizedAddress> frames = UnsymbolizedAddresses(slice, app);
  CHECK(frames == std::vector<UnsymbolizedAddress>{{0x20, 5}, {0x10, 3}, {0x30, 2}});
  storage::ExecutableRow libc;
  libc.file_name = "libc.so";
  CHECK(UnsymbolizedAddresses(slice, libc) == std::vector<UnsymbolizedAddress>{{0x99, 5}});
  storage::ExecutableRow other;
  other.file_name = "app";
  other.htlhash = "0123456789abcdef0123456789abcdef";  // same name, another file
  CHECK(UnsymbolizedAddresses(slice, other).empty());
}

}  // namespace kiln::ui
