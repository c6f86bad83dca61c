// Properties of every policy over thousands of seeded random batches: a mix
// of short sequences and a long tail, random DP x CP and BucketSize.
#include <gtest/gtest.h>

#include "scheduler/layout.h"
#include "scheduler/plan_json.h"
#include "scheduler/policy.h"
#include "scheduler/simulator.h"
#include "tests/scheduler/test_util.h"

namespace skrull::scheduler {
namespace {

using testing::MakeRandomCase;
using testing::RandomCase;

constexpr int kCases = 2000;

bool TooLong(const RandomCase& c) {
  for (const Sequence& s : c.batch) {
    if (!FitsCpGroup(s.length, c.topology.cp, c.bucket_size_tokens)) return true;
  }
  return false;
}

std::string Describe(const RandomCase& c, int index) {
  std::string s = "case " + std::to_string(index) + ": dp=" + std::to_string(c.topology.dp) +
                  " cp=" + std::to_string(c.topology.cp) +
                  " bucket=" + std::to_string(c.bucket_size_tokens) + " lengths=";
  for (const Sequence& q : c.batch) s += std::to_string(q.length) + ",";
  return s;
}

class SchedulerProperties : public ::testing::Test {
 protected:
  SchedulerProperties() : cost_(testing::Qwen05Cost()), hw_(H100Profile()) {}

  ScheduleOptions Options(const RandomCase& c) const {
    ScheduleOptions o;
    o.topology = c.topology;
    o.bucket_size_tokens = c.bucket_size_tokens;
    o.hardware = &hw_;
    return o;
  }

  const CostModel cost_;
  const HardwareProfile hw_;
};

TEST_F(SchedulerProperties, EveryPlanPlacesEachSequenceOnceWithinBucketOrFailsOnlyWhenTooLong) {
  std::mt19937_64 rng(20250519);
  int refused = 0;
  for (int i = 0; i < kCases; ++i) {
    const RandomCase c = MakeRandomCase(rng, /*allow_too_long=*/true);
    const bool too_long = TooLong(c);
    refused += too_long;
    for (Policy p : AllPolicies()) {
      auto plan = Schedule(p, c.batch, Options(c), cost_);
      if (too_long) {
        ASSERT_EQ(plan.status().code(), StatusCode::kFailedPrecondition)
            << PolicyName(p) << " " << Describe(c, i);
        continue;
      }
      ASSERT_TRUE(plan.ok()) << PolicyName(p) << " " << plan.status() << " " << Describe(c, i);
      // Every sequence exactly once, no CP rank above BucketSize, equal
      // micro-batch counts, derived tokens consistent.
      const Status verified = VerifyPlan(*plan, c.batch);
      ASSERT_TRUE(verified.ok()) << PolicyName(p) << " " << verified << " " << Describe(c, i);
      for (const DpRankPlan& rank : plan->ranks) {
        for (const MicroBatch& mb : rank.micro_batches) {
          for (int64_t tokens : mb.cp_rank_tokens) ASSERT_LE(tokens, c.bucket_size_tokens);
        }
      }
    }
  }
  EXPECT_GT(refused, kCases / 20);  // the generator does exercise the refusal
}

TEST_F(SchedulerProperties, PlansAreDeterministicAndRoundTripThroughJson) {
  std::mt19937_64 rng(42);
  for (int i = 0; i < kCases / 2; ++i) {
    const RandomCase c = MakeRandomCase(rng, /*allow_too_long=*/false);
    for (Policy p : AllPolicies()) {
      auto a = Schedule(p, c.batch, Options(c), cost_);
      auto b = Schedule(p, c.batch, Options(c), cost_);
      ASSERT_TRUE(a.ok() && b.ok()) << Describe(c, i);
      a->schedule_seconds = b->schedule_seconds = 0;
      const std::string json = PlanToJson(*a);
      ASSERT_EQ(json, PlanToJson(*b)) << PolicyName(p) << " " << Describe(c, i);
      auto back = PlanFromJson(json, cost_);
      ASSERT_TRUE(back.ok()) << back.status();
      ASSERT_EQ(PlanToJson(*back), json) << PolicyName(p) << " " << Describe(c, i);
    }
  }
}

// Skrull prices candidate plans with the simulator's time model and its
// candidates include static CP's DP split and packing, the balanced-CP
// packing and the paper's GDS + DACP; so under the same HardwareProfile it
// is never slower than any of them. These assertions guard that contract.
TEST_F(SchedulerProperties, SkrullIsNeverSimulatedSlowerThanCpAllBalancedCpOrThePaper) {
  std::mt19937_64 rng(7);
  double skrull_total = 0, cp_all_total = 0;
  for (int i = 0; i < kCases; ++i) {
    const RandomCase c = MakeRandomCase(rng, /*allow_too_long=*/false);
    auto seconds = [&](Policy p) {
      auto plan = Schedule(p, c.batch, Options(c), cost_);
      EXPECT_TRUE(plan.ok()) << plan.status();
      return SimulatePlan(*plan, cost_, hw_).seconds;
    };
    const double skrull = seconds(Policy::kSkrull);
    const double cp_all = seconds(Policy::kCpAll);
    ASSERT_LE(skrull, cp_all * (1 + 1e-12)) << Describe(c, i);
    ASSERT_LE(skrull, seconds(Policy::kBalancedCp) * (1 + 1e-12)) << Describe(c, i);
    ASSERT_LE(skrull, seconds(Policy::kSkrullPaper) * (1 + 1e-12)) << Describe(c, i);
    skrull_total += skrull;
    cp_all_total += cp_all;
  }
  EXPECT_LT(skrull_total, 0.95 * cp_all_total);  // and clearly faster overall
}

}  // namespace
}  // namespace skrull::scheduler
