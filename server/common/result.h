#pragma once

// Result<T>: the run-time error channel of kfaild (exceptions are for start-up only).
// An Error keeps a component error code and the original message of the failing library
// (librdkafka, SQLite, Docker, ssh), so nothing is lost when it is reported.

#include <string>
#include <system_error>
#include <utility>
#include <variant>

namespace kfaild {

struct Error {
  std::error_code code;
  std::string message;

  std::string describe() const {
    return message.empty() ? code.message() : code.message() + ": " + message;
  }
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : state_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const { return std::get<1>(state_); }

 private:
  std::variant<T, Error> state_;
};

struct Ok {};

// Result<void> equivalent: either nothing or an Error.
using Status = Result<Ok>;

inline Status okStatus() {
  return Ok{};
}

}  // namespace kfaild
