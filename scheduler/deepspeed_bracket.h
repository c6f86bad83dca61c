// The Skrull paper's DeepSpeed baseline (§5: DeepSpeed ZeRO-2 with context
// parallelism) as named hypotheses. The paper does not say how its baseline
// formed micro-batches or synchronised gradients, so docs/performance.md
// reports skrull against each of these instead of one number:
//   A     one sequence per micro-step (`deepspeed`, micro-batch size 1);
//         ZeRO-2 with DeepSpeed v0.16.4's defaults: after every backward the
//         gradient buckets are all-reduced over the world
//         (use_multi_rank_bucket_allreduce, stage_1_and_2.py lines 119 and
//         1127-1137) in bf16 (communication_data_type falls back to the
//         training dtype, engine.py lines 938-950), on the compute stream
//         (overlap_comm false below stage 3, zero/config.py lines 134 and
//         351-354);
//   A-sp  A with DeepSpeed sequence parallelism, which communicates in fp32
//         (seq_parallel_communication_data_type, constants.py line 253,
//         engine.py lines 1279-1280; stage_1_and_2.py lines 1497-1498);
//   C     one sequence per micro-step, one bf16 reduction per step overlapped
//         with the last backward (ZeRO-1 style);
//   B     packed micro-batches up to BucketSize (`cp-all`), A's reduction.
// Each names a plan (policy, micro-batch size) and a gradient
// synchronisation (pricing.h); the bench prices skrull's plans with the same
// synchronisation, as the paper built Skrull on the same DeepSpeed.
#ifndef SKRULL_SCHEDULER_DEEPSPEED_BRACKET_H_
#define SKRULL_SCHEDULER_DEEPSPEED_BRACKET_H_

#include <string>
#include <vector>

#include "scheduler/policy.h"
#include "scheduler/pricing.h"

namespace skrull::scheduler {

struct DeepSpeedHypothesis {
  std::string name;         // "A", "A-sp", "C", "B"
  std::string description;  // one line
  Policy policy = Policy::kDeepSpeed;
  int micro_batch_size = 1;  // ScheduleOptions::micro_batch_size (deepspeed only)
  GradientSyncOptions sync;
};

// A, A-sp, C, B in that order.
std::vector<DeepSpeedHypothesis> DeepSpeedBracket();

}  // namespace skrull::scheduler

#endif  // SKRULL_SCHEDULER_DEEPSPEED_BRACKET_H_
