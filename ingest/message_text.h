// Cat(): concatenates strings, string views and integers into a std::string.
// Exists because Debian's abseil is built with its own absl::string_view
// (ABSL_OPTION_USE_STD_STRING_VIEW 0), so absl::StrCat does not take
// std::string_view. Only for messages and cache keys off the hot path.
//
// Threads: pure functions.
#pragma once

#include <charconv>
#include <concepts>
#include <string>
#include <string_view>

namespace kiln::ingest {

namespace message_text_internal {
inline void Append(std::string* out, std::string_view s) { out->append(s); }
inline void Append(std::string* out, char c) { out->push_back(c); }
template <std::integral T>
requires(!std::same_as<T, char> && !std::same_as<T, bool>) void Append(std::string* out, T v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, end);
}
}  // namespace message_text_internal

template <typename... Args>
void CatAppend(std::string* out, const Args&... args) {
  (message_text_internal::Append(out, args), ...);
}

template <typename... Args>
std::string Cat(const Args&... args) {
  std::string out;
  CatAppend(&out, args...);
  return out;
}

}  // namespace kiln::ingest
