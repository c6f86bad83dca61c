// Simulator: prices a Plan with the pricer (pricing.h: the time model of a
// micro-batch and of the gradient synchronisation) and runs every policy over
// batches sampled from a dataset's length distribution. A DP rank sums its
// micro-batches; an iteration adds the gradient synchronisation of the ZeRO
// stage the plan is priced at.
#ifndef SKRULL_SCHEDULER_SIMULATOR_H_
#define SKRULL_SCHEDULER_SIMULATOR_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "scheduler/cost_model.h"
#include "scheduler/hardware_profile.h"
#include "scheduler/plan.h"
#include "scheduler/policy.h"
#include "scheduler/pricing.h"

namespace skrull::scheduler {

// The ZeRO stage a policy is priced at: `deepspeed` is the paper's DeepSpeed
// ZeRO-2 baseline whatever is asked; every other policy runs at
// `requested_stage` (the trainer's spec.training.zeroStage).
int PricingZeroStage(Policy policy, int requested_stage);

struct IterationTime {
  double seconds = 0;  // the step with its gradient synchronisation (header comment)
  std::vector<double> dp_rank_seconds;  // per DP rank, without the all-reduce
  double comm_seconds = 0;              // on the slowest DP rank: CP comm + exposed all-reduce
  double compute_seconds = 0;           // on the slowest DP rank
  // The whole gradient reduction (GradientSync::reduce_seconds: an
  // all-reduce at stage 0, a reduce-scatter at stages 1 and 2).
  double all_reduce_seconds = 0;
  // seconds - slowest DP rank: the gradient synchronisation backward did not
  // hide (at stage 2 with the waits of the per-micro-batch meetings, at
  // stages 1 and 2 with the parameter all-gather).
  double exposed_all_reduce_seconds = 0;
};

// Prices one plan with a gradient synchronisation (pricing.h; its stage 0,
// 1 or 2 CHECKed).
IterationTime SimulatePlan(const Plan& plan, const CostModel& cost, const HardwareProfile& hw,
                           const GradientSyncOptions& sync);
// The same at a ZeRO stage with fp32 gradients overlapped with backward.
IterationTime SimulatePlan(const Plan& plan, const CostModel& cost, const HardwareProfile& hw,
                           int zero_stage = 0);

// The tight lower bound of one global batch (docs/scheduler.md): every sequence's
// work at the profile's best efficiency for its size (its dense layers at
// the best GEMM efficiency up to BucketSize rows, the most a rank's kernel
// holds; its attention at the best up to its whole length), perfectly
// balanced over all dp x cp GPUs, no communication, no launches; plus the
// element-wise and loss bytes of every token and the optimizer step, which
// every plan pays (zero without a memory bandwidth). Never above the time
// SimulatePlan gives any valid plan of this batch.
double TightLowerBoundSeconds(const std::vector<int64_t>& lengths, const Topology& topology,
                              int64_t bucket_size_tokens, const CostModel& cost,
                              const HardwareProfile& hw);

// A bound a schedule can reach. Compute R: the larger of
//   - every sequence's work at the profile's best efficiency (GEMMs,
//     attention at most at BucketSize query tokens: no rank holds more,
//     whole or as a shard; the element-wise and loss bytes of every token),
//     over all dp x cp GPUs, plus the launches of the fewest micro-batches
//     the tokens need per DP rank (LaunchCostPerMicroBatch, pricing.h: in
//     series with the work, or as each micro-batch's eager CPU floor);
//   - the longest sequence's critical path: its work spread over all cp
//     ranks of one CP group, the most it can be spread, plus one
//     micro-batch's launches.
// Then the gradient synchronisation no placement hides: a DP rank's
// micro-batches take T >= R and the one it runs last at most T, so
// (GradientSync::RankSeconds) an iteration takes at least
//   max(R + last_bucket, (1 - backward_fraction) x R + reduce)
// plus the parameter all-gather at ZeRO stages 1 and 2 (stage 2 meets at
// every micro-batch, each meeting at least this) and the optimizer step.
// Never above the time SimulatePlan gives any valid plan of this batch under
// `sync_options` (tests/scheduler/simulator_test.cc checks it on random
// batches).
double ReachableBoundSeconds(const std::vector<int64_t>& lengths, const Topology& topology,
                             int64_t bucket_size_tokens, const CostModel& cost,
                             const HardwareProfile& hw, const GradientSyncOptions& sync_options);
// The same with GradientSyncOptions' defaults at `zero_stage`.
double ReachableBoundSeconds(const std::vector<int64_t>& lengths, const Topology& topology,
                             int64_t bucket_size_tokens, const CostModel& cost,
                             const HardwareProfile& hw, int zero_stage = 0);

struct PolicyStats {
  double mean_iteration_seconds = 0;
  double tokens_per_second = 0;  // all tokens of all steps / all simulated seconds
  // Critical-path FLOPs of the slowest DP rank (sum over its micro-batches
  // of the busiest CP rank's FLOPs) over the mean per-GPU FLOPs; 1 = perfect
  // balance across both DP ranks and CP ranks. Mean over steps.
  double flops_imbalance = 0;
  int64_t rollbacks_dacp = 0;  // summed over steps
  int64_t rollbacks_gds = 0;
  double peak_tokens_fraction = 0;   // max over steps of (max CP-rank tokens / BucketSize)
  double mean_schedule_seconds = 0;  // wall time of Schedule()
};

// Most sequences one simulated global batch (dp x batch_size) may hold.
inline constexpr int64_t kMaxGlobalBatchSequences = int64_t{1} << 24;  // 16,777,216

struct SimulationOptions {
  Topology topology;
  int64_t bucket_size_tokens = 0;
  int batch_size = 0;  // sequences per DP rank per step
  int steps = 0;
  uint64_t seed = 0;
  std::vector<Policy> policies;  // empty = AllPolicies()
  // ZeRO stage the plans are priced at (0..kMaxPricedZeroStage);
  // `deepspeed` always at 2 (PricingZeroStage).
  int zero_stage = 0;
  // deepspeed's sequences per micro-batch (ScheduleOptions::micro_batch_size).
  int micro_batch_size = 1;
  // Element type of the gradient reduction, every policy
  // (spec.training.gradReduceDtype; GradientSyncOptions::dtype).
  GradReduceDtype grad_reduce_dtype = GradReduceDtype::kFp32;
};

struct SimulationReport {
  std::map<std::string, PolicyStats> policies;  // keyed by PolicyName
  // Per-iteration lower bound, averaged over steps: max(total hardware
  // FLOPs / world size, longest sequence's hardware FLOPs / cp) at peak.
  double lower_bound_seconds = 0;
  // TightLowerBoundSeconds, averaged over steps.
  double tight_bound_seconds = 0;
  // ReachableBoundSeconds at options.zero_stage and grad_reduce_dtype,
  // averaged over steps.
  double reachable_bound_seconds = 0;
  int steps = 0;
};

// Samples `steps` global batches of dp x batch_size sequences uniformly (with
// replacement) from `dataset_lengths` with std::mt19937_64(seed); every
// policy sees the same batches. Errors: empty dataset, bad options (the
// limits of policy.h, dp x batch_size over kMaxGlobalBatchSequences), or a
// policy's Schedule error (prefixed with the policy name and step).
StatusOr<SimulationReport> Simulate(const std::vector<int64_t>& dataset_lengths,
                                    const SimulationOptions& options, const CostModel& cost,
                                    const HardwareProfile& hw);

}  // namespace skrull::scheduler

#endif  // SKRULL_SCHEDULER_SIMULATOR_H_
