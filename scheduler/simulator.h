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
// last.
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
// of those ranks its shard (ceil(S / g) tokens, attention FLOPs / g at that
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

// The gradient all-reduce's share of an iteration (see the header comment).
struct GradientSync {
  double all_reduce_seconds = 0;   // the whole gradient, one all-reduce over the world
  double last_bucket_seconds = 0;  // the bucket launched after the last backward ends
  double backward_fraction = 0;    // of a micro-batch's time: backward (+ recompute)
  // One DP rank's iteration: its micro-batches take `rank_seconds` in all and
  // the one it runs last takes `last_micro_batch_seconds`. An iteration is
  // the maximum of this over DP ranks.
  double RankSeconds(double rank_seconds, double last_micro_batch_seconds) const;
};
GradientSync MakeGradientSync(const CostModel& cost, const HardwareProfile& hw, int world_size);

struct IterationTime {
  double seconds = 0;                     // max over DP ranks of GradientSync::RankSeconds
  std::vector<double> dp_rank_seconds;    // per DP rank, without the all-reduce
  double comm_seconds = 0;                // on the slowest DP rank: CP comm + exposed all-reduce
  double compute_seconds = 0;             // on the slowest DP rank
  double all_reduce_seconds = 0;          // the whole gradient all-reduce
  double exposed_all_reduce_seconds = 0;  // seconds - slowest DP rank: what backward did not hide
};

IterationTime SimulatePlan(const Plan& plan, const CostModel& cost, const HardwareProfile& hw);

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
};

struct SimulationReport {
  std::map<std::string, PolicyStats> policies;  // keyed by PolicyName
  // Per-iteration lower bound, averaged over steps: max(total hardware
  // FLOPs / world size, longest sequence's hardware FLOPs / cp) at peak.
  double lower_bound_seconds = 0;
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
