#include "ingest/symbols/demangle.h"

#include <cxxabi.h>
#ifdef KILN_SYMBOLS_LLVM_DEMANGLE
#include <llvm/Demangle/Demangle.h>
#endif

#include <cstdlib>
#include <cstring>
#include <utility>

namespace kiln::symbols {
namespace {

// ---------------------------------------------------------------------------
// [DEMANGLE]
// ---------------------------------------------------------------------------

bool IsHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

// Rust legacy symbols are Itanium-mangled paths whose last element is
// "h<16 hex digits>" and whose elements escape punctuation as $..$.
bool StripRustHash(std::string* s) {
  constexpr size_t kLen = 3 + 16;  // "::h" + hash
  if (s->size() <= kLen || s->compare(s->size() - kLen, 3, "::h") != 0) return false;
  for (size_t i = s->size() - 16; i < s->size(); ++i)
    if (!IsHex((*s)[i])) return false;
  s->resize(s->size() - kLen);
  return true;
}

std::string DecodeRustEscapes(const std::string& s) {
  static const std::pair<const char*, const char*> kEscapes[] = {{"$SP$", "@"}, {"$BP$", "*"}, {"$RF$", "&"},
                                                                 {"$LT$", "<"}, {"$GT$", ">"}, {"$LP$", "("},
                                                                 {"$RP$", ")"}, {"$C$", ","}};
  std::string out;
  for (size_t i = 0; i < s.size();) {
    // An element that starts with an escape is written "_$..."; the "_" is
    // only there to make it a valid identifier.
    bool element_start = i == 0 || (i >= 2 && s[i - 1] == ':' && s[i - 2] == ':');
    if (element_start && s[i] == '_' && i + 1 < s.size() && s[i + 1] == '$') {
      ++i;
      continue;
    }
    if (s[i] == '$') {
      bool done = false;
      for (const auto& [from, to] : kEscapes) {
        size_t n = std::strlen(from);
        if (s.compare(i, n, from) == 0) {
          out += to;
          i += n;
          done = true;
          break;
        }
      }
      if (!done && i + 1 < s.size() && s[i + 1] == 'u') {
        size_t end = s.find('$', i + 2);
        if (end != std::string::npos && end - i - 2 <= 6) {
          unsigned long cp = std::strtoul(s.substr(i + 2, end - i - 2).c_str(), nullptr, 16);
          if (cp > 0 && cp < 0x80) {
            out.push_back(static_cast<char>(cp));
            i = end + 1;
            done = true;
          }
        }
      }
      if (!done) out.push_back(s[i++]);
    } else if (s[i] == '.' && i + 1 < s.size() && s[i + 1] == '.') {
      out += "::";
      i += 2;
    } else {
      out.push_back(s[i++]);
    }
  }
  return out;
}

}  // namespace

bool DemanglesRustV0() {
#ifdef KILN_SYMBOLS_LLVM_DEMANGLE
  return true;
#else
  return false;
#endif
}

std::string Demangle(const std::string& name) {
#ifdef KILN_SYMBOLS_LLVM_DEMANGLE
  // Rust v0: LLVM's demangler prints what binutils prints. A C string
  // converts to both LLVM 16's const char* and LLVM 17+'s std::string_view.
  if (name.size() > 2 && name[0] == '_' && name[1] == 'R') {
    char* d = llvm::rustDemangle(name.c_str());
    std::string out = d ? d : name;
    std::free(d);
    return out;
  }
#endif
  if (name.size() < 3 || name[0] != '_' || name[1] != 'Z') {
    // A Rust legacy name that a C++-only demangler already turned into a
    // path but left Rust's escapes and hash in, as perf script prints them
    // ("_$LT$term..terminfo..X$LT$T$GT$$u20$as$u20$term..Terminal$GT$::reset::h7a8b..."):
    // finished as rustfilt does. The 16 hex digits after "::h" are what
    // marks it; no C++ name ends so.
    std::string out = name;
    if (StripRustHash(&out)) return DecodeRustEscapes(out);
    return name;
  }
  int status = 0;
  char* d = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !d) {
    std::free(d);
    return name;
  }
  std::string out(d);
  std::free(d);
  if (name.compare(0, 3, "_ZN") == 0 && StripRustHash(&out)) out = DecodeRustEscapes(out);
  return out;
}

}  // namespace kiln::symbols
