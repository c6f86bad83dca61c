// The context-parallel layout: how a sequence is cut over a CP group, what
// each rank of the group holds, and whether a sequence fits a CP group at a
// BucketSize. The bottom of the scheduler: every file that sizes a shard
// includes this one and nothing else computes a shard (the scheduler charges
// ShardTokens; the MicroBatchBuilder lays tokens out with ZigZagShard; the
// trainer refuses an unplaceable sample with FitProblem).
//
// Zig-zag: a sequence of S tokens over a group of g ranks is cut into 2g
// near-equal contiguous chunks; chunk c covers global positions
// [floor(c*S/(2g)), floor((c+1)*S/(2g))). Group rank i holds chunk i, then
// chunk 2g-1-i, which balances causal attention work across the group. A
// rank's two chunks hold floor or ceil of S/(2g) tokens each, so the busiest
// rank can hold ceil(S/g) + 1 (S = 3, g = 4: rank 2 holds 2); ShardTokens is
// that exact maximum, so a plan charged with it never puts more than
// BucketSize tokens on a rank in the layout the trainer runs.
//
// Thread safety: pure functions of their arguments.
#ifndef SKRULL_SCHEDULER_LAYOUT_H_
#define SKRULL_SCHEDULER_LAYOUT_H_

#include <array>
#include <cstdint>
#include <string>

namespace skrull::scheduler {

// Half-open range [begin, end) of token positions inside one sequence.
struct TokenRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
  bool operator==(const TokenRange& o) const { return begin == o.begin && end == o.end; }
};

// Chunk `chunk` of the 2g zig-zag chunks of a sequence of `length` tokens
// over `group_size` = g ranks: [floor(chunk*length/(2g)),
// floor((chunk+1)*length/(2g))).
// REQUIRES: group_size >= 1, 0 <= chunk < 2*group_size, length >= 0, and
// 2 * group_size * length below 2^63 (any length the scheduler accepts).
TokenRange ZigZagChunk(int64_t length, int group_size, int chunk);

// The two chunks group rank `group_rank` holds, in stream order: chunk
// group_rank, then chunk 2g-1-group_rank. REQUIRES: 0 <= group_rank < g.
std::array<TokenRange, 2> ZigZagShard(int64_t length, int group_size, int group_rank);

// Tokens group rank `group_rank` holds: the sizes of its two chunks.
int64_t ZigZagRankTokens(int64_t length, int group_size, int group_rank);

// The most tokens any rank of a group of `group_size` holds for a sequence of
// `length` tokens: the maximum of ZigZagRankTokens over the group, in O(1)
// and without overflow for any length >= 0. It is ceil(length / g), or one
// more where two rounded-up chunks meet on one rank. What the scheduler
// charges every rank of the group. REQUIRES: group_size >= 1, length >= 0.
int64_t ShardTokens(int64_t length, int group_size);

// The one fit rule: a sequence of `length` tokens can be placed on a CP group
// of `cp` ranks at BucketSize `bucket_size_tokens` iff its shard over all cp
// ranks fits one rank: ShardTokens(length, cp) <= bucket_size_tokens.
inline bool FitsCpGroup(int64_t length, int cp, int64_t bucket_size_tokens) {
  return ShardTokens(length, cp) <= bucket_size_tokens;
}

// Empty when FitsCpGroup; otherwise why not and both ways to fix it, e.g.
// "4500 tokens, more than BucketSize 1000 x CP 4 = 4000; it fits with CP >= 5
// at this BucketSize, or with BucketSize >= 1125 at CP 4". The CP named fits
// at this BucketSize: the smallest one from ceil(length / BucketSize) up (a
// bounded search; past it, one sure to fit). Callers put the sequence's name
// in front ("sequence id 7 has ", "data.jsonl:12: sample of ").
// REQUIRES: cp >= 1, bucket_size_tokens >= 1, length >= 0.
std::string FitProblem(int64_t length, int cp, int64_t bucket_size_tokens);

}  // namespace skrull::scheduler

#endif  // SKRULL_SCHEDULER_LAYOUT_H_
