// Status and Result<T>: the error type at module boundaries, carrying a message a user can act on.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace tl {

enum class ErrorCode {
  ok = 0,
  invalid_argument,  // the user gave something malformed (a SPEC, a config value, a flag)
  not_found,         // a file, kernel or device that does not exist
  io,                // reading or writing a file failed
  parse,             // a file or string could not be parsed
  unsupported,       // valid, but this kernel/device/build cannot do it (can_implement refusals)
  no_device,         // no usable GPU (no driver, no device, wrong arch)
  cuda,              // a CUDA API call failed
  compile,           // NVRTC or ptxas rejected a kernel
  fault,             // a kernel faulted (illegal address, trap, ...)
  timeout,           // a launch or script ran past its limit
  internal,          // a bug in TileLab
};

const char* error_code_name(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : m_code(code), m_message(std::move(message)) {}

  static Status success() { return {}; }

  bool ok() const { return m_code == ErrorCode::ok; }
  explicit operator bool() const { return ok(); }
  ErrorCode code() const { return m_code; }
  const std::string& message() const { return m_message; }
  const Status& status() const { return *this; }  // lets TL_RETURN_IF_ERROR take a Status or a Result

  // Prefix the message with where it happened ("compiling gemm.simt: ...").
  Status with_context(const std::string& context) const {
    if (ok()) return *this;
    return {m_code, context + ": " + m_message};
  }

 private:
  ErrorCode m_code = ErrorCode::ok;
  std::string m_message;
};

inline Status make_error(ErrorCode code, std::string message) { return {code, std::move(message)}; }

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : m_value(std::move(value)) {}  // NOLINT: implicit on purpose
  Result(Status status) : m_value(std::move(status)) {}  // NOLINT: implicit on purpose

  bool ok() const { return std::holds_alternative<T>(m_value); }
  explicit operator bool() const { return ok(); }

  const Status& status() const {
    static const Status success;
    return ok() ? success : std::get<Status>(m_value);
  }
  T& value() & { return std::get<T>(m_value); }
  const T& value() const& { return std::get<T>(m_value); }
  T&& value() && { return std::get<T>(std::move(m_value)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }

  T value_or(T fallback) const { return ok() ? std::get<T>(m_value) : std::move(fallback); }

 private:
  std::variant<T, Status> m_value;
};

}  // namespace tl

// Propagate a failed Status/Result out of the current function.
#define TL_RETURN_IF_ERROR(expr)                      \
  do {                                                \
    auto tl_status_ = (expr);                         \
    if (!tl_status_.ok()) return tl_status_.status(); \
  } while (0)
