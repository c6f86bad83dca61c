// Packing helpers for the all-distributed baselines (cp-all, sorted,
// balanced-cp). A micro-batch of distributed sequences fits a CP group when
// the sum of their shards, ShardTokens(length, cp), is at most BucketSize on
// every rank.
#ifndef SKRULL_SCHEDULER_PACKING_H_
#define SKRULL_SCHEDULER_PACKING_H_

#include <cstdint>
#include <vector>

#include "scheduler/plan.h"

namespace skrull::scheduler {

using SequenceGroups = std::vector<std::vector<Sequence>>;

// Splits `items` into `parts` contiguous runs whose sizes differ by at most
// one (the first items.size() % parts runs get the extra one).
SequenceGroups ContiguousSplit(const std::vector<Sequence>& items, int parts);

// Packs in the given order: a new micro-batch starts when the next sequence's
// shard would push the current one past `bucket_size_tokens`.
// REQUIRES: every ShardTokens(length, cp) <= bucket_size_tokens.
SequenceGroups PackInOrder(const std::vector<Sequence>& items, int cp, int64_t bucket_size_tokens);

// First-fit decreasing by length (ties: lower id first) into micro-batches
// of `bucket_size_tokens` shard tokens; micro-batches keep creation order.
SequenceGroups PackFirstFitDecreasing(const std::vector<Sequence>& items, int cp,
                                      int64_t bucket_size_tokens);

// Builds a DP rank's micro-batches with every sequence distributed.
std::vector<MicroBatch> AllDistributed(const SequenceGroups& groups, int dp_rank);

}  // namespace skrull::scheduler

#endif  // SKRULL_SCHEDULER_PACKING_H_
