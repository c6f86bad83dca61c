// The runtime roll-back guard: the last check before a micro-batch runs.
//
// The scheduler bounds every CP rank by BucketSize using ShardTokens =
// ceil(S / cp) per distributed sequence, but the zig-zag layout the trainer
// runs can give a rank one more token than that (two rounded chunks), and a
// measured memory profile can call for a lower bound than BucketSize. Before
// a step's micro-batches run, the guard recomputes each CP rank's exact
// tokens (train::ZigZagShard) and, where a rank would exceed the limit,
// turns that rank's shortest local sequence into a distributed one (the same
// move as the DACP roll-back; with no local sequence there, the shortest
// sequence on a CP sub-group holding the rank is widened to all CP ranks),
// re-checking until the micro-batch fits. Each
// move is counted as a `runtime` roll-back. A micro-batch that does not fit
// even with everything distributed is ResourceExhausted, by name, instead of
// an out-of-memory crash.
//
// The guard is a pure function of the plan and the limit, so every rank that
// applies it with the same limit gets the same plan. Ranks must agree on the
// limit (take the minimum over the world when it comes from measured memory).
// Torch-free.
#ifndef SKRULL_TRAINER_DIST_RUNTIME_GUARD_H_
#define SKRULL_TRAINER_DIST_RUNTIME_GUARD_H_

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "scheduler/cost_model.h"
#include "scheduler/plan.h"

namespace skrull::dist {

// Tokens each CP rank holds for `mb` in the trainer's stream layout: its
// local sequences whole, plus its zig-zag shard of every distributed one.
std::vector<int64_t> ExactCpRankTokens(const scheduler::MicroBatch& mb, int cp);

// Tokens a rank can hold given measured memory: floor((capacity_bytes x
// (1 - safety_margin) - static_bytes - activation_intercept_bytes) /
// bytes_per_token); 0 when nothing fits. REQUIRES: bytes_per_token > 0.
int64_t MemoryLimitTokens(double capacity_bytes, double static_bytes,
                          double activation_intercept_bytes, double bytes_per_token,
                          double safety_margin);

struct RuntimeGuardResult {
  int64_t rollbacks = 0;                 // local sequences turned distributed
  std::vector<int64_t> rolled_back_ids;  // their sequence ids, in order
};

// Applies the guard to every micro-batch of every DP rank of `plan` with
// `limit_tokens` per CP rank. When `cost` is given, refreshes each changed
// micro-batch's derived tokens and FLOPs (scheduler::FillDerived); adds the
// roll-backs to nothing else (the caller counts them as `runtime`).
// ResourceExhausted: "micro-batch 2 of DP rank 0: CP rank 1 would hold 130
// tokens with every sequence distributed, above the limit of 128 ...".
StatusOr<RuntimeGuardResult> ApplyRuntimeGuard(scheduler::Plan* plan, int64_t limit_tokens,
                                               const scheduler::CostModel* cost = nullptr);

}  // namespace skrull::dist

#endif  // SKRULL_TRAINER_DIST_RUNTIME_GUARD_H_
