// Scheduling policies: one global batch of sequence lengths -> a Plan.
//
//   skrull       GDS + DACP, cost-aware: the paper's plan and alternatives
//                (shard the longest sequences, tighter packings, static CP's
//                DP split) priced with the simulator's time model; the
//                cheapest wins (gds.h). Never estimated slower than cp-all,
//                balanced-cp or skrull-paper under the same HardwareProfile.
//   skrull-paper GDS + DACP exactly as the paper's algorithms (with the
//                corrections in the notes); kept for comparison.
//   cp-all       dataset order, contiguous DP split, greedy packing, every
//                sequence distributed (DeepSpeed / Megatron static CP).
//   sorted       LongAlign sorted batching: sort by length, contiguous DP
//                groups, greedy packing, every sequence distributed.
//   balanced-cp  LPT FLOPs-balanced DP bins, first-fit-decreasing packing,
//                every sequence distributed (WLB / Megatron dp_balanced).
//   round-robin  GDS + the paper's memory-only round-robin DACP (App. B.2).
//   deepspeed    the paper's DeepSpeed baseline: dataset order, contiguous DP
//                split, micro-batches of up to micro_batch_size sequences,
//                every sequence distributed (deepspeed.h); the simulator
//                prices it at ZeRO-2.
//   dynamic-cp   Megatron-Core's dynamic CP: each sequence on the smallest
//                power-of-two CP group that holds it, micro-batches
//                balanced over all dp x cp GPUs (dynamic_cp.h).
//   local-if-fits  a sequence that fits BucketSize runs whole on one GPU
//                (LPT over all dp x cp GPUs); only the rest are sharded
//                (local_if_fits.h).
//
// Every policy is deterministic (ties broken by lowest index) and returns a
// plan that passes VerifyPlan.
#ifndef SKRULL_SCHEDULER_POLICY_H_
#define SKRULL_SCHEDULER_POLICY_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "scheduler/cost_model.h"
#include "scheduler/hardware_profile.h"
#include "scheduler/limits.h"
#include "scheduler/plan.h"
#include "scheduler/policy_name.h"

namespace skrull::scheduler {

// Policy and PolicyName: policy_name.h.
// Inverse of PolicyName; an unknown name is InvalidArgument listing the valid ones.
StatusOr<Policy> ParsePolicy(const std::string& name);
// Every policy, in enum order.
std::vector<Policy> AllPolicies();

struct ScheduleOptions {
  Topology topology;
  int64_t bucket_size_tokens = 0;  // C: most tokens one CP rank may hold
  // Time model for the cost-aware steps of `skrull` (not owned; must
  // outlive the call). Null uses H100Profile(). Other policies ignore it.
  const HardwareProfile* hardware = nullptr;
  // Threads `skrull`'s GDS may schedule DP ranks on (large batches only;
  // gds.h). 0 = DefaultSchedulerThreads(). The plan does not depend on it.
  int threads = 0;
  // deepspeed only: most sequences per micro-batch (DeepSpeed's
  // train_micro_batch_size_per_gpu; spec.scheduler.microBatchSize). Must be
  // >= 1 for deepspeed (InvalidArgument otherwise); other policies ignore it.
  int micro_batch_size = 1;
  // `skrull` only: also consider sharding sequences over aligned CP
  // sub-groups of 2, 4, ... ranks (GdsOptions::sub_groups). false gives
  // skrull's plans with every distributed sequence over all CP ranks.
  bool sub_groups = true;
  // `skrull` only: also price local-if-fits' and dynamic-cp's whole plans
  // and keep the fastest (policy.cc), on batches of fewer than
  // kMaxRivalSequences. false gives GDS + DACP's plan alone.
  bool adopt_rivals = true;
};

// skrull prices its rivals' plans only below this many sequences: dynamic-cp
// alone takes ~0.4 s of CPU on 65,536 ChatQA2 sequences over 512 x 8 GPUs
// (bench_scheduler_cost --case large --policy dynamic-cp), past the 100 ms
// budget of a large batch (docs/performance.md).
inline constexpr size_t kMaxRivalSequences = 4096;

// What is wrong with a layout against the limits of limits.h ("topology: dp x cp =
// 4294967296 ranks exceeds the maximum 65536", bucket_size_tokens out of
// range, dp or cp < 1); empty when it is fine. Shared by Schedule and Simulate.
std::vector<std::string> LayoutProblems(const Topology& topology, int64_t bucket_size_tokens);

// Schedules one global batch. Deterministic: the same inputs give the same
// plan (schedule_seconds aside) on every rank.
// Errors:
//   InvalidArgument     deepspeed with micro_batch_size < 1,
//                       bucket_size_tokens <= 0 or > kMaxBucketSizeTokens, dp or
//                       cp < 1, dp x cp > kMaxWorldSize, a length <= 0 or >
//                       kMaxSequenceTokens, duplicate ids, a token sum over
//                       int64.
//   FailedPrecondition  a sequence whose shard over all cp ranks does not fit
//                       bucket_size_tokens (FitsCpGroup, layout.h); the
//                       message names its id and FitProblem: its length, a
//                       CP that fits it at this BucketSize and the smallest
//                       BucketSize that fits it at this CP.
StatusOr<Plan> Schedule(Policy policy, const std::vector<Sequence>& global_batch,
                        const ScheduleOptions& options, const CostModel& cost);

}  // namespace skrull::scheduler

#endif  // SKRULL_SCHEDULER_POLICY_H_
