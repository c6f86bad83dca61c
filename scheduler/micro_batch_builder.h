// MicroBatchBuilder: turns a scheduler Plan plus the global batch's tokens
// into the packed token stream one rank (dp_rank, cp_rank) computes in each
// micro-batch. Torch-free.
//
// Stream layout of one micro-batch on CP rank r (no padding anywhere):
//
//   [ local seq a | local seq b | ... | shard of dist seq x | shard of dist seq y | ... ]
//   ^0                                ^local_tokens                                   ^tokens
//
// - Local sequences (placed whole on this CP rank) come first, in plan order,
//   each with positions 0..len-1; `local_cu_seqlens` delimits them.
// - Each distributed sequence is sharded over its ShardGroup (plan.h): all
//   cp ranks, or an aligned sub-group of g = 2^k ranks starting at rank f, in
//   the zig-zag layout of layout.h: group rank i (CP rank f + i) holds
//   ZigZagShard(S, g, i), chunk i then chunk 2g-1-i, with their GLOBAL
//   positions (for RoPE and the causal mask).
// - A rank's shards are ordered by group size (smallest first), then plan
//   order. A rank belongs to one aligned group of each size, so the shards of
//   one group form one contiguous region in every member's stream: the
//   region the group's K/V exchange gathers.
// - With cp == 1 every sequence is local (a "distributed" sequence on one
//   rank is just a whole sequence).
//
// Every rank of a CP group can compute every other rank's layout from the
// same plan, so each DistributedSegment records all CP ranks' chunks and
// where they sit in those ranks' streams: the CP attention all-gathers K/V of
// the distributed region and reassembles each sequence in position order.
//
// A rank's stream holds exactly the tokens FillDerived charges it
// (MicroBatch::cp_rank_tokens), so a plan's BucketSize bound is the stream's.
//
// Thread safety: pure functions of their arguments.
#ifndef SKRULL_SCHEDULER_MICRO_BATCH_BUILDER_H_
#define SKRULL_SCHEDULER_MICRO_BATCH_BUILDER_H_

#include <array>
#include <cstdint>
#include <vector>

#include "common/status.h"
#include "scheduler/layout.h"
#include "scheduler/plan.h"

namespace skrull::scheduler {

// Label value that contributes no loss (Hugging Face convention).
inline constexpr int64_t kIgnoreLabel = -100;

// The tokens of one global-batch sequence, borrowed from the caller.
// `targets` are already shifted: targets[i] is the label predicted at
// position i (kIgnoreLabel = no loss).
struct SequenceTokens {
  const int32_t* input_ids = nullptr;
  const int32_t* targets = nullptr;
  int64_t length = 0;
};

// One zig-zag chunk as placed in a rank's stream.
struct ShardChunk {
  TokenRange positions;       // global positions inside the sequence
  int64_t stream_offset = 0;  // index of positions.begin in that rank's stream
};

// A distributed sequence of a micro-batch as every rank of its group holds it.
struct DistributedSegment {
  int64_t seq_id = 0;  // id in the global batch (Sequence::id)
  int64_t length = 0;  // whole sequence, tokens
  // The CP ranks it is sharded over: [group_first, group_first + group_size).
  int group_first = 0;
  int group_size = 0;
  // rank_chunks[i] = the two chunks CP rank group_first + i holds, in its
  // stream order (size group_size).
  std::vector<std::array<ShardChunk, 2>> rank_chunks;

  // Tokens CP rank `cp_rank` (a member of the group) holds.
  int64_t RankTokens(int cp_rank) const {
    const auto& c = rank_chunks[cp_rank - group_first];
    return c[0].positions.size() + c[1].positions.size();
  }
  const std::array<ShardChunk, 2>& Chunks(int cp_rank) const {
    return rank_chunks[cp_rank - group_first];
  }
};

// What one rank computes in one micro-batch.
struct RankStream {
  int dp_rank = 0;
  int cp_rank = 0;
  int micro_batch = 0;  // index in the rank's micro-batch order
  // Packed stream, one entry per token (size == tokens).
  std::vector<int64_t> input_ids;
  std::vector<int64_t> targets;    // kIgnoreLabel = no loss
  std::vector<int64_t> positions;  // 0-based; global positions for shards
  // Boundaries of the local sequences: {0, l0, l0+l1, ..., local_tokens}.
  // Always starts with 0 (so {0} when there is no local sequence).
  std::vector<int64_t> local_cu_seqlens;
  std::vector<int64_t> local_seq_ids;  // parallel to local_cu_seqlens' intervals
  // The distributed sequences whose group holds this rank, in stream order;
  // their shards follow the local tokens.
  std::vector<DistributedSegment> distributed;
  // Per CP rank of the group (size cp): where the distributed region starts in
  // that rank's stream (= its local tokens) and how many tokens it holds.
  std::vector<int64_t> rank_local_tokens;
  std::vector<int64_t> rank_distributed_tokens;
  int64_t local_tokens = 0;  // == local_cu_seqlens.back()
  int64_t tokens = 0;        // local tokens + this rank's shard tokens
  int64_t label_tokens = 0;  // targets != kIgnoreLabel

  bool empty() const { return tokens == 0; }
};

// Ids of the sequences whose tokens rank (dp_rank, cp_rank) needs for `plan`:
// its local sequences and every distributed sequence of its DP rank whose
// group holds it, in ascending order. REQUIRES: ranks in range.
std::vector<int64_t> NeededSequenceIds(const Plan& plan, int dp_rank, int cp_rank);

// Builds the rank's stream for every micro-batch of its DP rank (empty
// micro-batches give empty streams, so all ranks run the same count).
// `batch[id]` holds the tokens of sequence `id`; only the ids listed by
// NeededSequenceIds must be filled. A length differing from the plan's is
// FailedPrecondition (the data changed after it was indexed).
StatusOr<std::vector<RankStream>> BuildRankStreams(const Plan& plan,
                                                   const std::vector<SequenceTokens>& batch,
                                                   int dp_rank, int cp_rank);

}  // namespace skrull::scheduler

#endif  // SKRULL_SCHEDULER_MICRO_BATCH_BUILDER_H_
