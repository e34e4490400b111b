// Error and Expected<T>: how every user-facing failure in smelt is reported (no aborts, no exceptions
// across the API). The message names the node, the op and what is wrong.
#pragma once

#include <fmt/format.h>

#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace smelt {

/// `text` with control characters other than newline and tab written as \xNN. Error messages quote
/// untrusted names (ONNX node names, tensor names in a checkpoint, file names): raw escape sequences
/// in them must not reach a terminal or a log.
inline std::string escapeControlCharacters(std::string text) {
  auto isControl = [](unsigned char c) { return (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f; };
  size_t i = 0;
  while (i < text.size() && !isControl(static_cast<unsigned char>(text[i]))) ++i;
  if (i == text.size()) return text;
  std::string out = text.substr(0, i);
  for (; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (isControl(c)) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += text[i];
    }
  }
  return out;
}

/// A failure the caller can handle: one human-readable message, already naming what failed.
/// What kind of failure an Error reports, for the callers that recover from some. Almost every error
/// is kGeneric; the device runtime classifies drivers' error codes (CUDA_ERROR_OUT_OF_MEMORY,
/// CUDA_ERROR_ILLEGAL_ADDRESS, CL_DEVICE_NOT_AVAILABLE, ...) into the others.
enum class ErrorKind : unsigned char {
  kGeneric,
  /// A device (or host) allocation failed: freeing cached memory or another device may help.
  kOutOfMemory,
  /// The device failed in a way that poisons its context (a sticky CUDA error, a lost device): only
  /// recreating the context, or another device, helps.
  kDeviceLost,
};

class Error {
 public:
  explicit Error(std::string message, ErrorKind kind = ErrorKind::kGeneric)
      : message_(escapeControlCharacters(std::move(message))), kind_(kind) {}
  const std::string& message() const { return message_; }
  ErrorKind kind() const { return kind_; }
  /// Returns a copy with `context` prepended ("while importing Conv_3: ..."); the kind is kept.
  Error withContext(std::string_view context) const {
    return Error(fmt::format("{}: {}", context, message_), kind_);
  }
  /// Returns a copy of the given kind.
  Error withKind(ErrorKind kind) const { return Error(message_, kind); }

 private:
  std::string message_;
  ErrorKind kind_ = ErrorKind::kGeneric;
};

/// Builds an Error from a fmt format string.
template <typename... Args>
Error makeError(fmt::format_string<Args...> format, Args&&... args) {
  return Error(fmt::format(format, std::forward<Args>(args)...));
}

/// Reading the value of an Expected that holds an error (or the error of one holding a value) is a bug
/// in the caller: say what the error was, then abort, in every build (an assert would be compiled out
/// under NDEBUG and leave std::get to throw bad_variant_access with no message).
[[noreturn]] inline void abortOnMisuse(const char* what, const std::string& message) {
  std::fprintf(stderr, "smelt: %s%s\n", what, message.c_str());
  std::fflush(stderr);
  std::abort();
}

/// A value or an Error. A minimal std::expected (C++23) for C++20.
template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : state_(std::move(value)) {}
  Expected(Error error) : state_(std::move(error)) {}

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { checkValue(); return std::get<0>(state_); }
  const T& value() const& { checkValue(); return std::get<0>(state_); }
  T&& value() && { checkValue(); return std::get<0>(std::move(state_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const {
    if (ok()) abortOnMisuse("error() of an Expected that holds a value", "");
    return std::get<1>(state_);
  }

 private:
  void checkValue() const {
    if (!ok()) abortOnMisuse("the value of an Expected that holds an error: ", std::get<1>(state_).message());
  }
  std::variant<T, Error> state_;
};

/// Success or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)) {}
  static Status success() { return Status(); }
  bool ok() const { return !error_; }
  explicit operator bool() const { return ok(); }
  const Error& error() const {
    if (!error_) abortOnMisuse("error() of a Status that succeeded", "");
    return *error_;
  }

 private:
  // Empty on success: a success builds no message (the kernel interpreter returns a Status per
  // instruction; an empty Error there was a string built and escaped each time, 40% of its time
  // under ASan).
  std::optional<Error> error_;
};

}  // namespace smelt

#define SMELT_CONCAT_INNER(a, b) a##b
#define SMELT_CONCAT(a, b) SMELT_CONCAT_INNER(a, b)

/// `SMELT_TRY(auto x, expr)` : evaluates an Expected, returns its error from the enclosing function,
/// or binds the value.
#define SMELT_TRY(decl, expr) SMELT_TRY_IMPL(SMELT_CONCAT(smelt_try_, __LINE__), decl, expr)
#define SMELT_TRY_IMPL(tmp, decl, expr) \
  auto tmp = (expr);                    \
  if (!tmp.ok()) return tmp.error();    \
  decl = std::move(tmp).value()

/// `SMELT_CHECK_OK(status_expr)` : returns the error of a failed Status or Expected.
#define SMELT_CHECK_OK(expr)                                               \
  do {                                                                     \
    auto smelt_status_ = (expr);                                           \
    if (!smelt_status_.ok()) return smelt_status_.error();                 \
  } while (0)
