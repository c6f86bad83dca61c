// The scheduler's output: a Plan for one global batch. A plan is a value;
// every rank computes the same plan from the same inputs.
//
// Layout: plan.ranks[dp_rank].micro_batches[i].sequences[k]. Every DP rank has
// the same number of micro-batches (ranks are padded with empty ones) so
// collectives never hang. Inside a micro-batch, each sequence is either
// distributed (sharded over its CP group in the zig-zag layout of layout.h;
// costs each rank its chunks' tokens) or local on one CP rank (costs its whole
// length there).
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

// The CP ranks [first, first + size) a sequence runs on. size 1: local on
// rank `first`; size == cp: sharded over the whole CP group; otherwise an
// aligned sub-group (size a power of two in [2, cp), first % size == 0).
struct ShardGroup {
  int first = 0;
  int size = 1;
  bool Contains(int cp_rank) const { return cp_rank >= first && cp_rank < first + size; }
  bool operator==(const ShardGroup& o) const { return first == o.first && size == o.size; }
};

// True when [first, first + size) is an aligned sub-group of a CP group of
// `cp` ranks: size a power of two with 2 <= size < cp, first % size == 0,
// first + size <= cp.
bool IsAlignedSubGroup(int first, int size, int cp);

// The CP group sizes a sequence may run on, in increasing order: 1, the
// powers of two below cp, then cp. NextGroupSize(size, cp) is the next one
// after `size` (0 after cp); SmallestGroupSize the first whose shard
// (ShardTokens, layout.h) fits `bucket_size_tokens`, 0 when none does.
int NextGroupSize(int size, int cp);
int SmallestGroupSize(int64_t length, int cp, int64_t bucket_size_tokens);

// Placement codes, the scheduler's compact form of a sequence's ShardGroup
// (DACP results, GDS candidates, MicroBatchPricer): >= 0 local on that CP
// rank; kDistributed sharded over all CP ranks; <= -2 an aligned sub-group
// (SubGroupCode). REQUIRES for SubGroupCode: IsAlignedSubGroup(first, size, cp)
// for the cp at hand, or size == cp and first == 0 (returns kDistributed).
int SubGroupCode(int first, int size);
ShardGroup GroupOfCode(int code, int cp);

struct PlacedSequence {
  int64_t id = 0;
  int64_t length = 0;
  int cp_rank = kDistributed;  // kDistributed, or the CP rank holding it whole
  // Distributed only: 0 = sharded over all CP ranks, else the size of the
  // aligned sub-group [group_first, group_first + group_size).
  int group_size = 0;
  int group_first = 0;
  bool distributed() const { return cp_rank == kDistributed; }
  // True when distributed over fewer than all `cp` ranks.
  bool on_sub_group(int cp) const { return distributed() && group_size != 0 && group_size != cp; }
  // The ranks it runs on in a CP group of `cp` ranks.
  ShardGroup Group(int cp) const;
  // Its placement code (see SubGroupCode).
  int Code(int cp) const;
  // The sequence placed by `code`.
  static PlacedSequence FromCode(int64_t id, int64_t length, int code, int cp);
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
// rank above bucket_size_tokens in the exact zig-zag layout, equal
// micro-batch counts, cp_rank in range,
// sub-groups aligned (IsAlignedSubGroup) and only on distributed sequences,
// derived token counts consistent. Returns the first violation.
Status VerifyPlan(const Plan& plan, const std::vector<Sequence>& batch);

// Fills mb.cp_rank_tokens / mb.cp_rank_flops (size cp) from mb.sequences:
// a local sequence costs its length and FlopsPerSequence on its rank, a
// distributed one FlopsSharded(length, g) on each of the g ranks of its
// ShardGroup and, on group rank i, exactly the tokens its zig-zag chunks hold
// (ZigZagRankTokens, layout.h): cp_rank_tokens is what the trainer holds.
void FillDerived(MicroBatch& mb, int cp, const CostModel& cost);
// FillDerived on every micro-batch of the plan.
void FillDerived(Plan& plan, const CostModel& cost);

}  // namespace skrull::scheduler

#endif  // SKRULL_SCHEDULER_PLAN_H_
