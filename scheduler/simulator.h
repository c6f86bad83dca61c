// Simulator: prices a Plan with a CostModel and a HardwareProfile, and runs
// every policy over batches sampled from a dataset's length distribution.
//
// Time model of one micro-batch on CP rank j (the paper's Eq. 2):
//   Time_j = max(comm, local_j) + dist_j
//   comm    = per layer: all-gather of the distributed sequences' K/V
//             (forward; again in backward when recomputing) + reduce-scatter
//             of dK/dV (backward), over the CP group
//   local_j = dense GEMMs of rank j's local tokens + causal attention of its
//             local sequences + kernel launches
//   dist_j  = dense GEMMs of rank j's shards + attention of the shards
// GEMM efficiency is read at the rank's total tokens in the micro-batch,
// attention efficiency at each sequence's (shard's) query length. A
// micro-batch takes its slowest CP rank; a DP rank sums its micro-batches
// (empty padding micro-batches cost nothing).
//
// Gradient all-reduce over all dp x cp ranks, as the trainer runs it
// (trainer/dist/c10d_collectives.h): buckets of kGradientBucketBytes are
// launched during the backward of each DP rank's last non-empty
// micro-batch, and the bucket that completes last is launched when that
// backward ends. With T_r a DP rank's summed micro-batch time and B_r the
// backward part of its last micro-batch, the iteration is
//   max over r of max(T_r + last_bucket, T_r - B_r + all_reduce)
// (a collective completes only when the last rank has launched it). The
// cost-aware scheduler therefore runs each DP rank's costliest micro-batch
// last. That is ZeRO stage 0; the other stages (docs/scheduler.md):
//   stage 1  the same, with a reduce-scatter in place of the all-reduce,
//            then an all-gather of the updated parameters (bytes_per_param)
//            after the optimizer step, not hidden by anything;
//   stage 2  every micro-batch's gradients are reduce-scattered during its
//            own backward, as DeepSpeed's ZeRO-2 does (DeepSpeed issue 2252),
//            and the rank waits for them when the backward ends
//            (stage_1_and_2.py, independent_gradient_partition_epilogue:
//            synchronize under overlap_comm): the DP ranks meet at every
//            micro-batch, each paying the collective's latency. The step is
//            sum over micro-batch index i of max over DP ranks r of
//            max(t_ri + last_bucket, t_ri - B_ri + reduce_scatter) (a
//            padding micro-batch: reduce_scatter alone), plus stage 1's
//            parameter all-gather.
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

namespace skrull::scheduler {

struct MicroBatchTime {
  double seconds = 0;                   // slowest CP rank
  std::vector<double> cp_rank_seconds;  // Time_j per CP rank
  double comm_seconds = 0;              // CP K/V collectives of the slowest rank
  double compute_seconds = 0;           // compute on the slowest rank
};

// Prices one micro-batch run by a CP group of `cp` ranks.
MicroBatchTime SimulateMicroBatch(const MicroBatch& mb, int cp, const CostModel& cost,
                                  const HardwareProfile& hw);
// Prices placements of one fixed set of sequences, caching the per-sequence
// terms (the cost-aware scheduler prices many placements of one micro-batch).
// A sequence on a ShardGroup of g ranks (placement codes, plan.h) costs each
// of those ranks its shard (ShardTokens(S, g) tokens, layout.h; attention FLOPs / g at that
// query length); each group with distributed sequences runs its own K/V
// all-gather and dK/dV reduce-scatter over its g ranks, per layer, on the
// T tokens of its sequences. On CP rank j:
//   comm_j = sum over the groups holding j (at most one per size) of
//            layers x (gathers x AllGather(kv x T, g) + ReduceScatter(kv x T, g))
//   Time_j = max(comm_j, local_j) + dist_j
// Thread-compatible: Price() reuses scratch buffers.
class MicroBatchPricer {
 public:
  MicroBatchPricer(std::vector<int64_t> lengths, int cp, const CostModel& cost,
                   const HardwareProfile& hw);
  // placement[k]: the placement code of lengths[k] (plan.h: a CP rank,
  // kDistributed, or SubGroupCode).
  MicroBatchTime Price(const std::vector<int>& placement) const;
  // Price(placement).seconds without the per-rank breakdown.
  double Seconds(const std::vector<int>& placement) const;

 private:
  // Fills `out`; fills out->cp_rank_seconds only when it is sized cp.
  void Evaluate(const std::vector<int>& placement, MicroBatchTime* out) const;
  // Shard attention seconds of sequence k on a group of size_levels_[level].
  double ShardAttentionSeconds(size_t k, size_t level) const;
  // Index into size_levels_ of a group of `size` ranks.
  size_t Level(int size) const;
  // Per layer, one group of `size` ranks exchanging `tokens` tokens' K/V.
  double GroupCommSeconds(int64_t tokens, int size) const;

  std::vector<int64_t> lengths_;
  int cp_;
  const HardwareProfile& hw_;
  double layers_ = 0, kv_bytes_per_token_ = 0, gathers_ = 0;
  double linear_flops_per_token_ = 0, launch_seconds_ = 0;
  std::vector<double> local_attention_seconds_, attention_flops_;
  std::vector<double> all_shard_attention_seconds_;  // sharded over all cp ranks
  // Group sizes: 2, 4, ... below cp, then cp. Group slot of (first, size):
  // slot_offset_[level] + first / size.
  std::vector<int> size_levels_;
  std::vector<size_t> slot_offset_;
  mutable std::vector<double> shard_attention_seconds_;  // [k * levels + level]; < 0: unset
  mutable std::vector<int64_t> local_tokens_, shard_tokens_, group_tokens_;
  mutable std::vector<double> slot_seconds_;  // per group slot: its exchange's seconds
  mutable std::vector<double> local_attention_, shard_attention_;
};

// The same model on raw inputs: placement[k] is the placement code (plan.h)
// of the sequence of lengths[k]. REQUIRES: equal sizes, codes valid for cp.
MicroBatchTime SimulatePlacement(const std::vector<int64_t>& lengths,
                                 const std::vector<int>& placement, int cp, const CostModel& cost,
                                 const HardwareProfile& hw);

// The trainer's gradient bucket size (GradientReducer's default, as PyTorch DDP).
inline constexpr double kGradientBucketBytes = 25 << 20;

// ZeRO stages the simulator prices (see the header comment).
inline constexpr int kMaxPricedZeroStage = 2;

// The ZeRO stage a policy is priced at: `deepspeed` is the paper's DeepSpeed
// ZeRO-2 baseline whatever is asked; every other policy runs at
// `requested_stage` (the trainer's spec.training.zeroStage).
int PricingZeroStage(Policy policy, int requested_stage);

// The gradient synchronisation's share of an iteration (see the header
// comment).
struct GradientSync {
  int zero_stage = 0;
  // The whole gradient reduced once over the world: an all-reduce at stage
  // 0, a reduce-scatter at stages 1 and 2 (where it runs once per micro-batch).
  double reduce_seconds = 0;
  double last_bucket_seconds = 0;  // the bucket launched after a backward ends
  double backward_fraction = 0;    // of a micro-batch's time: backward (+ recompute)
  // Stages 1 and 2: all-gather of the updated parameters after the step.
  double parameter_all_gather_seconds = 0;
  // Stages 0 and 1: one DP rank's iteration when its micro-batches take
  // `rank_seconds` in all and the one it runs last takes
  // `last_micro_batch_seconds`, before the parameter all-gather. An iteration
  // is the maximum of this over DP ranks.
  double RankSeconds(double rank_seconds, double last_micro_batch_seconds) const;
  // Stage 2: one micro-batch of `micro_batch_seconds` with its own gradient
  // reduce-scatter (0 seconds: a padding micro-batch, the collective alone).
  double MicroBatchSeconds(double micro_batch_seconds) const;
};
// REQUIRES: 0 <= zero_stage <= kMaxPricedZeroStage.
GradientSync MakeGradientSync(const CostModel& cost, const HardwareProfile& hw, int world_size,
                              int zero_stage = 0);

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

// Prices one plan at a ZeRO stage (0, 1 or 2; CHECKed).
IterationTime SimulatePlan(const Plan& plan, const CostModel& cost, const HardwareProfile& hw,
                           int zero_stage = 0);

// The tight lower bound of one global batch (docs/scheduler.md): every sequence's
// work at the profile's best efficiency for its size (its dense layers at
// the best GEMM efficiency up to BucketSize rows, the most a rank's kernel
// holds; its attention at the best up to its whole length), perfectly
// balanced over all dp x cp GPUs, no communication, no launches. Never above
// the time SimulatePlan gives any valid plan of this batch.
double TightLowerBoundSeconds(const std::vector<int64_t>& lengths, const Topology& topology,
                              int64_t bucket_size_tokens, const CostModel& cost,
                              const HardwareProfile& hw);

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
};

struct SimulationReport {
  std::map<std::string, PolicyStats> policies;  // keyed by PolicyName
  // Per-iteration lower bound, averaged over steps: max(total hardware
  // FLOPs / world size, longest sequence's hardware FLOPs / cp) at peak.
  double lower_bound_seconds = 0;
  // TightLowerBoundSeconds, averaged over steps.
  double tight_bound_seconds = 0;
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
