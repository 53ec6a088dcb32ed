#include "storage/symbol_table.h"

#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "storage/symbol_table_fixture.h"

namespace kiln::storage {

namespace testing {

SymbolTable NestedSymbolTable() {
  SymbolTableBuilder b;
  uint32_t main_c = b.Intern("/src/main.c"), util_h = b.Intern("/src/util.h");
  uint32_t f = b.AddScope(b.Intern("f"), SymbolTableBuilder::kNoScope);
  b.AddRange(f, 0x100, 0x200);
  uint32_t g = b.AddScope(b.Intern("g"), f, main_c, 10);
  b.AddRange(g, 0x120, 0x160);
  uint32_t h = b.AddScope(b.Intern("h"), g, util_h, 5);
  b.AddRange(h, 0x130, 0x140);
  b.AddLine(0x100, main_c, 8);
  b.AddLine(0x120, util_h, 4);
  b.AddLine(0x130, util_h, 2);
  b.AddLine(0x140, util_h, 6);
  b.AddLine(0x160, main_c, 12);
  b.EndLineSequence(0x200);
  return std::move(b).Build();
}

}  // namespace testing

namespace {

// "name file:line" per level, innermost first, joined by " | ".
std::string Chain(const SymbolTable& table, uint64_t address) {
  std::vector<SymbolizedFrame> chain;
  if (!table.Lookup(address, &chain)) return "-";
  std::string out;
  for (const SymbolizedFrame& f : chain) {
    if (!out.empty()) out += " | ";
    out += std::string(f.function) + " " + std::string(f.file) + ":" + std::to_string(f.line);
  }
  return out;
}

TEST_CASE("lookup gives the inline chain innermost first with call sites") {
  SymbolTable t = testing::NestedSymbolTable();
  CHECK(t.function_count() == 1);
  CHECK(t.has_inline_info());
  CHECK(Chain(t, 0x0ff) == "-");
  CHECK(Chain(t, 0x100) == "f /src/main.c:8");
  CHECK(Chain(t, 0x125) == "g /src/util.h:4 | f /src/main.c:10");
  CHECK(Chain(t, 0x135) == "h /src/util.h:2 | g /src/util.h:5 | f /src/main.c:10");
  CHECK(Chain(t, 0x145) == "g /src/util.h:6 | f /src/main.c:10");
  CHECK(Chain(t, 0x1ff) == "f /src/main.c:12");
  CHECK(Chain(t, 0x200) == "-");
}

TEST_CASE("ELF symbols fill the gaps DWARF leaves; DWARF names win where both exist") {
  SymbolTableBuilder b;
  uint32_t f = b.AddScope(b.Intern("from_dwarf"), SymbolTableBuilder::kNoScope);
  b.AddRange(f, 0x1000, 0x1100);
  b.AddSymbol("from_symtab", 0x1000, 0x100);
  b.AddSymbol("asm_helper", 0x1100, 0x20);
  b.AddSymbol("alias_second", 0x1200, 0x10);  // same start as the next: first added wins
  b.AddSymbol("unsized", 0x1300, 0);
  b.AddSymbol("after", 0x1380, 8);
  SymbolTable t = std::move(b).Build();
  CHECK(Chain(t, 0x1050) == "from_dwarf :0");
  CHECK(Chain(t, 0x1110) == "asm_helper :0");
  CHECK(Chain(t, 0x1120) == "-");
  CHECK(Chain(t, 0x1200) == "alias_second :0");
  CHECK(Chain(t, 0x137f) == "unsized :0");  // an unsized symbol reaches the next one
  CHECK(Chain(t, 0x1387) == "after :0");
  CHECK(Chain(t, 0x1388) == "-");
  CHECK(t.function_count() == 5);
}

TEST_CASE("a sequence end does not hide the next sequence's first row at the same address") {
  SymbolTableBuilder b;
  uint32_t a = b.Intern("a.c"), c = b.Intern("b.c");
  uint32_t f = b.AddScope(b.Intern("f"), SymbolTableBuilder::kNoScope);
  b.AddRange(f, 0x10, 0x30);
  b.AddLine(0x20, c, 7);  // second sequence, added first
  b.EndLineSequence(0x30);
  b.AddLine(0x10, a, 3);
  b.EndLineSequence(0x20);
  SymbolTable t = std::move(b).Build();
  CHECK(Chain(t, 0x1f) == "f a.c:3");
  CHECK(Chain(t, 0x20) == "f b.c:7");
}

TEST_CASE("broken nesting is clipped, never crashes, and every answer covers the address") {
  std::mt19937_64 rng(42);
  for (int round = 0; round < 50; ++round) {
    SymbolTableBuilder b;
    struct Placed {
      uint64_t start, end;
      uint32_t scope;
    };
    std::vector<Placed> placed;
    std::vector<uint32_t> names;
    for (int i = 0; i < 40; ++i) {
      uint32_t parent = placed.empty() || rng() % 3 == 0 ? SymbolTableBuilder::kNoScope
                                                         : placed[rng() % placed.size()].scope;
      std::string name = "s" + std::to_string(i);
      uint32_t s = b.AddScope(b.Intern(name), parent, 0, 1);
      uint64_t start = rng() % 1000, end = start + rng() % 200;
      b.AddRange(s, start, end);
      placed.push_back({start, end, s});
      names.push_back(s);
    }
    SymbolTable t = std::move(b).Build();
    std::vector<SymbolizedFrame> chain;
    for (uint64_t a = 0; a < 1300; ++a) {
      if (!t.Lookup(a, &chain)) continue;
      // The innermost scope's name is one whose own range covers a.
      bool covered = false;
      for (const Placed& p : placed) {
        covered |= p.start <= a && a < p.end && chain.front().function == "s" + std::to_string(p.scope);
      }
      CHECK_MESSAGE(covered, "address " << a << " round " << round);
    }
  }
}

TEST_CASE("serialized tables round trip and corrupted bytes are rejected without crashing") {
  SymbolTable t = testing::NestedSymbolTable();
  std::string bytes = t.Serialize();
  auto back = SymbolTable::Deserialize(bytes);
  REQUIRE(back.ok());
  for (uint64_t a = 0xf0; a < 0x210; ++a) CHECK(Chain(*back, a) == Chain(t, a));
  CHECK(back->function_count() == t.function_count());

  CHECK_FALSE(SymbolTable::Deserialize("").ok());
  CHECK_FALSE(SymbolTable::Deserialize("XSYM").ok());
  auto wrong_version = bytes;
  wrong_version[4] = 9;
  auto status = SymbolTable::Deserialize(wrong_version).status();
  CHECK(std::string(status.message()).find("format 9") != std::string::npos);
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    CHECK_FALSE(SymbolTable::Deserialize(std::string_view(bytes).substr(0, cut)).ok());
  }
  // Flipped bytes: either an error, or a table whose lookups stay in bounds.
  std::vector<SymbolizedFrame> chain;
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (uint8_t x : {0x01, 0x80, 0xff}) {
      std::string mutated = bytes;
      mutated[i] = static_cast<char>(mutated[i] ^ x);
      auto m = SymbolTable::Deserialize(mutated);
      if (m.ok()) {
        for (uint64_t a = 0; a < 0x300; a += 7) m->Lookup(a, &chain);
      }
    }
  }
}

}  // namespace
}  // namespace kiln::storage
