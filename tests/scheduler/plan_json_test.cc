#include "scheduler/plan_json.h"

#include <gtest/gtest.h>

#include "scheduler/policy.h"
#include "tests/scheduler/test_util.h"

namespace skrull::scheduler {
namespace {

using testing::MakeBatch;
using testing::Qwen05Cost;

TEST(PlanJson, WritesTheDocumentedFormat) {
  ScheduleOptions o;
  o.topology = {1, 2};
  o.bucket_size_tokens = 1000;
  auto plan = Schedule(Policy::kSkrullPaper, MakeBatch({300, 200}), o, Qwen05Cost());
  ASSERT_TRUE(plan.ok());
  plan->schedule_seconds = 0.5;
  EXPECT_EQ(
      PlanToJson(*plan),
      R"({"bucket_size":1000,"cp":2,"dp":1,"micro_batches":[{"dp_rank":0,"index":0,)"
      R"("sequences":[{"cp_rank":0,"id":1,"length":200},{"cp_rank":1,"id":0,"length":300}]}],)"
      R"("policy":"skrull-paper","rollbacks":{"dacp":0,"gds":0},"schedule_seconds":0.5})");
}

TEST(PlanJson, RoundTripsAndRecomputesDerivedFields) {
  ScheduleOptions o;
  o.topology = {2, 4};
  o.bucket_size_tokens = 4096;
  const auto batch = MakeBatch({5000, 12, 900, 900, 16000, 77, 4096, 1, 2048});
  for (Policy p : AllPolicies()) {
    auto plan = Schedule(p, batch, o, Qwen05Cost());
    ASSERT_TRUE(plan.ok()) << plan.status();
    const std::string json = PlanToJson(*plan);
    auto back = PlanFromJson(json, Qwen05Cost());
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(PlanToJson(*back), json) << PolicyName(p);
    EXPECT_TRUE(VerifyPlan(*back, batch).ok()) << PolicyName(p);
    for (int d = 0; d < 2; ++d) {
      for (size_t i = 0; i < back->ranks[d].micro_batches.size(); ++i) {
        EXPECT_EQ(back->ranks[d].micro_batches[i].cp_rank_flops,
                  plan->ranks[d].micro_batches[i].cp_rank_flops);
      }
    }
  }
}

TEST(PlanJson, ErrorsNameTheFieldPath) {
  const CostModel cost = Qwen05Cost();
  auto bad_rank = PlanFromJson(R"({"policy":"x","dp":1,"cp":4,"bucket_size":10,"micro_batches":[
      {"dp_rank":0,"index":0,"sequences":[{"id":1,"length":3,"cp_rank":7}]}]})",
                               cost);
  ASSERT_FALSE(bad_rank.ok());
  EXPECT_EQ(bad_rank.status().message(),
            "plan: micro_batches[0].sequences[0].cp_rank: must be -1 or in [0, 4) (got 7)");
  auto missing = PlanFromJson(R"({"policy":"x","dp":1,"cp":1,"bucket_size":10,"micro_batches":[
      {"dp_rank":0,"index":0,"sequences":[{"id":1,"cp_rank":0}]}]})",
                              cost);
  EXPECT_EQ(missing.status().message(),
            "plan: micro_batches[0].sequences[0].length: required field missing");
  auto order = PlanFromJson(R"({"policy":"x","dp":2,"cp":1,"bucket_size":10,"micro_batches":[
      {"dp_rank":1,"index":1,"sequences":[]}]})",
                            cost);
  EXPECT_NE(order.status().message().find("micro_batches[0].index: micro-batches of dp_rank 1 "
                                          "must be listed in order; want 0 (got 1)"),
            std::string::npos)
      << order.status();
  EXPECT_EQ(PlanFromJson(R"({"policy":"x","dp":0,"cp":1,"bucket_size":1,"micro_batches":[]})", cost)
                .status()
                .message(),
            "plan: dp: must be in [1, 2147483647] (got 0)");
  EXPECT_FALSE(PlanFromJson("{", cost).ok());
  EXPECT_FALSE(PlanFromJson("[]", cost).ok());
}

}  // namespace
}  // namespace skrull::scheduler
