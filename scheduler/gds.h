// GDS (Skrull Algorithm 2, corrected): splits a global batch over DP ranks
// and, per rank, into micro-batches that DACP then places on the CP group.
//
// Paper mode (GdsOptions::cost_aware = false):
//   bins = LPT bin-packing of the batch over dp ranks by FLOPs;
//   per rank: sort ascending; m = max(1, ceil(sum / (C*N)));
//   deal sub[j::m] for j < m; accept when every micro-batch has sum <= C*N
//   and DACP places it; else m += 1 (one GDS roll-back).
// Cost-aware mode (what Policy::kSkrull runs) keeps that search and prices
// alternatives with the pricer's time model (pricing.h, MicroBatchPricer), keeping
// the cheapest; ties keep the paper's choice:
//   - per micro-batch, DACP's placement vs "distribute the d longest, LPT
//     the rest onto ranks by FLOPs within BucketSize" for d = 0..16, a x1.25
//     ladder above, and d = K (static CP); with GdsOptions::sub_groups, when
//     a sequence exceeds BucketSize, also "the d longest over all ranks,
//     each other sequence on the least-loaded aligned group of the smallest
//     size its shard fits, widened w times" for d in {0, 1, 2, 4}, w in
//     {0, 1} (DACP with sub-groups is not priced: it won 0.001x for +26 ms
//     CPU on 65,536 ChatQA2 sequences, docs/scheduler.md);
//   - per DP rank, the deal at m (and m+1..m+extra_micro_batch_counts) vs
//     two tighter packings: FLOPs-balanced LPT under the shard capacity and
//     first-fit decreasing (balanced-cp's);
//   - the whole result vs static CP's plan (cp-all: contiguous DP split,
//     in-order packing, all distributed), by the slowest DP rank.
// Because static CP's and balanced CP's plans are among the candidates,
// kSkrull is never estimated slower than cp-all, balanced-cp or the paper's
// GDS + DACP under the HardwareProfile it is given.
// Ranks come back unpadded and without derived fields; Schedule pads every
// DP rank to the same micro-batch count and fills them.
#ifndef SKRULL_SCHEDULER_GDS_H_
#define SKRULL_SCHEDULER_GDS_H_

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "scheduler/cost_model.h"
#include "scheduler/dacp.h"
#include "scheduler/hardware_profile.h"
#include "scheduler/plan.h"

namespace skrull::scheduler {

struct GdsOptions {
  Topology topology;
  int64_t bucket_size_tokens = 0;
  DacpRule rule = DacpRule::kComputeBalanced;
  bool cost_aware = false;
  // Extra micro-batch counts priced above the fewest feasible one (cost-aware
  // only). 0 by default: on the paper's settings (bench_scheduler_policies)
  // 2 extra counts changed no result and doubled the scheduling time.
  int extra_micro_batch_counts = 0;
  // Cost-aware only: also price placements on aligned CP sub-groups (see
  // above). The placements without sub-groups stay candidates, so turning
  // this on never makes an estimate slower.
  bool sub_groups = false;
  const HardwareProfile* hardware = nullptr;  // REQUIRES: set when cost_aware
  // Threads scheduling DP ranks concurrently on batches of at least
  // kParallelMinSequences sequences; 0 = DefaultSchedulerThreads()
  // (parallel_for.h). The result does not depend on it.
  int threads = 0;
};

// Batches smaller than this are scheduled on the calling thread only.
inline constexpr size_t kParallelMinSequences = 4096;

struct GdsResult {
  std::vector<DpRankPlan> ranks;  // size dp; not padded, derived fields empty
  RollbackCounts rollbacks;
};

// REQUIRES: inputs validated (see Schedule) and every length <= C * N.
GdsResult RunGds(const std::vector<Sequence>& batch, const GdsOptions& options,
                 const CostModel& cost);

// Longest-processing-time bin packing: items in descending weight (ties:
// lower index first) each go to the bin with the smallest total (ties: lower
// bin). Returns item indices per bin, in the order they were added.
std::vector<std::vector<int>> LptBinPack(const std::vector<double>& weights, int bins);

// The interleaved deal: group j gets items j, j+m, j+2m, ... (Python sub[j::m]).
template <typename T>
std::vector<std::vector<T>> InterleavedDeal(const std::vector<T>& items, int m) {
  std::vector<std::vector<T>> groups(static_cast<size_t>(m));
  for (size_t i = 0; i < items.size(); ++i) groups[i % static_cast<size_t>(m)].push_back(items[i]);
  return groups;
}

}  // namespace skrull::scheduler

#endif  // SKRULL_SCHEDULER_GDS_H_
