#include "proc_maps.h"

#include <algorithm>
#include <charconv>

namespace kiln::agent {
namespace {

bool ParseHex(std::string_view& s, std::uint64_t& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out, 16);
  if (ec != std::errc() || p == s.data()) return false;
  s.remove_prefix(static_cast<std::size_t>(p - s.data()));
  return true;
}

bool ParseDec(std::string_view& s, std::uint64_t& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out, 10);
  if (ec != std::errc() || p == s.data()) return false;
  s.remove_prefix(static_cast<std::size_t>(p - s.data()));
  return true;
}

bool Expect(std::string_view& s, char c) {
  if (s.empty() || s.front() != c) return false;
  s.remove_prefix(1);
  return true;
}

void SkipSpaces(std::string_view& s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
}

}  // namespace

// Line format (proc(5)):
//   start-end perms offset major:minor inode   path
//   7f12a000-7f12c000 r-xp 00002000 fd:01 1234   /usr/lib/libc.so.6
Result<std::vector<MapsEntry>> ParseProcMaps(std::string_view text, std::string_view source) {
  using R = Result<std::vector<MapsEntry>>;
  std::vector<MapsEntry> out;
  int line_no = 0;
  while (!text.empty()) {
    std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++line_no;
    if (line.empty()) continue;
    auto fail = [&](const char* what) {
      return R::Error(std::string(source) + " line " + std::to_string(line_no) + ": " + what);
    };
    MapsEntry e;
    std::uint64_t major = 0, minor = 0;
    if (!ParseHex(line, e.start) || !Expect(line, '-') || !ParseHex(line, e.end) || e.end < e.start)
      return fail("bad address range");
    SkipSpaces(line);
    if (line.size() < 4) return fail("bad permissions");
    e.readable = line[0] == 'r';
    e.executable = line[2] == 'x';
    line.remove_prefix(4);
    SkipSpaces(line);
    if (!ParseHex(line, e.file_offset)) return fail("bad offset");
    SkipSpaces(line);
    if (!ParseHex(line, major) || !Expect(line, ':') || !ParseHex(line, minor)) return fail("bad device");
    e.dev_major = static_cast<std::uint32_t>(major);
    e.dev_minor = static_cast<std::uint32_t>(minor);
    SkipSpaces(line);
    if (!ParseDec(line, e.inode)) return fail("bad inode");
    SkipSpaces(line);
    constexpr std::string_view kDeleted = " (deleted)";
    if (line.ends_with(kDeleted)) {
      e.deleted = true;
      line.remove_suffix(kDeleted.size());
    }
    e.path = std::string(line);
    out.push_back(std::move(e));
  }
  return out;
}

const MapsEntry* FindMapping(const std::vector<MapsEntry>& entries, std::uint64_t address) {
  auto it = std::upper_bound(entries.begin(), entries.end(), address,
                             [](std::uint64_t a, const MapsEntry& e) { return a < e.start; });
  if (it == entries.begin()) return nullptr;
  --it;
  return address < it->end ? &*it : nullptr;
}

}  // namespace kiln::agent
