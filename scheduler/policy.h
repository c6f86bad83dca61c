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
//
// Every policy is deterministic (ties broken by lowest index) and returns a
// plan that passes VerifyPlan.
#ifndef SKRULL_SCHEDULER_POLICY_H_
#define SKRULL_SCHEDULER_POLICY_H_

#include <string>
#include <vector>

#include "common/status.h"
#include "scheduler/cost_model.h"
#include "scheduler/hardware_profile.h"
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
};

// Schedules one global batch. Deterministic: the same inputs give the same
// plan (schedule_seconds aside) on every rank.
// Errors:
//   InvalidArgument     bucket_size_tokens <= 0, dp or cp < 1, a length <= 0,
//                       duplicate ids.
//   FailedPrecondition  a sequence longer than bucket_size_tokens x cp; the
//                       message names its id and length, the smallest CP that
//                       fits it at this BucketSize and the smallest BucketSize
//                       that fits it at this CP.
StatusOr<Plan> Schedule(Policy policy, const std::vector<Sequence>& global_batch,
                        const ScheduleOptions& options, const CostModel& cost);

// Tokens a distributed sequence of `length` costs on each of `cp` ranks.
inline int64_t ShardTokens(int64_t length, int cp) { return (length + cp - 1) / cp; }

}  // namespace skrull::scheduler

#endif  // SKRULL_SCHEDULER_POLICY_H_
