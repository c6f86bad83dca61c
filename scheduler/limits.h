// The size limits the whole system shares: api/ validates a job spec against
// them (api/validate.cc, docs/job-spec.md) and the scheduler refuses larger
// inputs (Schedule, Simulate, skrull-plan; docs/scheduler.md), so a spec that
// validates is one the scheduler accepts. They keep every product formed
// from them (BucketSize x CP, a batch's token sum, dp x cp x micro-batches)
// inside int64 and the trainer's packed-batch offsets inside 32 bits.
#ifndef SKRULL_SCHEDULER_LIMITS_H_
#define SKRULL_SCHEDULER_LIMITS_H_

#include <cstdint>

namespace skrull::scheduler {

// The longest sequence: spec.data.maxLength and BucketSize x CP. The
// trainer's packed-batch offsets are 32-bit.
inline constexpr int64_t kMaxSequenceTokens = 2147483647;
// The most tokens one rank may hold (spec.scheduler.bucketSize): 1024M.
inline constexpr int64_t kMaxBucketSizeTokens = int64_t{1} << 30;
// DP x CP ranks (nodes x procsPerNode); also bounds DP and CP each.
inline constexpr int kMaxWorldSize = 65536;

}  // namespace skrull::scheduler

#endif  // SKRULL_SCHEDULER_LIMITS_H_
