#include "scheduler/policy.h"

#include <gtest/gtest.h>

#include "scheduler/plan_json.h"
#include "tests/scheduler/test_util.h"

namespace skrull::scheduler {
namespace {

using testing::MakeBatch;
using testing::Qwen05Cost;

using testing::MustSchedule;
using testing::Options;

// Ids per micro-batch of one DP rank, and whether all are distributed.
std::vector<std::vector<int64_t>> Ids(const Plan& plan, int dp_rank) {
  std::vector<std::vector<int64_t>> ids;
  for (const MicroBatch& mb : plan.ranks[dp_rank].micro_batches) {
    ids.emplace_back();
    for (const PlacedSequence& s : mb.sequences) ids.back().push_back(s.id);
  }
  return ids;
}

bool AllDistributed(const Plan& plan) {
  for (const DpRankPlan& r : plan.ranks) {
    for (const MicroBatch& mb : r.micro_batches) {
      for (const PlacedSequence& s : mb.sequences) {
        if (!s.distributed()) return false;
      }
    }
  }
  return true;
}

TEST(Policy, NamesRoundTrip) {
  for (Policy p : AllPolicies()) {
    auto parsed = ParsePolicy(PolicyName(p));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, p);
  }
  EXPECT_EQ(AllPolicies().front(), Policy::kSkrull);
  EXPECT_STREQ(PolicyName(Policy::kBalancedCp), "balanced-cp");
}

TEST(Policy, UnknownNameListsValidOnes) {
  auto p = ParsePolicy("fifo");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find(
                "skrull, cp-all, sorted, balanced-cp, round-robin, skrull-paper, deepspeed, "
                "dynamic-cp, local-if-fits"),
            std::string::npos)
      << p.status();
}

TEST(Schedule, ReportsEveryInvalidInputAtOnce) {
  auto plan = Schedule(Policy::kSkrull, {{0, 10}, {1, 0}, {0, 5}}, Options(0, 0, 0), Qwen05Cost());
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  const std::string& m = plan.status().message();
  for (const char* want :
       {"bucket_size_tokens: must be > 0 (got 0)", "topology.dp: must be >= 1",
        "topology.cp: must be >= 1", "global_batch[1] (id 1): length must be > 0",
        "global_batch[2] (id 0): duplicate id, also at global_batch[0]"}) {
    EXPECT_NE(m.find(want), std::string::npos) << want << " in " << m;
  }
}

TEST(Schedule, RefusesASequenceLongerThanBucketTimesCpNamingTheFix) {
  auto plan =
      Schedule(Policy::kCpAll, MakeBatch({100, 4500, 200}), Options(1, 4, 1000), Qwen05Cost());
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(plan.status().message(),
            "sequence id 1 has 4500 tokens, more than BucketSize 1000 x CP 4 = 4000; it fits with "
            "CP >= 5 at this BucketSize, or with BucketSize >= 1125 at CP 4");
  // Exactly C x N fits (as N shards of C).
  EXPECT_TRUE(Schedule(Policy::kSkrull, MakeBatch({4000}), Options(1, 4, 1000), Qwen05Cost()).ok());
}

TEST(Schedule, EveryPolicyAcceptsAnEmptyBatch) {
  for (Policy p : AllPolicies()) {
    const Plan plan = MustSchedule(p, {}, Options(2, 2, 100));
    EXPECT_EQ(plan.NumMicroBatches(), 0) << PolicyName(p);
    EXPECT_EQ(plan.policy, PolicyName(p));
  }
}

TEST(Schedule, CpAllSplitsInBatchOrderAndPacksGreedily) {
  // dp=2: ids 0-2 and 3-5. C=100, N=2: shards 30+30 fit, +50 does not.
  const Plan plan =
      MustSchedule(Policy::kCpAll, MakeBatch({60, 60, 100, 10, 10, 10}), Options(2, 2, 100));
  EXPECT_EQ(Ids(plan, 0), (std::vector<std::vector<int64_t>>{{0, 1}, {2}}));
  EXPECT_EQ(Ids(plan, 1), (std::vector<std::vector<int64_t>>{{3, 4, 5}, {}}));  // padded
  EXPECT_TRUE(AllDistributed(plan));
  EXPECT_EQ(plan.ranks[0].micro_batches[0].cp_rank_tokens, (std::vector<int64_t>{60, 60}));
}

TEST(Schedule, DeepSpeedCutsEachDpRanksSequencesInOrderIntoMicroBatchSizeGroups) {
  // dp=2: ids 0-4 and 5-9; micro-batches of at most 2 sequences, all sharded.
  ScheduleOptions o = Options(2, 2, 1000);
  o.micro_batch_size = 2;
  const Plan plan =
      MustSchedule(Policy::kDeepSpeed, MakeBatch({10, 20, 30, 40, 50, 60, 70, 80, 90, 100}), o);
  EXPECT_EQ(plan.policy, "deepspeed");
  EXPECT_EQ(Ids(plan, 0), (std::vector<std::vector<int64_t>>{{0, 1}, {2, 3}, {4}}));
  EXPECT_EQ(Ids(plan, 1), (std::vector<std::vector<int64_t>>{{5, 6}, {7, 8}, {9}}));
  EXPECT_TRUE(AllDistributed(plan));
}

TEST(Schedule, DeepSpeedDefaultsToOneSequencePerMicroBatch) {
  const Plan plan = MustSchedule(Policy::kDeepSpeed, MakeBatch({5, 6, 7}), Options(1, 2, 100));
  EXPECT_EQ(Ids(plan, 0), (std::vector<std::vector<int64_t>>{{0}, {1}, {2}}));
}

TEST(Schedule, DeepSpeedClosesAMicroBatchEarlyWhenTheNextShardWouldPassBucketSize) {
  // C=100, N=2: shards 40 + 40 fit; + 30 would not.
  ScheduleOptions o = Options(1, 2, 100);
  o.micro_batch_size = 8;
  const Plan plan = MustSchedule(Policy::kDeepSpeed, MakeBatch({80, 80, 60, 10}), o);
  EXPECT_EQ(Ids(plan, 0), (std::vector<std::vector<int64_t>>{{0, 1}, {2, 3}}));
}

TEST(Schedule, DeepSpeedRefusesAMicroBatchSizeBelowOne) {
  ScheduleOptions o = Options(1, 2, 100);
  o.micro_batch_size = 0;
  auto plan = Schedule(Policy::kDeepSpeed, MakeBatch({5}), o, Qwen05Cost());
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find(
                "micro_batch_size: must be >= 1 for the deepspeed policy (got 0)"),
            std::string::npos)
      << plan.status();
  // Other policies ignore the field.
  EXPECT_TRUE(Schedule(Policy::kCpAll, MakeBatch({5}), o, Qwen05Cost()).ok());
}

TEST(Schedule, SortedGivesContiguousLengthRangesToDpRanks) {
  const Plan plan =
      MustSchedule(Policy::kSorted, MakeBatch({500, 10, 300, 20, 400, 30}), Options(2, 1, 1000));
  EXPECT_EQ(Ids(plan, 0), (std::vector<std::vector<int64_t>>{{1, 3, 5}, {}}));  // padded
  EXPECT_EQ(Ids(plan, 1), (std::vector<std::vector<int64_t>>{{2, 4}, {0}}));
  EXPECT_TRUE(AllDistributed(plan));
}

TEST(Schedule, BalancedCpBalancesFlopsAndPacksFirstFitDecreasing) {
  // LPT by FLOPs: 900 -> r0, 800 -> r1, 700 -> r1 (800 < 900), 100 -> r0,
  // 50 -> r0 (1000 < 1500). First-fit decreasing by shards (C = 500 per
  // rank, shards of S/2): r0 {900, 100} + {50}; r1 {800} + {700}.
  const Plan plan =
      MustSchedule(Policy::kBalancedCp, MakeBatch({100, 900, 50, 800, 700}), Options(2, 2, 500));
  EXPECT_EQ(Ids(plan, 0), (std::vector<std::vector<int64_t>>{{1, 0}, {2}}));
  EXPECT_EQ(Ids(plan, 1), (std::vector<std::vector<int64_t>>{{3}, {4}}));
  EXPECT_TRUE(AllDistributed(plan));
}

TEST(Schedule, SkrullPaperKeepsShortSequencesLocal) {
  const Plan plan =
      MustSchedule(Policy::kSkrullPaper, MakeBatch({100, 200, 300, 400}), Options(1, 4, 1000));
  ASSERT_EQ(plan.NumMicroBatches(), 1);
  for (const PlacedSequence& s : plan.ranks[0].micro_batches[0].sequences) {
    EXPECT_EQ(s.cp_rank, static_cast<int>(s.id)) << s.id;  // one per rank
  }
}

TEST(Schedule, SkrullDistributesALongSequenceThatWouldStallOneRank) {
  // A 20K sequence fits one rank's 26K bucket, and the paper keeps it local:
  // that rank then computes alone for its whole quadratic cost. The
  // cost-aware placement shards it.
  const auto batch = MakeBatch({500, 600, 700, 20000});
  const Plan paper = MustSchedule(Policy::kSkrullPaper, batch, Options(1, 8, 26000));
  const Plan skrull = MustSchedule(Policy::kSkrull, batch, Options(1, 8, 26000));
  EXPECT_FALSE(paper.ranks[0].micro_batches[0].sequences.back().distributed());
  EXPECT_TRUE(skrull.ranks[0].micro_batches[0].sequences.back().distributed());
}

TEST(Schedule, RoundRobinUsesTheMemoryOnlyRule) {
  const Plan plan =
      MustSchedule(Policy::kRoundRobin, MakeBatch({100, 200, 300, 400}), Options(1, 2, 1000));
  EXPECT_EQ(plan.policy, "round-robin");
  // Most room first: 100->r0, 200->r1, 300->r0 (900 > 800), 400->r1.
  std::vector<int> ranks;
  for (const PlacedSequence& s : plan.ranks[0].micro_batches[0].sequences)
    ranks.push_back(s.cp_rank);
  EXPECT_EQ(ranks, (std::vector<int>{0, 1, 0, 1}));
}

TEST(Schedule, PadsDpRanksToTheSameMicroBatchCount) {
  for (Policy p : AllPolicies()) {
    const Plan plan = MustSchedule(p, MakeBatch({900, 900, 900, 10}), Options(2, 1, 1000));
    const int n = plan.NumMicroBatches();
    for (const DpRankPlan& r : plan.ranks) {
      EXPECT_EQ(static_cast<int>(r.micro_batches.size()), n) << PolicyName(p);
    }
  }
}

TEST(Schedule, IsDeterministic) {
  const auto batch = MakeBatch({5000, 12, 900, 900, 30000, 77, 4096, 1, 2048, 16000});
  for (Policy p : AllPolicies()) {
    Plan a = MustSchedule(p, batch, Options(2, 4, 8192));
    Plan b = MustSchedule(p, batch, Options(2, 4, 8192));
    a.schedule_seconds = b.schedule_seconds = 0;
    EXPECT_EQ(PlanToJson(a), PlanToJson(b)) << PolicyName(p);
  }
}

TEST(Schedule, MeasuresItsOwnWallTime) {
  const Plan plan = MustSchedule(Policy::kSkrull, MakeBatch({100, 200}), Options(1, 2, 1000));
  EXPECT_GT(plan.schedule_seconds, 0);
  EXPECT_LT(plan.schedule_seconds, 1);
}

}  // namespace
}  // namespace skrull::scheduler
