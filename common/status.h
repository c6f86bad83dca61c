// Status and StatusOr<T>: how Skrull reports errors from user input and the
// environment (YAML, files, weights, flags, HTTP, rendezvous). Broken
// invariants are bugs and use SKRULL_CHECK instead.
//
// A message names what was wrong, where (file, line, field path) and the fix:
//   "spec.parallelism.contextParallel: must be >= 1 (got 0)".
//
// Thread safety: values; safe to copy across threads.
#ifndef SKRULL_COMMON_STATUS_H_
#define SKRULL_COMMON_STATUS_H_

#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

namespace skrull {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // bad user input: flags, YAML, data, weights
  kNotFound,            // a file or resource that should exist does not
  kFailedPrecondition,  // input is well-formed but cannot be served (e.g. too long)
  kResourceExhausted,   // memory / BucketSize would be exceeded
  kOutOfMemory,         // an allocation failed (the CUDA caching allocator ran out)
  kIoError,             // the OS refused a read/write
  kUnavailable,         // a peer or service did not answer (rendezvous, HTTP)
  kInternal,            // a bug surfaced as an error at a boundary (e.g. libtorch threw)
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: <message>" or "OK".
  std::string ToString() const;

  // Returns a copy whose message is "<context>: <message>" (for adding a file
  // name or field path as an error travels up).
  Status WithContext(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status OkStatus() { return Status(); }
inline Status InvalidArgumentError(std::string m) {
  return Status(StatusCode::kInvalidArgument, std::move(m));
}
inline Status NotFoundError(std::string m) { return Status(StatusCode::kNotFound, std::move(m)); }
inline Status FailedPreconditionError(std::string m) {
  return Status(StatusCode::kFailedPrecondition, std::move(m));
}
inline Status ResourceExhaustedError(std::string m) {
  return Status(StatusCode::kResourceExhausted, std::move(m));
}
inline Status OutOfMemoryError(std::string m) {
  return Status(StatusCode::kOutOfMemory, std::move(m));
}
inline Status IoError(std::string m) { return Status(StatusCode::kIoError, std::move(m)); }
inline Status UnavailableError(std::string m) {
  return Status(StatusCode::kUnavailable, std::move(m));
}
inline Status InternalError(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }

std::ostream& operator<<(std::ostream& os, const Status& s);

// StatusOr<T>: a T or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  // REQUIRES: !status.ok().
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (status_.ok()) status_ = InternalError("StatusOr constructed from an OK status");
  }
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  // REQUIRES: ok(). Crashes with the error otherwise.
  const T& value() const& {
    CheckOk();
    return *value_;
  }
  T& value() & {
    CheckOk();
    return *value_;
  }
  T&& value() && {
    CheckOk();
    return std::move(*value_);
  }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  void CheckOk() const {
    if (!status_.ok()) {
      std::cerr << "StatusOr::value() on error: " << status_.ToString() << std::endl;
      std::abort();
    }
  }
  Status status_;
  std::optional<T> value_;
};

namespace internal {
[[noreturn]] void CheckFailed(const char* file, int line, const char* expr, const std::string& msg);

// Collects `SKRULL_CHECK(x) << "context"` text and aborts on destruction.
class CheckMessage {
 public:
  CheckMessage(const char* file, int line, const char* expr)
      : file_(file), line_(line), expr_(expr) {}
  [[noreturn]] ~CheckMessage() { CheckFailed(file_, line_, expr_, stream_.str()); }
  std::ostream& stream() { return stream_; }

 private:
  const char* file_;
  int line_;
  const char* expr_;
  std::ostringstream stream_;
};
// Lets `cond ? (void)0 : Voidify() & stream` compile.
struct Voidify {
  void operator&(std::ostream&) {}
};
}  // namespace internal

}  // namespace skrull

// Invariant check: aborts with file, line, expression and any streamed context.
#define SKRULL_CHECK(cond)                 \
  (cond) ? (void)0                         \
         : ::skrull::internal::Voidify() & \
               ::skrull::internal::CheckMessage(__FILE__, __LINE__, #cond).stream()

#define SKRULL_STATUS_CONCAT_INNER_(a, b) a##b
#define SKRULL_STATUS_CONCAT_(a, b) SKRULL_STATUS_CONCAT_INNER_(a, b)

// Returns the Status from the enclosing function if `expr` is not OK.
#define SKRULL_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::skrull::Status _skrull_status = (expr);        \
    if (!_skrull_status.ok()) return _skrull_status; \
  } while (0)

// `SKRULL_ASSIGN_OR_RETURN(auto x, MakeX());` or `(x, MakeX())` for an existing x.
#define SKRULL_ASSIGN_OR_RETURN(lhs, expr) \
  SKRULL_ASSIGN_OR_RETURN_IMPL_(SKRULL_STATUS_CONCAT_(_skrull_or_, __LINE__), lhs, expr)
#define SKRULL_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(tmp).value()

#endif  // SKRULL_COMMON_STATUS_H_
