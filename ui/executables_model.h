// The Executables view's data, without ImGui: symbol status text per
// executable and the unsymbolized frames of one executable in a slice.
// Pure functions over immutable snapshots; any thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "storage/model/profile_model.h"
#include "storage/store.h"
#include "storage/model/top_functions.h"

namespace kiln::ui {

// Store::SymbolStatuses() by key.
using SymbolStatusMap = std::map<std::string, storage::SymbolStatus>;

// The status of an executable with these ids: of its keys' statuses the one
// with a table wins, else the newest; kNotAttempted when none has one.
storage::SymbolStatus StatusOfExecutable(const SymbolStatusMap& statuses, std::string_view htlhash,
                                         std::string_view gnu_build_id);

// "local file" for "local file /usr/bin/x", "debuginfod" for "debuginfod
// http://..": the source without the path or URL.
std::string SourceKind(std::string_view source);

// What the Symbols column says: "not attempted", "symbols from <source kind>
// with N functions", "no symbols found", "failed: <reason>".
std::string SymbolStatusText(const storage::SymbolStatus& status);

// The Symbols column of a row: SymbolStatusText of its status, or "no id
// (cannot be matched)" for an executable without htlhash and build id.
std::string ExecutableStatusText(const SymbolStatusMap& statuses, const storage::ExecutableRow& row);

// One address of an executable whose frames have no function name, with the
// weight of the stacks it appears in (once per stack).
struct UnsymbolizedAddress {
  uint64_t address = 0;
  int64_t weight = 0;
  bool operator==(const UnsymbolizedAddress&) const = default;
};

// Unnamed native frames of the executable `row` names (same file name and
// ids) in `slice`, heaviest first, then by address.
std::vector<UnsymbolizedAddress> UnsymbolizedAddresses(const storage::ProfileSlice& slice,
                                                       const storage::ExecutableRow& row);

}  // namespace kiln::ui
