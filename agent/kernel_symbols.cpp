#include "kernel_symbols.h"

#include <algorithm>
#include <charconv>
#include <fstream>

namespace kiln::agent {

void KernelSymbols::Begin() {
  symbols_.clear();
  names_.clear();
  modules_ = {"vmlinux"};
  all_zero_ = true;
}

void KernelSymbols::AddLine(std::string_view line) {
  // "ffffffff81000000 T _stext" or "ffffffffc0a01000 t ext4_fill_super\t[ext4]"
  std::uint64_t address = 0;
  auto [p, ec] = std::from_chars(line.data(), line.data() + line.size(), address, 16);
  if (ec != std::errc() || p + 3 > line.data() + line.size()) return;
  char type = p[1];
  if (type != 't' && type != 'T' && type != 'w' && type != 'W') return;
  std::string_view rest = line.substr(static_cast<std::size_t>(p - line.data()) + 3);
  std::string_view name = rest.substr(0, rest.find_first_of(" \t"));
  std::uint32_t module = 0;
  if (std::size_t lb = rest.find('['); lb != std::string_view::npos) {
    std::string_view mod = rest.substr(lb + 1, rest.find(']', lb) - lb - 1);
    // Module symbols come grouped, so the last module is almost always it.
    auto it = modules_.back() == mod ? modules_.end() - 1 : std::find(modules_.begin(), modules_.end(), mod);
    if (it == modules_.end()) {
      modules_.emplace_back(mod);
      it = modules_.end() - 1;
    }
    module = static_cast<std::uint32_t>(it - modules_.begin());
  }
  if (address != 0) all_zero_ = false;
  symbols_.push_back({address, static_cast<std::uint32_t>(names_.size()), module});
  names_.append(name);
  names_.push_back('\0');
}

Result<std::size_t> KernelSymbols::Finish() {
  if (symbols_.empty()) return Result<std::size_t>::Error("no text symbols");
  if (all_zero_)
    return Result<std::size_t>::Error("all addresses are 0 (kernel.kptr_restrict hides them; run as root)");
  std::sort(symbols_.begin(), symbols_.end(),
            [](const Symbol& a, const Symbol& b) { return a.address < b.address; });
  symbols_.shrink_to_fit();
  names_.shrink_to_fit();
  return symbols_.size();
}

Result<std::size_t> KernelSymbols::LoadFromText(std::string_view text) {
  Begin();
  while (!text.empty()) {
    std::size_t nl = text.find('\n');
    AddLine(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
  }
  return Finish();
}

Result<std::size_t> KernelSymbols::Load(const std::string& path) {
  // Line by line: kallsyms is ~5 MB of text we do not want to hold twice.
  std::ifstream in(path);
  if (!in) return Result<std::size_t>::Error("cannot open " + path);
  Begin();
  names_.reserve(4u << 20);
  std::string line;
  while (std::getline(in, line)) AddLine(line);
  auto r = Finish();
  if (!r) return Result<std::size_t>::Error(path + ": " + r.error());
  return r;
}

KernelSymbols::Hit KernelSymbols::Lookup(std::uint64_t address) const {
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), address,
                             [](std::uint64_t a, const Symbol& s) { return a < s.address; });
  if (it == symbols_.begin()) return {{}, "vmlinux"};
  const Symbol& s = *std::prev(it);
  return {std::string_view(names_.data() + s.name_offset), modules_[s.module]};
}

}  // namespace kiln::agent
