// DACP (Skrull Algorithm 1): places the sequences of one micro-batch on one
// CP group of N ranks. Each sequence is either local (whole, on one rank) or
// distributed (sharded over all N ranks, or, with DacpOptions::sub_groups,
// over an aligned sub-group of 2^k ranks: plan.h ShardGroup). Works on
// remaining token budgets RB[r] (start: BucketSize C) and FLOPs loads L[r].
//
// Sequences are visited in ascending length (ties: lower index first):
//   1. local on the least-loaded rank (argmin L) if it fits there;
//   2. else local on the rank with the most room (argmax RB) if it fits;
//   3. else, with sub_groups, on the smallest aligned sub-group size
//      (2, 4, ... < N) at which some group's tightest rank holds a shard
//      (ShardTokens(S, size), layout.h), on the least-loaded such group (sum of L;
//      ties: lowest first rank);
//   4. else distributed over all N if the tightest rank (argmin RB) holds a
//      shard;
//   5. else roll back: the shortest local sequence on the tightest rank
//      becomes distributed over all N (frees its length minus a shard there,
//      costs a shard and its sharded FLOPs on every other rank; a rank pushed
//      below zero is rolled back in turn), then the same sequence is retried.
//      When that rank holds no local sequence, the shortest sequence on a
//      sub-group holding it is widened to all N instead. Fails when the rank
//      holds neither.
// Ties in argmin / argmax go to the lowest rank. The round-robin rule (App.
// B.2) skips step 1 (memory only).
//
// Pure functions; thread-compatible.
#ifndef SKRULL_SCHEDULER_DACP_H_
#define SKRULL_SCHEDULER_DACP_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace skrull::scheduler {

enum class DacpRule {
  kComputeBalanced,  // Skrull's Algorithm 1
  kRoundRobin,       // the paper's memory-only comparison (Algorithm 4)
};

struct DacpOptions {
  int cp = 1;                     // N
  double bucket_size_tokens = 0;  // C
  DacpRule rule = DacpRule::kComputeBalanced;
  // Step 3: shard over aligned sub-groups before falling back to all N.
  bool sub_groups = false;
  // FLOPs(S). REQUIRES: set.
  std::function<double(int64_t)> flops;
  // FLOPs(S, N) of one shard; unset = flops(S) / N.
  std::function<double(int64_t, int)> sharded_flops;
  // Tokens one shard costs on every rank; unset = ShardTokens(S, N) (layout.h:
  // the most any rank holds in the trainer's layout). The paper's worked
  // example uses S / N exactly.
  std::function<double(int64_t, int)> shard_tokens;
};

struct DacpResult {
  // Per input sequence (input order): its placement code (plan.h): the CP
  // rank, kDistributed (all N) or SubGroupCode(first, size).
  std::vector<int> placement;
  std::vector<double> remaining_tokens;  // RB per CP rank at the end
  std::vector<double> load_flops;        // L per CP rank at the end
  int64_t rollbacks = 0;                 // local sequences turned distributed
};

// Runs DACP on `lengths` (any order; each > 0). Returns nullopt when the
// micro-batch cannot be placed within the budget (a "DACP scheduling error",
// which GDS answers with one more micro-batch).
std::optional<DacpResult> RunDacp(const std::vector<int64_t>& lengths, const DacpOptions& options);

}  // namespace skrull::scheduler

#endif  // SKRULL_SCHEDULER_DACP_H_
