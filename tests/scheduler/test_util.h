// Builders shared by the scheduler tests.
#ifndef SKRULL_TESTS_SCHEDULER_TEST_UTIL_H_
#define SKRULL_TESTS_SCHEDULER_TEST_UTIL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "scheduler/cost_model.h"
#include "scheduler/hardware_profile.h"
#include "scheduler/layout.h"
#include "scheduler/model_config.h"
#include "scheduler/plan.h"
#include "scheduler/policy.h"

namespace skrull::scheduler::testing {

// Sequences with ids 0..n-1 in the given order.
inline std::vector<Sequence> MakeBatch(const std::vector<int64_t>& lengths) {
  std::vector<Sequence> batch;
  for (size_t i = 0; i < lengths.size(); ++i)
    batch.push_back({static_cast<int64_t>(i), lengths[i]});
  return batch;
}

// Schedule options for a dp x cp layout at BucketSize `bucket`.
inline ScheduleOptions Options(int dp, int cp, int64_t bucket) {
  ScheduleOptions o;
  o.topology = {dp, cp};
  o.bucket_size_tokens = bucket;
  return o;
}

inline CostModel Qwen05Cost();

// Schedule() with the Qwen2.5-0.5B cost model; the test fails unless it
// succeeds and VerifyPlan accepts the plan.
inline Plan MustSchedule(Policy p, const std::vector<Sequence>& batch, const ScheduleOptions& o) {
  auto plan = Schedule(p, batch, o, Qwen05Cost());
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (!plan.ok()) return Plan{};
  EXPECT_TRUE(VerifyPlan(*plan, batch).ok()) << VerifyPlan(*plan, batch);
  return std::move(plan).value();
}

inline ModelConfig Preset(const std::string& name) { return ModelPreset(name).value(); }

inline CostModel Qwen05Cost() { return CostModel(Preset("qwen2.5-0.5b")); }

// A profile whose formulas are easy to compute by hand: 1e12 FLOP/s at 100%
// efficiency, 10 us + bytes / 1e9 B/s collectives (bus bandwidth), no
// launch cost.
inline HardwareProfile UnitProfile() {
  HardwareProfile p;
  p.name = "unit";
  p.peak_flops_per_second = 1e12;
  p.gemm_efficiency = {{1, 1.0}};
  p.attention_efficiency = {{1, 1.0}};
  p.all_gather = {10e-6, 1e9};
  p.reduce_scatter = {10e-6, 1e9};
  p.all_reduce = {10e-6, 1e9};
  p.kernel_launch_seconds = 0;
  p.source_notes = "test";
  return p;
}

// A random scheduling problem: mostly short sequences with a long tail,
// some reaching the CP group's capacity (the longest that fit it).
struct RandomCase {
  Topology topology;
  int64_t bucket_size_tokens = 0;
  std::vector<Sequence> batch;
};

// When `allow_too_long`, about one case in ten has a sequence over C x N.
inline RandomCase MakeRandomCase(std::mt19937_64& rng, bool allow_too_long) {
  std::uniform_real_distribution<double> u(0, 1);
  auto log_uniform = [&](double lo, double hi) {
    return static_cast<int64_t>(std::exp(std::log(lo) + (std::log(hi) - std::log(lo)) * u(rng)));
  };
  RandomCase c;
  const int cps[] = {1, 2, 3, 4, 8};
  c.topology.dp = 1 + static_cast<int>(rng() % 4);
  c.topology.cp = cps[rng() % 5];
  c.bucket_size_tokens = log_uniform(64, 32768);
  const int per_rank = 1 + static_cast<int>(rng() % 24);
  const double capacity = static_cast<double>(c.bucket_size_tokens) * c.topology.cp;
  const bool too_long = allow_too_long && rng() % 10 == 0;
  for (int k = 0; k < c.topology.dp * per_rank; ++k) {
    const double x = u(rng);
    double lo = 1, hi = 2048;
    if (x > 0.97) {
      lo = 8192, hi = capacity;
    } else if (x > 0.85) {
      lo = 2048, hi = 16384;
    }
    hi = std::min(hi, capacity);
    lo = std::min(lo, hi);
    int64_t length = std::max<int64_t>(1, log_uniform(lo, hi));
    // Near C x N a shard can hold one token more than C (layout.h).
    while (!FitsCpGroup(length, c.topology.cp, c.bucket_size_tokens)) --length;
    c.batch.push_back({k, length});
  }
  if (too_long) {
    const size_t victim = rng() % c.batch.size();
    c.batch[victim].length = static_cast<int64_t>(capacity) + 1 + static_cast<int64_t>(rng() % 100);
  }
  return c;
}

}  // namespace skrull::scheduler::testing

#endif  // SKRULL_TESTS_SCHEDULER_TEST_UTIL_H_
