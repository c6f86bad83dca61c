// Sub-group CP (docs/scheduler.md): distributed sequences sharded over
// an aligned sub-group of 2^k CP ranks. Plan format, VerifyPlan, FillDerived,
// JSON, DACP, the pricer and `skrull`'s use of it.
#include <gtest/gtest.h>

#include <random>

#include "scheduler/dacp.h"
#include "scheduler/plan.h"
#include "scheduler/plan_json.h"
#include "scheduler/policy.h"
#include "scheduler/simulator.h"
#include "tests/scheduler/test_util.h"

namespace skrull::scheduler {
namespace {

using testing::MakeBatch;
using testing::Qwen05Cost;
using testing::UnitProfile;

PlacedSequence OnGroup(int64_t id, int64_t length, int first, int size) {
  PlacedSequence s{id, length, kDistributed};
  s.group_first = first;
  s.group_size = size;
  return s;
}

// One DP rank, one micro-batch of `sequences`, derived fields filled.
Plan OneMicroBatch(int cp, int64_t bucket, std::vector<PlacedSequence> sequences) {
  Plan plan;
  plan.policy = "test";
  plan.topology = {1, cp};
  plan.bucket_size_tokens = bucket;
  plan.ranks.resize(1);
  MicroBatch mb;
  mb.sequences = std::move(sequences);
  plan.ranks[0].micro_batches.push_back(mb);
  FillDerived(plan, Qwen05Cost());
  return plan;
}

TEST(SubGroup, AlignedSubGroupsArePowersOfTwoBelowCpStartingAtAMultiple) {
  EXPECT_TRUE(IsAlignedSubGroup(0, 2, 4));
  EXPECT_TRUE(IsAlignedSubGroup(2, 2, 4));
  EXPECT_TRUE(IsAlignedSubGroup(4, 4, 8));
  EXPECT_FALSE(IsAlignedSubGroup(1, 2, 4));  // not aligned
  EXPECT_FALSE(IsAlignedSubGroup(0, 4, 4));  // all ranks: not a sub-group
  EXPECT_FALSE(IsAlignedSubGroup(0, 3, 8));  // not a power of two
  EXPECT_FALSE(IsAlignedSubGroup(4, 4, 6));  // past the group
  EXPECT_FALSE(IsAlignedSubGroup(0, 1, 4));  // local, not a group
}

TEST(SubGroup, PlacementCodesRoundTripEveryGroup) {
  const int cp = 16;
  for (int size = 2; size < cp; size *= 2) {
    for (int first = 0; first < cp; first += size) {
      const int code = SubGroupCode(first, size);
      EXPECT_LT(code, kDistributed);
      EXPECT_EQ(GroupOfCode(code, cp), (ShardGroup{first, size}));
      const PlacedSequence s = PlacedSequence::FromCode(7, 100, code, cp);
      EXPECT_TRUE(s.on_sub_group(cp));
      EXPECT_EQ(s.Code(cp), code);
    }
  }
  EXPECT_EQ(GroupOfCode(kDistributed, cp), (ShardGroup{0, cp}));
  EXPECT_EQ(GroupOfCode(3, cp), (ShardGroup{3, 1}));
  EXPECT_FALSE(PlacedSequence::FromCode(1, 5, kDistributed, cp).on_sub_group(cp));
}

TEST(SubGroup, FillDerivedChargesOnlyTheGroupsRanks) {
  const Plan plan =
      OneMicroBatch(4, 1000, {OnGroup(0, 101, 2, 2), {1, 40, 0}, {2, 9, kDistributed}});
  const MicroBatch& mb = plan.ranks[0].micro_batches[0];
  // 101 over ranks 2..3: 51 and 50 (zig-zag chunks 25, 25, 25, 26); 9 over
  // all four: 3 on rank 0 (chunks 1 and 2), 2 on the others; 40 local on 0.
  EXPECT_EQ(mb.cp_rank_tokens, (std::vector<int64_t>{43, 2, 53, 52}));
  const CostModel cost = Qwen05Cost();
  EXPECT_DOUBLE_EQ(mb.cp_rank_flops[2], cost.FlopsSharded(101, 2) + cost.FlopsSharded(9, 4));
  EXPECT_DOUBLE_EQ(mb.cp_rank_flops[1], cost.FlopsSharded(9, 4));
  EXPECT_TRUE(VerifyPlan(plan, MakeBatch({101, 40, 9})).ok());
}

TEST(SubGroup, VerifyPlanRejectsMisalignedAndLocalSubGroups) {
  const auto batch = MakeBatch({100, 40});
  Plan misaligned = OneMicroBatch(8, 1000, {OnGroup(0, 100, 0, 2), {1, 40, 0}});
  misaligned.ranks[0].micro_batches[0].sequences[0].group_first = 1;
  Status s = VerifyPlan(misaligned, batch);
  EXPECT_NE(s.message().find("not an aligned power-of-two sub-group of CP 8"), std::string::npos)
      << s.message();

  Plan local = OneMicroBatch(8, 1000, {OnGroup(0, 100, 0, 2), {1, 40, 0}});
  local.ranks[0].micro_batches[0].sequences[1].group_size = 2;
  s = VerifyPlan(local, batch);
  EXPECT_NE(s.message().find("is local on CP rank 0 but names a sub-group"), std::string::npos)
      << s.message();

  // A sub-group's shard counts against BucketSize: 100 over 2 ranks is 50.
  Plan over = OneMicroBatch(8, 49, {OnGroup(0, 100, 0, 2)});
  s = VerifyPlan(over, MakeBatch({100}));
  EXPECT_NE(s.message().find("CP rank 0 holds 50 tokens, above BucketSize 49"), std::string::npos)
      << s.message();
}

TEST(SubGroup, PlanJsonRoundTripsSubGroupsAndNamesABadOne) {
  const Plan plan = OneMicroBatch(8, 1000, {OnGroup(0, 100, 4, 4), {1, 40, 0}, {2, 8, -1}});
  const std::string json = PlanToJson(plan);
  EXPECT_NE(json.find("\"group_first\":4,\"group_size\":4"), std::string::npos) << json;
  auto parsed = PlanFromJson(json, Qwen05Cost());
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(PlanToJson(*parsed), json);
  EXPECT_EQ(parsed->ranks[0].micro_batches[0].cp_rank_tokens,
            plan.ranks[0].micro_batches[0].cp_rank_tokens);

  std::string bad = json;
  bad.replace(bad.find("\"group_first\":4"), 15, "\"group_first\":2");
  auto error = PlanFromJson(bad, Qwen05Cost());
  ASSERT_FALSE(error.ok());
  EXPECT_NE(error.status().message().find("micro_batches[0].sequences[0].group_size"),
            std::string::npos)
      << error.status().message();
}

DacpOptions UnitDacp(int cp, double bucket, bool sub_groups) {
  DacpOptions o;
  o.cp = cp;
  o.bucket_size_tokens = bucket;
  o.sub_groups = sub_groups;
  o.flops = [](int64_t s) { return static_cast<double>(s); };
  return o;
}

TEST(SubGroup, DacpShardsAMidLengthSequenceOverTheSmallestGroupThatHoldsIt) {
  // 15 fits no rank (C = 10) but a 2-group (8 each); without sub-groups it
  // is sharded over all 8 ranks.
  auto with = RunDacp({15, 3}, UnitDacp(8, 10, true));
  ASSERT_TRUE(with.has_value());
  EXPECT_EQ(GroupOfCode(with->placement[0], 8).size, 2);
  auto without = RunDacp({15, 3}, UnitDacp(8, 10, false));
  ASSERT_TRUE(without.has_value());
  EXPECT_EQ(without->placement[0], kDistributed);
  // 30 needs a 4-group (8 each).
  auto four = RunDacp({30}, UnitDacp(8, 10, true));
  ASSERT_TRUE(four.has_value());
  EXPECT_EQ(GroupOfCode(four->placement[0], 8), (ShardGroup{0, 4}));
}

TEST(SubGroup, DacpRollBackWidensASubGroupSequenceWhenTheRankHasNoLocalOne) {
  // cp 8, C = 10: 11 goes to ranks 0..1 (6 each). 41 fits no 2- or 4-group
  // (21, 11 per rank) and its shard over 8 (6) not on rank 0 (4 left), which
  // holds no local sequence: the roll-back widens 11 to all 8 ranks (2
  // each), then 41 fits.
  auto r = RunDacp({11, 41}, UnitDacp(8, 10, true));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->placement, (std::vector<int>{kDistributed, kDistributed}));
  EXPECT_EQ(r->rollbacks, 1);
  EXPECT_EQ(r->remaining_tokens, std::vector<double>(8, 2));
}

TEST(SubGroup, PricerRunsOneExchangePerGroupOverItsRanks) {
  const CostModel cost = Qwen05Cost();
  const HardwareProfile hw = UnitProfile();
  const std::vector<int64_t> lengths = {4096, 4096};
  // Two 4096-token sequences each on its own 2-group of a 4-rank CP group vs
  // both over all 4 ranks: every rank holds 2048 tokens either way.
  const MicroBatchTime groups =
      SimulatePlacement(lengths, {SubGroupCode(0, 2), SubGroupCode(2, 2)}, 4, cost, hw);
  const MicroBatchTime all = SimulatePlacement(lengths, {kDistributed, kDistributed}, 4, cost, hw);
  const double layers = cost.model().num_hidden_layers;
  const double bytes = cost.KvBytesPerLayer(4096);
  const double two = layers * (hw.CollectiveSeconds(CollectiveOp::kAllGather, bytes, 2) +
                               hw.CollectiveSeconds(CollectiveOp::kReduceScatter, bytes, 2));
  const double four = layers * (hw.CollectiveSeconds(CollectiveOp::kAllGather, 2 * bytes, 4) +
                                hw.CollectiveSeconds(CollectiveOp::kReduceScatter, 2 * bytes, 4));
  EXPECT_DOUBLE_EQ(groups.comm_seconds, two);
  EXPECT_DOUBLE_EQ(all.comm_seconds, four);
  EXPECT_LT(groups.seconds, all.seconds);
  // A rank outside every group with sequences exchanges nothing.
  const MicroBatchTime one = SimulatePlacement({4096, 100}, {SubGroupCode(0, 2), 3}, 4, cost, hw);
  EXPECT_DOUBLE_EQ(one.cp_rank_seconds[2], 0);
  EXPECT_DOUBLE_EQ(one.cp_rank_seconds[3], SimulatePlacement({100}, {0}, 1, cost, hw).seconds);
}

// ChatQA2-like batches: long-tailed lengths in the thousands to tens of thousands.
std::vector<Sequence> LongBatch(std::mt19937_64& rng, int n, int64_t longest) {
  std::lognormal_distribution<double> len(8.8, 1.0);
  std::vector<int64_t> lengths;
  for (int i = 0; i < n; ++i) {
    lengths.push_back(std::clamp<int64_t>(static_cast<int64_t>(len(rng)), 16, longest));
  }
  return MakeBatch(lengths);
}

TEST(SubGroup, SkrullIsNeverEstimatedSlowerWithSubGroupsAndUsesThem) {
  const CostModel cost = Qwen05Cost();
  const HardwareProfile hw = H100Profile();
  std::mt19937_64 rng(7);
  int used = 0;
  for (int trial = 0; trial < 12; ++trial) {
    ScheduleOptions o;
    o.topology = {2, trial % 2 == 0 ? 8 : 4};
    o.bucket_size_tokens = 16384;
    o.hardware = &hw;
    const auto batch = LongBatch(rng, 48, o.bucket_size_tokens * o.topology.cp);
    auto with = Schedule(Policy::kSkrull, batch, o, cost);
    o.sub_groups = false;
    auto without = Schedule(Policy::kSkrull, batch, o, cost);
    ASSERT_TRUE(with.ok() && without.ok());
    ASSERT_TRUE(VerifyPlan(*with, batch).ok()) << VerifyPlan(*with, batch).message();
    EXPECT_LE(SimulatePlan(*with, cost, hw).seconds, SimulatePlan(*without, cost, hw).seconds)
        << "trial " << trial;
    bool with_sub = false;
    for (const auto& rank : with->ranks) {
      for (const auto& mb : rank.micro_batches) {
        for (const auto& s : mb.sequences) with_sub = with_sub || s.on_sub_group(o.topology.cp);
      }
    }
    for (const auto& rank : without->ranks) {
      for (const auto& mb : rank.micro_batches) {
        for (const auto& s : mb.sequences) ASSERT_FALSE(s.on_sub_group(o.topology.cp));
      }
    }
    used += with_sub ? 1 : 0;
  }
  EXPECT_GT(used, 0) << "no plan used a sub-group";
}

TEST(SubGroup, PaperPoliciesNeverUseSubGroups) {
  const CostModel cost = Qwen05Cost();
  std::mt19937_64 rng(3);
  ScheduleOptions o;
  o.topology = {2, 8};
  o.bucket_size_tokens = 16384;
  const auto batch = LongBatch(rng, 48, o.bucket_size_tokens * 8);
  for (Policy p : {Policy::kSkrullPaper, Policy::kRoundRobin, Policy::kCpAll}) {
    auto plan = Schedule(p, batch, o, cost);
    ASSERT_TRUE(plan.ok());
    for (const auto& rank : plan->ranks) {
      for (const auto& mb : rank.micro_batches) {
        for (const auto& s : mb.sequences) EXPECT_FALSE(s.on_sub_group(8)) << PolicyName(p);
      }
    }
  }
}

}  // namespace
}  // namespace skrull::scheduler
