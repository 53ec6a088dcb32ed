// A symbol table fixture shared by the store and symbol table tests.
#pragma once

#include "storage/symbol_table.h"

namespace kiln::storage::testing {

// A symbol table with an inline chain: f [0x100, 0x200) in /src/main.c,
// g inlined at main.c:10 covering [0x120, 0x160), h inlined into g at
// util.h:5 covering [0x130, 0x140); line rows at 0x100 main.c:8, 0x120
// util.h:4, 0x130 util.h:2, 0x140 util.h:6, 0x160 main.c:12.
SymbolTable NestedSymbolTable();

}  // namespace kiln::storage::testing
