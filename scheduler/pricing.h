// The pricer: what one micro-batch and a step's gradient synchronisation
// cost under a CostModel and a HardwareProfile. Below the policies: the
// cost-aware GDS (gds.h) prices its candidates here, and the simulator
// (simulator.h) prices whole plans with it.
//
// Time model of one micro-batch on CP rank j (the paper's Eq. 2):
//   Time_j = max(comm, local_j) + dist_j
//   comm    = per layer: all-gather of the distributed sequences' K/V
//             (forward; again in backward when recomputing) + reduce-scatter
//             of dK/dV (backward), over the CP group
//   local_j = dense GEMMs of rank j's local tokens + causal attention of its
//             local sequences + kernel launches
//   dist_j  = dense GEMMs of rank j's shards + attention of the shards
// The dense work of a rank is priced at its total tokens T in the
// micro-batch and shared between local tokens and shards by token count:
// every GEMM of CostModel::GemmShapes() with m = T (HardwareProfile::
// GemmSeconds: efficiency by m, tile quantization by (m, n), the roofline
// floor by (m, k, n)), plus the element-wise and loss bytes per token at HBM
// bandwidth; with a profile that prices no GEMM shape, the linear FLOPs at
// gemm_efficiency(T). Attention efficiency is read at each sequence's
// (shard's) query length. Eager execution: a rank's micro-batch takes at
// least its kernels x cpu_seconds_per_kernel (the host dispatching them). A
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
#ifndef SKRULL_SCHEDULER_PRICING_H_
#define SKRULL_SCHEDULER_PRICING_H_

#include <array>
#include <cstdint>
#include <vector>

#include "scheduler/cost_model.h"
#include "scheduler/hardware_profile.h"
#include "scheduler/plan.h"

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
  // Dense seconds of a rank holding `tokens` tokens (header comment),
  // through a small direct-mapped cache: the cost-aware scheduler prices
  // many placements whose ranks repeat token counts.
  double DenseSeconds(int64_t tokens) const;
  double ComputeDenseSeconds(int64_t tokens) const;

  const CostModel& cost_;
  double layers_ = 0, kv_bytes_per_token_ = 0, gathers_ = 0;
  double linear_flops_per_token_ = 0, launch_seconds_ = 0;
  double gemm_passes_ = 0, non_gemm_bytes_per_token_ = 0, cpu_floor_seconds_ = 0;
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
  static constexpr size_t kDenseCacheSlots = 64;
  mutable std::array<int64_t, kDenseCacheSlots> dense_cache_tokens_;
  mutable std::array<double, kDenseCacheSlots> dense_cache_seconds_;
};

// Host-side cost of the kernels one non-empty micro-batch launches on each
// CP rank holding tokens (forward + backward, and the recompute forward):
// `serial_seconds` (kernel_launch_seconds each) adds to the rank's GPU time;
// `cpu_floor_seconds` (cpu_seconds_per_kernel each, eager dispatch) is the
// least the rank's micro-batch takes whatever the GPU does. A profile sets
// one of the two per-kernel costs (hardware_profile.h): both count the same
// launches.
struct MicroBatchLaunchCost {
  double serial_seconds = 0;
  double cpu_floor_seconds = 0;
};
MicroBatchLaunchCost LaunchCostPerMicroBatch(const CostModel& cost, const HardwareProfile& hw);

// The same model on raw inputs: placement[k] is the placement code (plan.h)
// of the sequence of lengths[k]. REQUIRES: equal sizes, codes valid for cp.
MicroBatchTime SimulatePlacement(const std::vector<int64_t>& lengths,
                                 const std::vector<int>& placement, int cp, const CostModel& cost,
                                 const HardwareProfile& hw);

// The trainer's gradient bucket size (GradientReducer's default, as PyTorch DDP).
inline constexpr double kGradientBucketBytes = 25 << 20;

// ZeRO stages the simulator prices (see the header comment).
inline constexpr int kMaxPricedZeroStage = 2;

// How a step's gradients are synchronised (see the header comment).
struct GradientSyncOptions {
  int zero_stage = 0;  // 0..kMaxPricedZeroStage
  // The element type on the wire (spec.training.gradReduceDtype).
  GradReduceDtype dtype = GradReduceDtype::kFp32;
  // Stage 2: each micro-batch's reduction is an all-reduce of every bucket
  // over the world, each rank keeping its slice (DeepSpeed v0.16.4's default
  // use_multi_rank_bucket_allreduce, deepspeed/runtime/zero/stage_1_and_2.py
  // lines 119 and 1127-1137), instead of a reduce-scatter.
  bool stage2_all_reduce = false;
  // false: the reduction runs on the compute stream and hides behind no
  // backward (DeepSpeed's overlap_comm, which defaults to false below stage 3:
  // deepspeed/runtime/zero/config.py lines 134 and 351-354; average_tensor
  // uses the current stream then, stage_1_and_2.py lines 1051-1058).
  bool overlap_with_backward = true;
};

// The gradient synchronisation's share of an iteration (see the header
// comment).
struct GradientSync {
  int zero_stage = 0;
  // The whole gradient reduced once over the world: an all-reduce at stage
  // 0, a reduce-scatter at stages 1 and 2 (where it runs once per
  // micro-batch; an all-reduce under stage2_all_reduce), in options.dtype.
  double reduce_seconds = 0;
  double last_bucket_seconds = 0;  // the bucket launched after a backward ends
  // Of a micro-batch's time: backward (+ recompute); 0 when the reduction
  // does not overlap the backward.
  double backward_fraction = 0;
  // Stages 1 and 2: all-gather of the updated parameters after the step.
  double parameter_all_gather_seconds = 0;
  // Per-step fixed cost: the optimizer step's memory traffic
  // (CostModel::OptimizerStepBytes at memory_bytes_per_second).
  double optimizer_step_seconds = 0;
  // Stages 0 and 1: one DP rank's iteration when its micro-batches take
  // `rank_seconds` in all and the one it runs last takes
  // `last_micro_batch_seconds`, before the parameter all-gather. An iteration
  // is the maximum of this over DP ranks.
  double RankSeconds(double rank_seconds, double last_micro_batch_seconds) const;
  // Stage 2: one micro-batch of `micro_batch_seconds` with its own gradient
  // reduction (0 seconds: a padding micro-batch, the collective alone).
  double MicroBatchSeconds(double micro_batch_seconds) const;
};
// REQUIRES: 0 <= options.zero_stage <= kMaxPricedZeroStage.
GradientSync MakeGradientSync(const CostModel& cost, const HardwareProfile& hw, int world_size,
                              const GradientSyncOptions& options);
// The defaults of GradientSyncOptions at `zero_stage` (fp32, overlapped).
GradientSync MakeGradientSync(const CostModel& cost, const HardwareProfile& hw, int world_size,
                              int zero_stage = 0);

}  // namespace skrull::scheduler

#endif  // SKRULL_SCHEDULER_PRICING_H_
