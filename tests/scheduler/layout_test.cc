// The context-parallel layout (scheduler/layout.h): the zig-zag chunks, the
// exact tokens each rank holds, ShardTokens as the busiest rank of the
// layout, and the one fit check with its message.
#include "scheduler/layout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "scheduler/plan.h"
#include "scheduler/policy.h"
#include "tests/scheduler/test_util.h"

namespace skrull::scheduler {
namespace {

using testing::MakeBatch;
using testing::Qwen05Cost;

MicroBatch MicroBatchOf(int cp, const std::vector<PlacedSequence>& seqs) {
  MicroBatch mb;
  mb.sequences = seqs;
  FillDerived(mb, cp, Qwen05Cost());
  return mb;
}

TEST(ZigZag, ChunksTileTheSequenceInOrder) {
  for (int cp = 1; cp <= 8; ++cp) {
    for (int64_t len : {0, 1, 2, 3, 7, 16, 17, 1000, 1001}) {
      int64_t expect_begin = 0;
      for (int c = 0; c < 2 * cp; ++c) {
        TokenRange r = ZigZagChunk(len, cp, c);
        EXPECT_EQ(r.begin, expect_begin);
        EXPECT_GE(r.size(), len / (2 * cp));
        EXPECT_LE(r.size(), len / (2 * cp) + 1);
        expect_begin = r.end;
      }
      EXPECT_EQ(expect_begin, len);
    }
  }
}

TEST(ZigZag, RankHoldsChunkRAndItsMirror) {
  auto shard = ZigZagShard(16, 4, 1);
  EXPECT_EQ(shard[0], (TokenRange{2, 4}));
  EXPECT_EQ(shard[1], (TokenRange{12, 14}));
  EXPECT_EQ(ZigZagRankTokens(16, 4, 1), 4);
}

TEST(ZigZag, ShardIsAtMostOneTokenOverCeilLengthOverCp) {
  for (int cp = 1; cp <= 8; ++cp) {
    for (int64_t len = 1; len < 300; ++len) {
      for (int r = 0; r < cp; ++r) {
        auto s = ZigZagShard(len, cp, r);
        EXPECT_LE(s[0].size() + s[1].size(), (len + cp - 1) / cp + 1);
      }
    }
  }
}

TEST(ShardTokens, IsTheBusiestRankOfTheZigZagLayout) {
  for (int g = 1; g <= 40; ++g) {
    for (int64_t len = 0; len <= 600; ++len) {
      int64_t busiest = 0;
      for (int i = 0; i < g; ++i) busiest = std::max(busiest, ZigZagRankTokens(len, g, i));
      ASSERT_EQ(ShardTokens(len, g), busiest) << "length " << len << " over " << g << " ranks";
    }
  }
  // S = 3 over 4 ranks: rank 2 holds chunks 2 and 5, one token each, one
  // more than ceil(3 / 4).
  EXPECT_EQ(ZigZagRankTokens(3, 4, 2), 2);
  EXPECT_EQ(ShardTokens(3, 4), 2);
}

TEST(FillDerived, ChargesEachRankTheExactZigZagTokens) {
  // S=3 over cp=4 distributed, 5 local on rank 1: rank 2 holds 2.
  const MicroBatch mb = MicroBatchOf(4, {{0, 3, kDistributed}, {1, 5, 1}});
  EXPECT_EQ(mb.cp_rank_tokens, (std::vector<int64_t>{1, 5, 2, 0}));
}

TEST(FillDerived, ChargesASubGroupSequenceOnItsGroupOnly) {
  // 20 on ranks 0..1 (10 each), 4 over all 4 ranks (1 each).
  PlacedSequence on_group{0, 20, kDistributed};
  on_group.group_first = 0;
  on_group.group_size = 2;
  const MicroBatch mb = MicroBatchOf(4, {on_group, {1, 4, kDistributed}});
  EXPECT_EQ(mb.cp_rank_tokens, (std::vector<int64_t>{11, 11, 1, 1}));
}

TEST(FitProblem, IsEmptyExactlyWhenTheShardFits) {
  for (int cp : {1, 2, 3, 4, 8}) {
    for (int64_t bucket : {1, 2, 3, 7, 100}) {
      for (int64_t len = 0; len <= 4 * bucket * cp; ++len) {
        ASSERT_EQ(FitProblem(len, cp, bucket).empty(), ShardTokens(len, cp) <= bucket)
            << len << " " << cp << " " << bucket;
      }
    }
  }
}

TEST(FitProblem, NamesACpAndTheBucketSizeThatFit) {
  EXPECT_EQ(FitProblem(4500, 4, 1000),
            "4500 tokens, more than BucketSize 1000 x CP 4 = 4000; it fits with CP >= 5 at this "
            "BucketSize, or with BucketSize >= 1125 at CP 4");
  // 11 over 4 ranks holds 4 on rank 2, so BucketSize 3 needs CP 5 (not
  // ceil(11 / 3) = 4), and CP 4 needs BucketSize 4.
  EXPECT_EQ(FitProblem(11, 4, 3),
            "11 tokens, more than BucketSize 3 x CP 4 = 12; it fits with CP >= 5 at this "
            "BucketSize, or with BucketSize >= 4 at CP 4");
  for (int64_t len = 1; len <= 300; ++len) {
    for (int64_t bucket : {1, 2, 3, 5, 9}) {
      const std::string problem = FitProblem(len, 1, bucket);
      if (problem.empty()) continue;
      const size_t at = problem.find("CP >= ") + 6;
      const int64_t named = std::stoll(problem.substr(at));
      EXPECT_TRUE(FitsCpGroup(len, static_cast<int>(named), bucket)) << problem;
    }
  }
}

// The scheduler charges the exact layout, so what used to need a run-time
// correction cannot happen: no policy's plan puts more than BucketSize on a
// rank in the zig-zag layout, at CP sizes where a shard can exceed ceil(S/g).
TEST(Schedule, EveryPolicyFitsTheExactLayout) {
  std::mt19937_64 rng(7);
  const CostModel cost = Qwen05Cost();
  for (int round = 0; round < 200; ++round) {
    const int cp = round % 2 == 0 ? 4 : 8;
    const int64_t bucket = 3 + static_cast<int64_t>(rng() % 60);
    std::vector<int64_t> lengths;
    for (int k = 0; k < 12; ++k) {
      int64_t len = 1 + static_cast<int64_t>(rng() % (bucket * cp));
      while (!FitsCpGroup(len, cp, bucket)) --len;
      lengths.push_back(len);
    }
    ScheduleOptions o;
    o.topology = {2, cp};
    o.bucket_size_tokens = bucket;
    for (Policy p : AllPolicies()) {
      auto plan = Schedule(p, MakeBatch(lengths), o, cost);
      ASSERT_TRUE(plan.ok()) << PolicyName(p) << " " << plan.status();
      ASSERT_TRUE(VerifyPlan(*plan, MakeBatch(lengths)).ok()) << PolicyName(p);
      for (const DpRankPlan& rank : plan->ranks) {
        for (const MicroBatch& mb : rank.micro_batches) {
          for (int r = 0; r < cp; ++r) {
            int64_t held = 0;
            for (const PlacedSequence& s : mb.sequences) {
              const ShardGroup g = s.Group(cp);
              if (g.Contains(r)) held += ZigZagRankTokens(s.length, g.size, r - g.first);
            }
            ASSERT_LE(held, bucket) << PolicyName(p) << " rank " << r;
          }
        }
      }
    }
  }
}

TEST(Schedule, RefusesASequenceWhoseExactShardDoesNotFit) {
  // ceil(3 / 4) = 1 fits BucketSize 1, but rank 2 would hold 2.
  ScheduleOptions o;
  o.topology = {1, 4};
  o.bucket_size_tokens = 1;
  auto plan = Schedule(Policy::kCpAll, MakeBatch({3}), o, Qwen05Cost());
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(plan.status().message(),
            "sequence id 0 has 3 tokens, more than BucketSize 1 x CP 4 = 4; it fits with CP >= 3 "
            "at this BucketSize, or with BucketSize >= 2 at CP 4");
}

}  // namespace
}  // namespace skrull::scheduler
