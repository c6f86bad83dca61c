#include "scheduler/deepspeed_bracket.h"

namespace skrull::scheduler {

std::vector<DeepSpeedHypothesis> DeepSpeedBracket() {
  GradientSyncOptions zero2;  // DeepSpeed v0.16.4's ZeRO-2 defaults (header)
  zero2.zero_stage = 2;
  zero2.dtype = GradReduceDtype::kBf16;
  zero2.stage2_all_reduce = true;
  zero2.overlap_with_backward = false;
  GradientSyncOptions sp = zero2;
  sp.dtype = GradReduceDtype::kFp32;
  GradientSyncOptions once;
  once.zero_stage = 1;
  once.dtype = GradReduceDtype::kBf16;
  return {
      {"A", "1 sequence/micro-step, ZeRO-2 bf16 all-reduce after every backward, compute stream",
       Policy::kDeepSpeed, 1, zero2},
      {"A-sp", "A with sequence parallelism's fp32 gradient communication", Policy::kDeepSpeed, 1,
       sp},
      {"C", "1 sequence/micro-step, one bf16 reduction per step (overlapped)", Policy::kDeepSpeed,
       1, once},
      {"B", "packed micro-batches up to BucketSize (cp-all), A's reduction", Policy::kCpAll, 1,
       zero2},
  };
}

}  // namespace skrull::scheduler
