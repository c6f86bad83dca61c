// The 2026 competitors as policies: dynamic-cp (Megatron-Core's dynamic CP)
// and local-if-fits. Validity on random batches is in property_test.cc.
#include <gtest/gtest.h>

#include "scheduler/layout.h"
#include "scheduler/policy.h"
#include "scheduler/simulator.h"
#include "tests/scheduler/test_util.h"

namespace skrull::scheduler {
namespace {

using testing::MakeBatch;
using testing::Qwen05Cost;

using testing::MustSchedule;
using testing::Options;

// The placement of sequence `id` in the plan.
PlacedSequence Find(const Plan& plan, int64_t id) {
  for (const DpRankPlan& r : plan.ranks) {
    for (const MicroBatch& mb : r.micro_batches) {
      for (const PlacedSequence& s : mb.sequences) {
        if (s.id == id) return s;
      }
    }
  }
  ADD_FAILURE() << "id " << id << " not placed";
  return {};
}

TEST(NextGroupSize, PowersOfTwoBelowCpThenCp) {
  EXPECT_EQ(NextGroupSize(1, 8), 2);
  EXPECT_EQ(NextGroupSize(4, 8), 8);
  EXPECT_EQ(NextGroupSize(8, 8), 0);
  EXPECT_EQ(NextGroupSize(2, 6), 4);
  EXPECT_EQ(NextGroupSize(4, 6), 6);
  EXPECT_EQ(SmallestGroupSize(100, 8, 100), 1);
  EXPECT_EQ(SmallestGroupSize(101, 8, 100), 2);
  EXPECT_EQ(SmallestGroupSize(350, 8, 100), 4);
  EXPECT_EQ(SmallestGroupSize(700, 8, 100), 8);
  EXPECT_EQ(SmallestGroupSize(900, 8, 100), 0);
}

TEST(DynamicCp, PutsEachSequenceOnTheSmallestPowerOfTwoGroupThatHoldsIt) {
  // C = 1000, CP 8: 3500 tokens need 4 ranks, 1500 need 2, 900 fit one.
  const Plan plan =
      MustSchedule(Policy::kDynamicCp, MakeBatch({900, 3500, 1500, 900}), Options(1, 8, 1000));
  EXPECT_EQ(plan.policy, "dynamic-cp");
  EXPECT_EQ(Find(plan, 1).Group(8).size, 4);
  EXPECT_EQ(Find(plan, 2).Group(8).size, 2);
  EXPECT_EQ(Find(plan, 0).Group(8).size, 1);
  EXPECT_EQ(Find(plan, 3).Group(8).size, 1);
  EXPECT_EQ(plan.NumMicroBatches(), 1);  // 4 + 2 + 1 + 1 ranks: one micro-batch
}

TEST(DynamicCp, WidensAGroupIntoFreeRanksWhenGpusWouldIdle) {
  // One sequence needing 2 ranks on a CP group of 8: the others would idle,
  // so it widens 2 -> 4 -> 8 (Megatron's fill_empty_gpus).
  const Plan plan = MustSchedule(Policy::kDynamicCp, MakeBatch({1500}), Options(1, 8, 1000));
  EXPECT_EQ(Find(plan, 0).Group(8).size, 8);
}

TEST(DynamicCp, BalancesLoadOverEveryGpuOfEveryDpRank) {
  // 8 equal short sequences, DP 2 x CP 4: one per GPU, in one micro-batch.
  const Plan plan = MustSchedule(Policy::kDynamicCp, MakeBatch(std::vector<int64_t>(8, 500)),
                                 Options(2, 4, 1000));
  ASSERT_EQ(plan.NumMicroBatches(), 1);
  for (const DpRankPlan& r : plan.ranks) {
    EXPECT_EQ(r.micro_batches[0].cp_rank_tokens, (std::vector<int64_t>{500, 500, 500, 500}));
  }
}

TEST(DynamicCp, OpensANewMicroBatchWhenBucketSizeIsFull) {
  // Two 900-token sequences per GPU cannot share a micro-batch at C = 1000.
  const Plan plan = MustSchedule(Policy::kDynamicCp, MakeBatch(std::vector<int64_t>(4, 900)),
                                 Options(1, 2, 1000));
  EXPECT_EQ(plan.NumMicroBatches(), 2);
}

TEST(LocalIfFits, KeepsSequencesThatFitWholeAndShardsOnlyTheRest) {
  const Plan plan =
      MustSchedule(Policy::kLocalIfFits, MakeBatch({1000, 1001, 40, 3000}), Options(1, 4, 1000));
  EXPECT_EQ(plan.policy, "local-if-fits");
  EXPECT_FALSE(Find(plan, 0).distributed());  // exactly BucketSize: local
  EXPECT_FALSE(Find(plan, 2).distributed());
  EXPECT_TRUE(Find(plan, 1).distributed());
  EXPECT_EQ(Find(plan, 1).Group(4).size, 4);  // over the whole CP group
  EXPECT_TRUE(Find(plan, 3).distributed());
}

TEST(LocalIfFits, SpreadsLocalSequencesOverAllGpusByFlops) {
  // Four long and four short local sequences on DP 2 x CP 2: LPT gives each
  // GPU one long and one short.
  const Plan plan =
      MustSchedule(Policy::kLocalIfFits, MakeBatch({800, 800, 800, 800, 100, 100, 100, 100}),
                   Options(2, 2, 1000));
  for (const DpRankPlan& r : plan.ranks) {
    std::vector<int64_t> tokens(2, 0);
    for (const MicroBatch& mb : r.micro_batches) {
      for (int j = 0; j < 2; ++j) tokens[j] += mb.cp_rank_tokens[j];
    }
    EXPECT_EQ(tokens, (std::vector<int64_t>{900, 900}));
  }
}

// skrull adopts a rival's whole plan when it is priced faster, so on random
// batches it is never slower than either (fails without AdoptFasterRival).
TEST(Skrull, IsNeverSimulatedSlowerThanLocalIfFitsOrDynamicCp) {
  const HardwareProfile hw = H100Profile();
  std::mt19937_64 rng(11);
  for (int i = 0; i < 200; ++i) {
    const testing::RandomCase c = testing::MakeRandomCase(rng, /*allow_too_long=*/false);
    ScheduleOptions o = Options(c.topology.dp, c.topology.cp, c.bucket_size_tokens);
    o.hardware = &hw;
    auto seconds = [&](Policy p) {
      return SimulatePlan(MustSchedule(p, c.batch, o), Qwen05Cost(), hw).seconds;
    };
    const double skrull = seconds(Policy::kSkrull);
    ASSERT_LE(skrull, seconds(Policy::kLocalIfFits) * (1 + 1e-12)) << "case " << i;
    ASSERT_LE(skrull, seconds(Policy::kDynamicCp) * (1 + 1e-12)) << "case " << i;
  }
}

}  // namespace
}  // namespace skrull::scheduler
