#pragma once
// Kernel function names from /proc/kallsyms, for kernel frames.
//
// Loaded once at start (needs root, else all addresses read as 0 and Load
// says so). Lookup is const and safe from any thread after Load.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "result.h"

namespace kiln::agent {

class KernelSymbols {
 public:
  struct Hit {
    std::string_view function;  // "" when unknown
    std::string_view module;    // "vmlinux" or the module name ("ext4")
  };

  // Parses kallsyms text; only text symbols (t/T/w/W) are kept.
  [[nodiscard]] Result<std::size_t> LoadFromText(std::string_view text);
  [[nodiscard]] Result<std::size_t> Load(const std::string& path = "/proc/kallsyms");

  Hit Lookup(std::uint64_t address) const;
  std::size_t size() const { return symbols_.size(); }

 private:
  void Begin();
  void AddLine(std::string_view line);
  [[nodiscard]] Result<std::size_t> Finish();

  struct Symbol {
    std::uint64_t address;
    std::uint32_t name_offset;
    std::uint32_t module;  // index into modules_
  };
  std::vector<Symbol> symbols_;
  std::string names_;
  std::vector<std::string> modules_;
  bool all_zero_ = true;
};

}  // namespace kiln::agent
