// The `dynamic-cp` policy: Megatron-Core's dynamic (hybrid) context
// parallelism, as its scheduler does it (NVIDIA/Megatron-LM,
// megatron/core/datasets/data_schedule_utils.py: dcp_gpus_needed,
// next_hdp_group, fill_empty_gpus; used by DefaultDynamicCPScheduler in
// megatron/core/datasets/data_schedule.py, at commit 00c51e1), on a fixed
// DP x CP plan:
//   - each sequence runs on the smallest CP group that holds it: one GPU, an
//     aligned power-of-two sub-group, or the whole CP group
//     (SmallestGroupSize, plan.h; Megatron: 2^ceil(log2(S / C)));
//   - micro-batches are formed over all dp x cp GPUs at once, longest
//     sequence first. A sequence opens a group on the first free aligned slot
//     of its size; when none is free it joins the least-loaded open group of
//     its size that still has room (next_hdp_group: a free slot's load is
//     0, so it always wins). A sequence that fits nowhere waits for the next
//     micro-batch;
//   - a micro-batch closes when nothing more fits, or, once a sequence
//     needing a smaller group than the micro-batch's first has been placed,
//     when every GPU's load is within 5% of the busiest (next_hdp_group's
//     delta = 0.05);
//   - then GPUs left empty are filled by widening a group to the next size
//     when the rest of that aligned block is free, smallest groups first
//     (fill_empty_gpus doubles the smallest group);
//   - micro-batch i of the plan is the i-th such micro-batch on every DP
//     rank (a DP rank with no work in it gets an empty micro-batch).
// Deviations, each in the baseline's favour or forced by the grid: loads
// are the cost model's FLOPs per GPU (FlopsPerSequence / group size) where
// Megatron estimates S^2 / size (attention only, which misjudges short
// sequences); groups never span DP ranks (Megatron draws them from the whole
// DP x CP pool and may move groups to widen one; with a power-of-two cp an
// aligned group never crosses a DP rank anyway); memory is exact zig-zag
// shard tokens (ShardTokens) against BucketSize.
// Private to scheduler/.
#ifndef SKRULL_SCHEDULER_DYNAMIC_CP_H_
#define SKRULL_SCHEDULER_DYNAMIC_CP_H_

#include <vector>

#include "scheduler/cost_model.h"
#include "scheduler/plan.h"

namespace skrull::scheduler {

// Fills plan.ranks (sized topology.dp) with the policy's micro-batches.
// REQUIRES: plan.topology and plan.bucket_size_tokens set, every sequence
// FitsCpGroup (layout.h).
void ScheduleDynamicCp(const std::vector<Sequence>& batch, const CostModel& cost, Plan& plan);

}  // namespace skrull::scheduler

#endif  // SKRULL_SCHEDULER_DYNAMIC_CP_H_
