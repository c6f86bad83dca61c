#include "scheduler/plan.h"

#include <gtest/gtest.h>

#include "scheduler/policy.h"
#include "tests/scheduler/test_util.h"

namespace skrull::scheduler {
namespace {

using testing::MakeBatch;
using testing::Qwen05Cost;

// dp=1, cp=2, C=100: one micro-batch with ids 0 (local r0), 1 (local r1),
// 2 (distributed).
Plan SmallPlan() {
  Plan p;
  p.policy = "test";
  p.topology = {1, 2};
  p.bucket_size_tokens = 100;
  p.ranks.resize(1);
  MicroBatch mb;
  mb.sequences = {{0, 40, 0}, {1, 30, 1}, {2, 41, kDistributed}};
  p.ranks[0].micro_batches.push_back(mb);
  FillDerived(p, Qwen05Cost());
  return p;
}

const std::vector<Sequence> kBatch = MakeBatch({40, 30, 41});

TEST(Plan, FillDerivedChargesLocalsWholeAndShardsTheirZigZagTokens) {
  const Plan p = SmallPlan();
  const MicroBatch& mb = p.ranks[0].micro_batches[0];
  // 41 over 2 ranks: chunks 10, 10, 10, 11; rank 0 holds chunks 0 and 3.
  EXPECT_EQ(mb.cp_rank_tokens, (std::vector<int64_t>{40 + 21, 30 + 20}));
  const CostModel cost = Qwen05Cost();
  EXPECT_DOUBLE_EQ(mb.cp_rank_flops[0], cost.FlopsPerSequence(40) + cost.FlopsSharded(41, 2));
  EXPECT_DOUBLE_EQ(mb.cp_rank_flops[1], cost.FlopsPerSequence(30) + cost.FlopsSharded(41, 2));
  EXPECT_TRUE(VerifyPlan(p, kBatch).ok()) << VerifyPlan(p, kBatch);
}

TEST(Plan, VerifyCatchesAMissingSequence) {
  Plan p = SmallPlan();
  auto batch = kBatch;
  batch.push_back({3, 5});
  const Status s = VerifyPlan(p, batch);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("sequence id 3 (length 5) is not placed"), std::string::npos) << s;
}

TEST(Plan, VerifyCatchesADuplicateAndAnUnknownSequence) {
  Plan p = SmallPlan();
  p.ranks[0].micro_batches[0].sequences.push_back({0, 40, 1});
  FillDerived(p, Qwen05Cost());
  EXPECT_NE(VerifyPlan(p, kBatch).message().find("placed more than once"), std::string::npos);
  p = SmallPlan();
  p.ranks[0].micro_batches[0].sequences[0].id = 9;
  EXPECT_NE(VerifyPlan(p, kBatch).message().find("sequence id 9 is not in the batch"),
            std::string::npos);
}

TEST(Plan, VerifyCatchesARankOverBucketSize) {
  Plan p = SmallPlan();
  p.bucket_size_tokens = 60;
  const Status s = VerifyPlan(p, kBatch);
  EXPECT_NE(s.message().find("CP rank 0 holds 61 tokens, above BucketSize 60"), std::string::npos)
      << s;
}

TEST(Plan, VerifyCatchesStaleDerivedTokensAndBadRanks) {
  Plan p = SmallPlan();
  p.ranks[0].micro_batches[0].cp_rank_tokens[1] = 0;
  EXPECT_NE(VerifyPlan(p, kBatch).message().find("cp_rank_tokens do not match"), std::string::npos);
  p = SmallPlan();
  p.ranks[0].micro_batches[0].sequences[0].cp_rank = 2;
  EXPECT_NE(VerifyPlan(p, kBatch).message().find("cp_rank 2 outside [-1, 2)"), std::string::npos);
}

TEST(Plan, VerifyCatchesUnequalMicroBatchCounts) {
  Plan p = SmallPlan();
  p.topology.dp = 2;
  p.ranks.resize(2);
  const Status s = VerifyPlan(p, kBatch);
  EXPECT_NE(s.message().find("DP rank 1 has 0 micro-batches, DP rank 0 has 1"), std::string::npos)
      << s;
}

TEST(Plan, DebugStringShowsEveryRank) {
  const std::string s = SmallPlan().DebugString();
  EXPECT_NE(s.find("plan policy=test dp=1 cp=2 bucket_size=100 micro_batches=1"), std::string::npos)
      << s;
  EXPECT_NE(s.find("cp 0   tokens       61 ( 61.0%)"), std::string::npos) << s;
  EXPECT_NE(s.find("local: 0(40)"), std::string::npos) << s;
  EXPECT_NE(s.find("local: 1(30)"), std::string::npos) << s;
  EXPECT_NE(s.find("distributed: 2(41)"), std::string::npos) << s;
}

}  // namespace
}  // namespace skrull::scheduler
