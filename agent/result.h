#pragma once
// A value or an error message, for fallible agent functions. Errors name the
// input and what was wrong ("/proc/42/maps line 3: bad address range"), so
// they can be printed to the user as they are.

#include <optional>
#include <string>
#include <utility>

namespace kiln::agent {

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit on purpose
  static Result Error(std::string message) {
    Result r;
    r.error_ = std::move(message);
    return r;
  }
  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  const T& value() const& { return *value_; }
  T& value() & { return *value_; }
  T&& value() && { return std::move(*value_); }
  const T* operator->() const { return &*value_; }
  T* operator->() { return &*value_; }
  const T& operator*() const { return *value_; }
  const std::string& error() const { return error_; }

 private:
  Result() = default;
  std::optional<T> value_;
  std::string error_;
};

}  // namespace kiln::agent
