// Overflow-checked int64 arithmetic for sizes built from user input (sequence
// lengths, BucketSize x CP, DP x CP ranks, DP x batch size). Each returns
// false instead of wrapping; `*out` is unspecified then.
#ifndef SKRULL_SCHEDULER_CHECKED_MATH_H_
#define SKRULL_SCHEDULER_CHECKED_MATH_H_

#include <cstdint>

namespace skrull::scheduler {

inline bool CheckedMul(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}

inline bool CheckedAdd(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}

// a * b when it is at most `max`; false when it is larger or overflows.
// REQUIRES: a, b >= 0.
inline bool MulAtMost(int64_t a, int64_t b, int64_t max, int64_t* out) {
  return CheckedMul(a, b, out) && *out <= max;
}

}  // namespace skrull::scheduler

#endif  // SKRULL_SCHEDULER_CHECKED_MATH_H_
