// The scheduler's output: a Plan for one global batch. A plan is a value;
// every rank computes the same plan from the same inputs.
//
// Layout: plan.ranks[dp_rank].micro_batches[i].sequences[k]. Every DP rank has
// the same number of micro-batches (ranks are padded with empty ones) so
// collectives never hang. Inside a micro-batch, each sequence is either
// distributed (sharded over all CP ranks; costs ceil(length / cp) tokens on
// every CP rank) or local on one CP rank (costs its whole length there).
#ifndef SKRULL_SCHEDULER_PLAN_H_
#define SKRULL_SCHEDULER_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace skrull::scheduler {

class CostModel;

// One sample of the global batch. `id` is its index in the global batch
// (0-based, as given to the scheduler); `length` its token count (> 0).
struct Sequence {
  int64_t id = 0;
  int64_t length = 0;
};

struct Topology {
  int dp = 1;  // data-parallel degree
  int cp = 1;  // context-parallel degree (ranks per CP group)
  int WorldSize() const { return dp * cp; }
};

inline constexpr int kDistributed = -1;

struct PlacedSequence {
  int64_t id = 0;
  int64_t length = 0;
  int cp_rank = kDistributed;  // kDistributed, or the CP rank holding it whole
  bool distributed() const { return cp_rank == kDistributed; }
};

struct MicroBatch {
  int dp_rank = 0;
  int index = 0;                          // position in the rank's micro-batch order
  std::vector<PlacedSequence> sequences;  // execution order
  // Derived per CP rank (size cp): tokens held and FLOPs executed.
  std::vector<int64_t> cp_rank_tokens;
  std::vector<double> cp_rank_flops;
  bool empty() const { return sequences.empty(); }
};

struct DpRankPlan {
  std::vector<MicroBatch> micro_batches;
};

struct RollbackCounts {
  int64_t dacp = 0;  // local sequences turned distributed to fit BucketSize
  int64_t gds = 0;   // micro-batches added because a batching did not fit
};

struct Plan {
  std::string policy;
  Topology topology;
  int64_t bucket_size_tokens = 0;
  std::vector<DpRankPlan> ranks;  // size topology.dp
  RollbackCounts rollbacks;
  double schedule_seconds = 0.0;  // wall time the scheduler took (not part of equality)

  int NumMicroBatches() const {
    return ranks.empty() ? 0 : static_cast<int>(ranks[0].micro_batches.size());
  }
  // Human-readable per-rank table.
  std::string DebugString() const;
};

// Checks a plan against its inputs: every sequence placed exactly once, no CP
// rank above bucket_size_tokens, equal micro-batch counts, cp_rank in range,
// derived token counts consistent. Returns the first violation.
Status VerifyPlan(const Plan& plan, const std::vector<Sequence>& batch);

// Fills mb.cp_rank_tokens / mb.cp_rank_flops (size cp) from mb.sequences:
// a local sequence costs its length and FlopsPerSequence on its rank, a
// distributed one ShardTokens(length, cp) and FlopsSharded on every rank.
void FillDerived(MicroBatch& mb, int cp, const CostModel& cost);
// FillDerived on every micro-batch of the plan.
void FillDerived(Plan& plan, const CostModel& cost);

}  // namespace skrull::scheduler

#endif  // SKRULL_SCHEDULER_PLAN_H_
