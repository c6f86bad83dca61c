// The `deepspeed` policy: the Skrull paper's baseline (§5, DeepSpeed ZeRO-2
// with context parallelism) as long-context SFT runs it, with
// train_micro_batch_size_per_gpu = micro_batch_size and gradient
// accumulation over the rest of the DP rank's batch:
//   - dataset order, contiguous DP split (ContiguousSplit);
//   - each DP rank's sequences cut in order into micro-batches of at most
//     `micro_batch_size` sequences; a micro-batch also closes early when the
//     next sequence's shard would take it past BucketSize (the real
//     DeepSpeed would run out of memory there; the plan stays valid);
//   - every sequence sharded over the whole CP group.
// The simulator prices it at ZeRO-2 (simulator.h, PricingZeroStage).
// Private to scheduler/.
#ifndef SKRULL_SCHEDULER_DEEPSPEED_H_
#define SKRULL_SCHEDULER_DEEPSPEED_H_

#include <cstdint>
#include <vector>

#include "scheduler/packing.h"
#include "scheduler/plan.h"

namespace skrull::scheduler {

// One DP rank's micro-batches (see above), in order.
// REQUIRES: micro_batch_size >= 1, every ShardTokens(length, cp) <= bucket_size_tokens.
SequenceGroups PackDeepSpeed(const std::vector<Sequence>& items, int micro_batch_size, int cp,
                             int64_t bucket_size_tokens);

// Fills plan.ranks (sized dp) with the policy's micro-batches of `batch`.
void ScheduleDeepSpeed(const std::vector<Sequence>& batch, int micro_batch_size, Plan& plan);

}  // namespace skrull::scheduler

#endif  // SKRULL_SCHEDULER_DEEPSPEED_H_
