// Every policy on hostile sizes: lengths near int64's
// limits, huge or degenerate layouts and BucketSizes. Each call returns a
// clean error Status or a plan that passes VerifyPlan; none aborts or wraps.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "scheduler/checked_math.h"
#include "scheduler/layout.h"
#include "scheduler/policy.h"
#include "scheduler/simulator.h"
#include "tests/scheduler/test_util.h"

namespace skrull::scheduler {
namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int kIntMax = std::numeric_limits<int>::max();

const std::vector<int64_t>& HostileLengths() {
  static const std::vector<int64_t> lengths = {kInt64Min,
                                               -1,
                                               0,
                                               1,
                                               int64_t{1} << 31,
                                               kMaxSequenceTokens,
                                               kMaxSequenceTokens + 1,
                                               int64_t{1} << 62,
                                               kInt64Max};
  return lengths;
}

const std::vector<Topology>& HostileTopologies() {
  static const std::vector<Topology> topologies = {
      {1, 1}, {2, 4}, {8, 8192},          {4096, 16}, {65536, 65536},
      {0, 1}, {1, 0}, {kIntMax, kIntMax}, {-1, 2}};
  return topologies;
}

const std::vector<int64_t>& HostileBuckets() {
  static const std::vector<int64_t> buckets = {
      -1, 0, 1, 26624, kMaxBucketSizeTokens, kMaxBucketSizeTokens + 1, kInt64Max};
  return buckets;
}

TEST(HostileInput, EveryPolicyReturnsAnErrorOrAVerifiedPlan) {
  const CostModel cost = testing::Qwen05Cost();
  int plans = 0;
  int errors = 0;
  for (Policy policy : AllPolicies()) {
    for (int64_t length : HostileLengths()) {
      for (const Topology& topology : HostileTopologies()) {
        for (int64_t bucket : HostileBuckets()) {
          const std::vector<Sequence> batch = testing::MakeBatch({1000, length, 7});
          ScheduleOptions options;
          options.topology = topology;
          options.bucket_size_tokens = bucket;
          const std::string where =
              std::string(PolicyName(policy)) + " length=" + std::to_string(length) +
              " dp=" + std::to_string(topology.dp) + " cp=" + std::to_string(topology.cp) +
              " bucket=" + std::to_string(bucket);
          auto plan = Schedule(policy, batch, options, cost);
          if (!plan.ok()) {
            ++errors;
            EXPECT_TRUE(plan.status().code() == StatusCode::kInvalidArgument ||
                        plan.status().code() == StatusCode::kFailedPrecondition)
                << where << ": " << plan.status();
            continue;
          }
          ++plans;
          EXPECT_TRUE(VerifyPlan(*plan, batch).ok()) << where << ": " << VerifyPlan(*plan, batch);
          for (const DpRankPlan& rank : plan->ranks) {
            for (const MicroBatch& mb : rank.micro_batches) {
              for (int64_t tokens : mb.cp_rank_tokens) {
                ASSERT_GE(tokens, 0) << where;
                ASSERT_LE(tokens, bucket) << where;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(plans, 0);
  EXPECT_GT(errors, 0);
}

TEST(HostileInput, TheLimitsThemselvesArePlannedByEveryPolicy) {
  const CostModel cost = testing::Qwen05Cost();
  ScheduleOptions options;
  options.topology = {static_cast<int>(kMaxWorldSize / 16), 16};
  options.bucket_size_tokens = kMaxBucketSizeTokens;
  const std::vector<Sequence> batch = testing::MakeBatch({kMaxSequenceTokens, 1, 26624});
  for (Policy policy : AllPolicies()) {
    auto plan = Schedule(policy, batch, options, cost);
    ASSERT_TRUE(plan.ok()) << PolicyName(policy) << ": " << plan.status();
    EXPECT_TRUE(VerifyPlan(*plan, batch).ok()) << PolicyName(policy);
  }
}

TEST(HostileInput, LengthAboveTheMaximumIsInvalidArgumentForEveryPolicy) {
  const CostModel cost = testing::Qwen05Cost();
  ScheduleOptions options;
  options.topology = {2, 4};
  options.bucket_size_tokens = 26624;
  for (Policy policy : AllPolicies()) {
    for (int64_t length : {kMaxSequenceTokens + 1, int64_t{1} << 62, kInt64Max}) {
      auto plan = Schedule(policy, testing::MakeBatch({length, 5}), options, cost);
      ASSERT_FALSE(plan.ok()) << PolicyName(policy) << " length " << length;
      EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
      EXPECT_NE(plan.status().message().find("length must be <= 2147483647 (got " +
                                             std::to_string(length) + ")"),
                std::string::npos)
          << plan.status();
    }
  }
}

TEST(HostileInput, WorldSizeAboveTheMaximumNamesDpTimesCp) {
  ScheduleOptions options;
  options.topology = {65536, 65536};
  options.bucket_size_tokens = 26624;
  auto plan = Schedule(Policy::kSkrull, testing::MakeBatch({5}), options, testing::Qwen05Cost());
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find(
                "topology: dp x cp = 4294967296 ranks exceeds the maximum 65536"),
            std::string::npos)
      << plan.status();
}

TEST(HostileInput, ShardTokensDoesNotOverflowNearInt64Max) {
  EXPECT_EQ(ShardTokens(kInt64Max, 1), kInt64Max);
  EXPECT_EQ(ShardTokens(kInt64Max, 2), int64_t{1} << 62);
  EXPECT_EQ(ShardTokens(kInt64Max - 1, 2), (kInt64Max - 1) / 2);
  EXPECT_EQ(ShardTokens(kInt64Max, 65536), (kInt64Max >> 16) + 1);
  EXPECT_EQ(ShardTokens(7, 8), 2);  // ceil(7 / 8) = 1, but rank 2 holds chunks 2 and 13
  EXPECT_EQ(ShardTokens(0, 8), 0);
}

TEST(HostileInput, CheckedMathRefusesOverflow) {
  int64_t out = 0;
  EXPECT_FALSE(CheckedMul(int64_t{1} << 32, int64_t{1} << 31, &out));
  EXPECT_TRUE(CheckedMul(int64_t{1} << 31, int64_t{1} << 31, &out));
  EXPECT_EQ(out, int64_t{1} << 62);
  EXPECT_FALSE(CheckedAdd(kInt64Max, 1, &out));
  EXPECT_FALSE(MulAtMost(65536, 65536, kMaxWorldSize, &out));
  EXPECT_TRUE(MulAtMost(256, 256, kMaxWorldSize, &out));
}

TEST(HostileInput, SimulateRefusesHugeBatchesAndLengthsWithoutAllocating) {
  const CostModel cost = testing::Qwen05Cost();
  const HardwareProfile hw = H100Profile();
  SimulationOptions options;
  options.topology = {65536, 1};
  options.bucket_size_tokens = 26624;
  options.batch_size = 1 << 24;
  options.steps = 1;
  auto huge = Simulate({100, 200}, options, cost, hw);
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("dp x batch_size = 1099511627776 sequences per step "
                                         "exceeds the maximum 16777216"),
            std::string::npos)
      << huge.status();

  options.batch_size = 2;
  options.topology = {2, 2};
  auto too_long = Simulate({100, kInt64Max}, options, cost, hw);
  ASSERT_FALSE(too_long.ok());
  EXPECT_NE(too_long.status().message().find("dataset[1]: length must be <= 2147483647"),
            std::string::npos)
      << too_long.status();
}

}  // namespace
}  // namespace skrull::scheduler
