#include <gtest/gtest.h>

#include "scheduler/plan.h"
#include "trainer/dist/runtime_guard.h"

namespace skrull::dist {
namespace {

constexpr int kDist = scheduler::kDistributed;

scheduler::Plan PlanOf(int cp, const std::vector<scheduler::PlacedSequence>& seqs) {
  scheduler::Plan plan;
  plan.topology = scheduler::Topology{1, cp};
  plan.ranks.resize(1);
  scheduler::MicroBatch mb;
  mb.sequences = seqs;
  plan.ranks[0].micro_batches.push_back(mb);
  return plan;
}

TEST(RuntimeGuard, ExactTokensFollowTheZigZagLayout) {
  // S=3 over cp=4: rank 2 holds chunks 2 and 5, one token each: more than
  // the scheduler's ceil(3/4) = 1.
  auto plan = PlanOf(4, {{0, 3, kDist}, {1, 5, 1}});
  EXPECT_EQ(ExactCpRankTokens(plan.ranks[0].micro_batches[0], 4),
            (std::vector<int64_t>{1, 5, 2, 0}));
}

TEST(RuntimeGuard, LeavesAFittingPlanAlone) {
  auto plan = PlanOf(2, {{0, 10, 0}, {1, 12, 1}, {2, 20, kDist}});
  auto r = ApplyRuntimeGuard(&plan, 22);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->rollbacks, 0);
  EXPECT_EQ(plan.ranks[0].micro_batches[0].sequences[0].cp_rank, 0);
}

TEST(RuntimeGuard, DistributesTheShortestLocalSequenceOfTheOverfullRank) {
  // Limit 20. Rank 0 holds 6 + 9 + 10 (shard of 20) = 25, rank 1 4 + 10 = 14.
  // Distributing id 0 (6 -> shards 3/3): rank 0 = 22, rank 1 = 17.
  // Distributing id 1 (9 -> shards 5/4): rank 0 = 18, rank 1 = 21.
  // Now rank 1 is over: its shortest local, id 2 (4 -> 2/2): 20 and 19.
  auto plan = PlanOf(2, {{0, 6, 0}, {1, 9, 0}, {2, 4, 1}, {3, 20, kDist}});
  auto r = ApplyRuntimeGuard(&plan, 20);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->rollbacks, 3);
  EXPECT_EQ(r->rolled_back_ids, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(ExactCpRankTokens(plan.ranks[0].micro_batches[0], 2), (std::vector<int64_t>{20, 19}));
}

TEST(RuntimeGuard, RefusesAMicroBatchThatCannotFitByName) {
  auto plan = PlanOf(2, {{0, 50, kDist}});
  plan.ranks[0].micro_batches[0].index = 3;
  auto r = ApplyRuntimeGuard(&plan, 20);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("micro-batch 3 of DP rank 0: CP rank 0 would hold 25 tokens"),
            std::string::npos)
      << r.status();
}

TEST(RuntimeGuard, WithoutContextParallelismThereIsNothingToRollBack) {
  auto plan = PlanOf(1, {{0, 30, 0}});
  auto r = ApplyRuntimeGuard(&plan, 20);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
}

TEST(RuntimeGuard, MemoryLimitTokens) {
  // (1000 * 0.9 - 300 - 100) / 5 = 100 tokens.
  EXPECT_EQ(MemoryLimitTokens(1000, 300, 100, 5, 0.1), 100);
  EXPECT_EQ(MemoryLimitTokens(100, 300, 0, 5, 0.1), 0);
}

TEST(RuntimeGuard, WidensASubGroupSequenceWhenTheRankHoldsNoLocalOne) {
  // cp 4, limit 10: 20 on ranks 0..1 (10 each) and 4 over all (1 each):
  // rank 0 holds 11. No local sequence there: 20 is widened to all 4
  // ranks (5 each), giving 6 on every rank.
  scheduler::PlacedSequence on_group{0, 20, kDist};
  on_group.group_first = 0;
  on_group.group_size = 2;
  auto plan = PlanOf(4, {on_group, {1, 4, kDist}});
  EXPECT_EQ(ExactCpRankTokens(plan.ranks[0].micro_batches[0], 4),
            (std::vector<int64_t>{11, 11, 1, 1}));
  auto r = ApplyRuntimeGuard(&plan, 10);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->rolled_back_ids, (std::vector<int64_t>{0}));
  EXPECT_FALSE(plan.ranks[0].micro_batches[0].sequences[0].on_sub_group(4));
  EXPECT_EQ(ExactCpRankTokens(plan.ranks[0].micro_batches[0], 4),
            (std::vector<int64_t>{6, 6, 6, 6}));
}

}  // namespace
}  // namespace skrull::dist
