// GDS schedules DP ranks on several threads for large batches; the plan must
// not depend on the thread count (every rank computes the same plan).
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <vector>

#include "scheduler/gds.h"
#include "scheduler/parallel_for.h"
#include "scheduler/plan_json.h"
#include "scheduler/policy.h"
#include "tests/scheduler/test_util.h"

namespace skrull::scheduler {
namespace {

using testing::Qwen05Cost;

TEST(ParallelFor, RunsEveryIndexExactlyOnceForAnyThreadCount) {
  for (int threads : {1, 2, 3, 8, 64}) {
    std::vector<std::atomic<int>> hits(37);
    ParallelFor(37, threads, [&](int i) { hits[i].fetch_add(1); });
    for (int i = 0; i < 37; ++i) EXPECT_EQ(hits[i].load(), 1) << "threads " << threads;
  }
  int calls = 0;
  ParallelFor(0, 4, [&](int) { ++calls; });
  EXPECT_EQ(calls, 0);
}

// A long-tailed batch above kParallelMinSequences, so GDS really runs in parallel.
std::vector<Sequence> LargeBatch() {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> length(7.5, 1.2);
  std::vector<Sequence> batch;
  for (int64_t i = 0; i < static_cast<int64_t>(kParallelMinSequences) + 1000; ++i) {
    batch.push_back({i, std::clamp<int64_t>(static_cast<int64_t>(length(rng)), 1, 8 * 16384)});
  }
  return batch;
}

std::string PlanText(Policy policy, const std::vector<Sequence>& batch, int threads) {
  ScheduleOptions o;
  o.topology = {32, 8};
  o.bucket_size_tokens = 16384;
  o.threads = threads;
  auto plan = Schedule(policy, batch, o, Qwen05Cost());
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (!plan.ok()) return "";
  EXPECT_TRUE(VerifyPlan(*plan, batch).ok());
  plan->schedule_seconds = 0;
  return PlanToJson(*plan);
}

TEST(Gds, PlanIsIdenticalForEveryThreadCount) {
  const std::vector<Sequence> batch = LargeBatch();
  for (Policy p : {Policy::kSkrull, Policy::kSkrullPaper}) {
    const std::string one = PlanText(p, batch, 1);
    ASSERT_FALSE(one.empty());
    EXPECT_EQ(PlanText(p, batch, 2), one) << PolicyName(p);
    EXPECT_EQ(PlanText(p, batch, 5), one) << PolicyName(p);
  }
}

}  // namespace
}  // namespace skrull::scheduler
