#include "scheduler/layout.h"

#include "common/status.h"

namespace skrull::scheduler {

TokenRange ZigZagChunk(int64_t length, int group_size, int chunk) {
  SKRULL_CHECK(group_size >= 1 && chunk >= 0 && chunk < 2 * group_size && length >= 0)
      << "length=" << length << " group_size=" << group_size << " chunk=" << chunk;
  const int64_t parts = 2 * static_cast<int64_t>(group_size);
  return TokenRange{chunk * length / parts, (chunk + 1) * length / parts};
}

std::array<TokenRange, 2> ZigZagShard(int64_t length, int group_size, int group_rank) {
  return {ZigZagChunk(length, group_size, group_rank),
          ZigZagChunk(length, group_size, 2 * group_size - 1 - group_rank)};
}

int64_t ZigZagRankTokens(int64_t length, int group_size, int group_rank) {
  const std::array<TokenRange, 2> shard = ZigZagShard(length, group_size, group_rank);
  return shard[0].size() + shard[1].size();
}

int64_t ShardTokens(int64_t length, int group_size) {
  SKRULL_CHECK(group_size >= 1 && length >= 0)
      << "length=" << length << " group_size=" << group_size;
  // length = 2g*q + r. Every chunk holds q or q + 1 tokens; rank i holds
  // 2q + 2 exactly when a multiple of 2g falls strictly inside
  // (i*r, (i+1)*r) for some i < g, which happens iff r does not divide 2g
  // (tests/scheduler/layout_test.cc checks this against the chunks).
  const int64_t parts = 2 * static_cast<int64_t>(group_size);
  const int64_t q = length / parts;
  const int64_t r = length % parts;
  if (r == 0) return 2 * q;
  return 2 * q + (parts % r != 0 ? 2 : 1);
}

std::string FitProblem(int64_t length, int cp, int64_t bucket_size_tokens) {
  SKRULL_CHECK(cp >= 1 && bucket_size_tokens >= 1 && length >= 0)
      << "length=" << length << " cp=" << cp << " bucket_size_tokens=" << bucket_size_tokens;
  const int64_t shard = ShardTokens(length, cp);
  if (shard <= bucket_size_tokens) return "";
  const int64_t bucket = bucket_size_tokens;
  // ShardTokens(length, g) <= ceil(length / g) + 1, so with BucketSize >= 2
  // any g >= ceil(length / (bucket - 1)) fits; with BucketSize 1, g = length
  // does (each rank then holds at most one token).
  int64_t fitting_cp = bucket >= 2 ? (length + bucket - 2) / (bucket - 1) : length;
  constexpr int kSearchSteps = 64;
  int64_t g = (length + bucket - 1) / bucket;
  for (int step = 0; step < kSearchSteps && g < fitting_cp; ++step, ++g) {
    if (g <= INT32_MAX && FitsCpGroup(length, static_cast<int>(g), bucket)) {
      fitting_cp = g;
      break;
    }
  }
  return std::to_string(length) + " tokens, more than BucketSize " + std::to_string(bucket) +
         " x CP " + std::to_string(cp) + " = " + std::to_string(bucket * cp) +
         "; it fits with CP >= " + std::to_string(fitting_cp) + " at this BucketSize, or with " +
         "BucketSize >= " + std::to_string(shard) + " at CP " + std::to_string(cp);
}

}  // namespace skrull::scheduler
