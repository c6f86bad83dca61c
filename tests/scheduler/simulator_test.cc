#include "scheduler/simulator.h"

#include <random>

#include <gtest/gtest.h>

#include "tests/scheduler/test_util.h"

namespace skrull::scheduler {
namespace {

using testing::MakeBatch;
using testing::Preset;
using testing::UnitProfile;

// The tiny model (h=64, q=64, kv=32, f=176, L=2, V=256):
//   linear fwd+bwd = 6 * (2 * 46,080 + 64 * 256) = 651,264 FLOPs per token,
//   attention = 3 * 2 * 2 * 64 = 768 FLOPs per S^2, K/V = 128 B per token
//   and layer. UnitProfile: 1e12 FLOP/s flat, collectives 10 us + bus bytes
//   / 1e9 B/s, no launch cost.
constexpr double kLinear = 651264.0 / 1e12;  // seconds per token
constexpr double kAttention = 768.0 / 1e12;  // seconds per S^2

MicroBatch Mb(std::vector<PlacedSequence> sequences, int dp_rank = 0, int index = 0) {
  MicroBatch mb;
  mb.dp_rank = dp_rank;
  mb.index = index;
  mb.sequences = std::move(sequences);
  return mb;
}

TEST(Simulator, MicroBatchOverlapsCommWithLocalComputeThenRunsShards) {
  const CostModel cost(Preset("tiny"));
  // cp=2: id 0 (1000) local on r0, id 1 (2000) distributed: 1000 per rank.
  const MicroBatchTime t =
      SimulateMicroBatch(Mb({{0, 1000, 0}, {1, 2000, kDistributed}}), 2, cost, UnitProfile());
  // Per layer: all-gather + reduce-scatter of 2000 * 128 B over 2 ranks.
  const double comm = 2 * 2 * (10e-6 + 2000 * 128 * 0.5 / 1e9);
  EXPECT_DOUBLE_EQ(t.comm_seconds, comm);
  const double local0 = kLinear * 1000 + kAttention * 1000 * 1000;
  const double shards = kLinear * 1000 + kAttention * 2000 * 2000 / 2;
  ASSERT_EQ(t.cp_rank_seconds.size(), 2u);
  EXPECT_DOUBLE_EQ(t.cp_rank_seconds[0], std::max(comm, local0) + shards);  // comm hidden
  EXPECT_DOUBLE_EQ(t.cp_rank_seconds[1], comm + shards);                    // comm exposed
  EXPECT_DOUBLE_EQ(t.seconds, t.cp_rank_seconds[0]);
  EXPECT_DOUBLE_EQ(t.compute_seconds, local0 + shards);
}

TEST(Simulator, AllLocalMicroBatchHasNoCommAndCpOneNeverCommunicates) {
  const CostModel cost(Preset("tiny"));
  const MicroBatchTime local = SimulateMicroBatch(Mb({{0, 500, 1}}), 4, cost, UnitProfile());
  EXPECT_EQ(local.comm_seconds, 0);
  EXPECT_DOUBLE_EQ(local.seconds, kLinear * 500 + kAttention * 500 * 500);
  EXPECT_EQ(local.cp_rank_seconds[0], 0);  // idle rank
  const MicroBatchTime cp1 =
      SimulateMicroBatch(Mb({{0, 500, kDistributed}}), 1, cost, UnitProfile());
  EXPECT_EQ(cp1.comm_seconds, 0);
  EXPECT_DOUBLE_EQ(cp1.seconds, local.seconds);
}

TEST(Simulator, RecomputeAddsAForwardAndAnAllGather) {
  CostModelOptions o;
  o.recompute = true;
  const CostModel cost(Preset("tiny"), o);
  const MicroBatchTime t =
      SimulateMicroBatch(Mb({{0, 2000, kDistributed}}), 2, cost, UnitProfile());
  EXPECT_DOUBLE_EQ(t.comm_seconds, 2 * (2 + 1) * (10e-6 + 2000 * 128 * 0.5 / 1e9));
  EXPECT_DOUBLE_EQ(t.seconds,
                   t.comm_seconds + 4.0 / 3 * (kLinear * 1000 + kAttention * 2000 * 2000 / 2));
}

TEST(Simulator, KernelLaunchesAndEfficiencyTablesSlowSmallMicroBatches) {
  const CostModel cost(Preset("tiny"));
  HardwareProfile hw = UnitProfile();
  hw.kernel_launch_seconds = 1e-6;
  hw.gemm_efficiency = {{100, 0.5}, {1000, 1.0}};
  hw.attention_efficiency = {{100, 0.25}, {1000, 1.0}};
  const MicroBatchTime t = SimulateMicroBatch(Mb({{0, 100, 0}}), 1, cost, hw);
  // 40 kernels per layer, 2 layers.
  EXPECT_DOUBLE_EQ(t.seconds, kLinear * 100 / 0.5 + kAttention * 100 * 100 / 0.25 + 80e-6);
}

TEST(Simulator, PlanTakesTheSlowestDpRankPlusTheGradientAllReduce) {
  const CostModel cost(Preset("tiny"));
  Plan plan;
  plan.topology = {2, 2};
  plan.bucket_size_tokens = 10000;
  plan.ranks.resize(2);
  plan.ranks[0].micro_batches = {Mb({{0, 1000, 0}, {1, 2000, kDistributed}}),
                                 Mb({{2, 10, 1}}, 0, 1)};
  plan.ranks[1].micro_batches = {Mb({{3, 300, 0}}, 1, 0), Mb({}, 1, 1)};  // padded
  const IterationTime it = SimulatePlan(plan, cost, UnitProfile());
  const double mb0 =
      SimulateMicroBatch(plan.ranks[0].micro_batches[0], 2, cost, UnitProfile()).seconds;
  const double mb1 = kLinear * 10 + kAttention * 100;
  ASSERT_EQ(it.dp_rank_seconds.size(), 2u);
  EXPECT_DOUBLE_EQ(it.dp_rank_seconds[0], mb0 + mb1);
  EXPECT_DOUBLE_EQ(it.dp_rank_seconds[1], kLinear * 300 + kAttention * 300 * 300);
  // 109,120 parameters x 4 bytes all-reduced over 4 ranks: 2 * 3/4 bus factor.
  const double all_reduce = 10e-6 + 109120.0 * 4 * 1.5 / 1e9;
  EXPECT_DOUBLE_EQ(it.seconds, mb0 + mb1 + all_reduce);
  EXPECT_DOUBLE_EQ(it.comm_seconds, 2 * 2 * (10e-6 + 2000 * 128 * 0.5 / 1e9) + all_reduce);
}

// Qwen2.5-0.5B's gradient (about 2 GB in fp32) is many 25 MiB buckets: the
// all-reduce starts with the last micro-batch's backward (2/3 of it) and
// only its last bucket is sure to follow the backward.
TEST(Simulator, TheLastMicroBatchsBackwardHidesTheGradientAllReduce) {
  const CostModel cost = testing::Qwen05Cost();
  HardwareProfile hw = UnitProfile();
  hw.all_reduce = {10e-6, 1e8};
  Plan plan;
  plan.topology = {2, 1};
  plan.bucket_size_tokens = 100000;
  plan.ranks.resize(2);
  const MicroBatch big = Mb({{0, 2000, 0}}), small = Mb({{1, 300, 0}}, 0, 1);
  const double t_big = SimulateMicroBatch(big, 1, cost, hw).seconds;
  const double t_small = SimulateMicroBatch(small, 1, cost, hw).seconds;
  plan.ranks[1].micro_batches = {Mb({{2, 100, 0}}, 1, 0), Mb({}, 1, 1)};
  const double t_other = SimulateMicroBatch(plan.ranks[1].micro_batches[0], 1, cost, hw).seconds;
  const GradientSync sync = MakeGradientSync(cost, hw, 2);
  const double bytes = cost.GradientBytes();
  ASSERT_GT(bytes, kGradientBucketBytes * 10);
  EXPECT_DOUBLE_EQ(sync.reduce_seconds, 10e-6 + bytes / 1e8);  // 2(n-1)/n = 1 for n = 2
  EXPECT_DOUBLE_EQ(sync.last_bucket_seconds, 10e-6 + kGradientBucketBytes / 1e8);
  EXPECT_DOUBLE_EQ(sync.backward_fraction, 2.0 / 3.0);
  // The all-reduce is longer than any backward here, so rank 1 (little
  // work, launches early) does not bound the iteration; rank 0 does.
  ASSERT_GT(sync.reduce_seconds, t_big);

  // Costliest last: the all-reduce starts when rank 0 begins the big backward.
  plan.ranks[0].micro_batches = {small, big};
  IterationTime it = SimulatePlan(plan, cost, hw);
  const double costliest_last = t_small + t_big / 3 + sync.reduce_seconds;
  EXPECT_DOUBLE_EQ(it.seconds, costliest_last);
  EXPECT_DOUBLE_EQ(it.all_reduce_seconds, sync.reduce_seconds);
  EXPECT_DOUBLE_EQ(it.exposed_all_reduce_seconds, costliest_last - (t_small + t_big));
  EXPECT_DOUBLE_EQ(it.dp_rank_seconds[1], t_other);

  // Cheapest last hides less: only the small backward overlaps.
  plan.ranks[0].micro_batches = {big, small};
  it = SimulatePlan(plan, cost, hw);
  EXPECT_DOUBLE_EQ(it.seconds, t_big + t_small / 3 + sync.reduce_seconds);
  EXPECT_GT(it.seconds, costliest_last);

  // A backward longer than the all-reduce leaves only the last bucket exposed.
  GradientSync cheap = sync;
  cheap.reduce_seconds = t_big / 10;
  EXPECT_DOUBLE_EQ(cheap.RankSeconds(t_small + t_big, t_big),
                   t_small + t_big + sync.last_bucket_seconds);
}

TEST(Simulator, SimulateIsDeterministicAndEveryPolicySeesTheSameBatches) {
  const CostModel cost(Preset("qwen2.5-0.5b"));
  std::vector<int64_t> dataset;
  for (int i = 1; i <= 500; ++i) dataset.push_back(i * i % 9973 + 1);
  SimulationOptions o;
  o.topology = {2, 4};
  o.bucket_size_tokens = 8192;
  o.batch_size = 16;
  o.steps = 5;
  o.seed = 3;
  auto all = Simulate(dataset, o, cost, H100Profile());
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->policies.size(), AllPolicies().size());
  o.policies = {Policy::kCpAll};
  auto one = Simulate(dataset, o, cost, H100Profile());
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->lower_bound_seconds, all->lower_bound_seconds);
  const PolicyStats& a = all->policies.at("cp-all");
  const PolicyStats& b = one->policies.at("cp-all");
  EXPECT_EQ(a.mean_iteration_seconds, b.mean_iteration_seconds);
  EXPECT_EQ(a.tokens_per_second, b.tokens_per_second);
  for (const auto& [name, stats] : all->policies) {
    EXPECT_GE(stats.mean_iteration_seconds, all->lower_bound_seconds) << name;
    EXPECT_GE(stats.flops_imbalance, 1.0 - 1e-9) << name;
    EXPECT_LE(stats.peak_tokens_fraction, 1.0) << name;
    EXPECT_GT(stats.tokens_per_second, 0) << name;
  }
  EXPECT_LE(all->policies.at("skrull").mean_iteration_seconds,
            all->policies.at("cp-all").mean_iteration_seconds);
}

TEST(Simulator, SimulateReportsBadOptionsAndSchedulingErrors) {
  const CostModel cost(Preset("tiny"));
  SimulationOptions o;
  auto bad = Simulate({}, o, cost, UnitProfile());
  ASSERT_FALSE(bad.ok());
  for (const char* want : {"dataset: no sequence lengths", "bucket_size_tokens: must be > 0",
                           "batch_size: must be >= 1", "steps: must be >= 1"}) {
    EXPECT_NE(bad.status().message().find(want), std::string::npos) << want;
  }
  o.topology = {1, 2};
  o.bucket_size_tokens = 100;
  o.batch_size = 1;
  o.steps = 1;
  o.policies = {Policy::kSkrull};
  auto too_long = Simulate({500}, o, cost, UnitProfile());
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(too_long.status().message().find("policy skrull, step 0: sequence id 0 has 500 tokens"),
            std::string::npos)
      << too_long.status();
}

// Tiny model, dp=2 x cp=1, one sequence per micro-batch: the ZeRO stages'
// gradient synchronisation in closed form (UnitProfile: 10 us + bus bytes / 1e9).
struct TwoRankPlan {
  CostModel cost{Preset("tiny")};
  HardwareProfile hw = UnitProfile();
  Plan plan;
  double t_big = 0, t_small = 0;
  TwoRankPlan() {
    plan.topology = {2, 1};
    plan.bucket_size_tokens = 100000;
    plan.ranks.resize(2);
    const MicroBatch big = Mb({{0, 4000, 0}}), small = Mb({{1, 100, 0}}, 0, 1);
    t_big = SimulateMicroBatch(big, 1, cost, hw).seconds;
    t_small = SimulateMicroBatch(small, 1, cost, hw).seconds;
    plan.ranks[0].micro_batches = {big, small};
    plan.ranks[1].micro_batches = {Mb({{2, 100, 0}}, 1, 0), Mb({{3, 4000, 0}}, 1, 1)};
  }
  double GradientBytes() const { return cost.GradientBytes(); }
  double ParameterBytes() const { return cost.model().NumParameters() * 2.0; }
};

TEST(Simulator, ZeroStageOneReduceScattersAtStepEndThenAllGathersParameters) {
  const TwoRankPlan p;
  const GradientSync sync = MakeGradientSync(p.cost, p.hw, 2, 1);
  EXPECT_DOUBLE_EQ(sync.reduce_seconds, 10e-6 + p.GradientBytes() * 0.5 / 1e9);
  EXPECT_DOUBLE_EQ(sync.parameter_all_gather_seconds, 10e-6 + p.ParameterBytes() * 0.5 / 1e9);
  const IterationTime it = SimulatePlan(p.plan, p.cost, p.hw, 1);
  // Rank 1 runs its big micro-batch last and hides more of the reduction,
  // so rank 0 (small last) bounds the step.
  const double rank0 = sync.RankSeconds(p.t_big + p.t_small, p.t_small);
  EXPECT_DOUBLE_EQ(it.seconds, rank0 + sync.parameter_all_gather_seconds);
  EXPECT_DOUBLE_EQ(it.all_reduce_seconds, sync.reduce_seconds);
  EXPECT_LT(sync.reduce_seconds, MakeGradientSync(p.cost, p.hw, 2, 0).reduce_seconds);
}

TEST(Simulator, ZeroStageTwoMakesDpRanksMeetAtEveryMicroBatch) {
  const TwoRankPlan p;
  const GradientSync sync = MakeGradientSync(p.cost, p.hw, 2, 2);
  const IterationTime it = SimulatePlan(p.plan, p.cost, p.hw, 2);
  // Both micro-batch indexes wait for the rank running the big one.
  const double big = sync.MicroBatchSeconds(p.t_big);
  EXPECT_DOUBLE_EQ(it.seconds, 2 * big + sync.parameter_all_gather_seconds);
  EXPECT_DOUBLE_EQ(it.dp_rank_seconds[0], p.t_big + p.t_small);
  EXPECT_DOUBLE_EQ(it.exposed_all_reduce_seconds, it.seconds - (p.t_big + p.t_small));
  // Stage 0 and 1 meet once per step: both are faster on this imbalance.
  EXPECT_LT(SimulatePlan(p.plan, p.cost, p.hw, 1).seconds, it.seconds);
  EXPECT_LT(SimulatePlan(p.plan, p.cost, p.hw, 0).seconds, it.seconds);
}

TEST(Simulator, ZeroStageTwoChargesAPaddingMicroBatchItsReduceScatter) {
  TwoRankPlan p;
  p.plan.ranks[0].micro_batches = {Mb({{0, 100, 0}}), Mb({}, 0, 1)};
  p.plan.ranks[1].micro_batches = {Mb({{2, 100, 0}}, 1, 0), Mb({}, 1, 1)};
  const GradientSync sync = MakeGradientSync(p.cost, p.hw, 2, 2);
  EXPECT_DOUBLE_EQ(sync.MicroBatchSeconds(0), sync.reduce_seconds);
  EXPECT_DOUBLE_EQ(
      SimulatePlan(p.plan, p.cost, p.hw, 2).seconds,
      sync.MicroBatchSeconds(p.t_small) + sync.reduce_seconds + sync.parameter_all_gather_seconds);
}

TEST(Simulator, TightBoundPricesEachSequenceAtItsBestEfficiencyOverAllGpus) {
  const CostModel cost(Preset("tiny"));
  HardwareProfile hw = UnitProfile();
  hw.gemm_efficiency = {{100, 0.25}, {1000, 0.5}, {2000, 1.0}};
  hw.attention_efficiency = {{100, 0.5}, {400, 1.0}};
  // Bucket 1000: GEMMs of a full bucket (0.5) for both; attention at each
  // sequence's own length (100: 0.5, 400: 1.0). 2 x 2 GPUs.
  const double want = (kLinear * 100 / 0.5 + kAttention * 100 * 100 / 0.5 + kLinear * 400 / 0.5 +
                       kAttention * 400 * 400 / 1.0) /
                      4;
  EXPECT_DOUBLE_EQ(TightLowerBoundSeconds({100, 400}, {2, 2}, 1000, cost, hw), want);
  // A sequence longer than the bucket is sharded: no kernel holds more than
  // BucketSize rows, so 2000 tokens still get the 1000-row GEMM efficiency.
  EXPECT_DOUBLE_EQ(TightLowerBoundSeconds({2000}, {1, 2}, 1000, cost, hw),
                   (kLinear * 2000 / 0.5 + kAttention * 2000 * 2000) / 2);
}

TEST(Simulator, ReachableBoundAddsTheLongestSequencesPathAndTheUnhiddenGradientSync) {
  const CostModel cost(Preset("tiny"));
  HardwareProfile hw = UnitProfile();
  hw.kernel_launch_seconds = 1e-6;
  // 2 x 2 GPUs; the 4000-token sequence alone, over its 2 CP ranks, takes
  // longer than all the work spread over 4 GPUs; its micro-batch pays the
  // launches once.
  const double path = (kLinear * 4000 + kAttention * 4000 * 4000) / 2 +
                      LaunchCostPerMicroBatch(cost, hw).serial_seconds;
  ASSERT_GT(LaunchCostPerMicroBatch(cost, hw).serial_seconds, 0);
  ASSERT_GT(path, TightLowerBoundSeconds({100, 4000}, {2, 2}, 4096, cost, hw));
  for (int stage = 0; stage <= 2; ++stage) {
    const GradientSync sync = MakeGradientSync(cost, hw, 4, stage);
    EXPECT_DOUBLE_EQ(ReachableBoundSeconds({100, 4000}, {2, 2}, 4096, cost, hw, stage),
                     std::max(path + sync.last_bucket_seconds,
                              (1 - sync.backward_fraction) * path + sync.reduce_seconds) +
                         sync.parameter_all_gather_seconds + sync.optimizer_step_seconds)
        << "stage " << stage;
  }
}

// The reachable bound is a bound: no policy's plan is priced below it, at
// any ZeRO stage, on random batches.
TEST(Simulator, NoPlanIsPricedBelowTheReachableBound) {
  const CostModel cost(Preset("qwen2.5-0.5b"));
  const HardwareProfile hw = H100Profile();
  std::mt19937_64 rng(3);
  for (int i = 0; i < 150; ++i) {
    const testing::RandomCase c = testing::MakeRandomCase(rng, /*allow_too_long=*/false);
    std::vector<int64_t> lengths;
    for (const Sequence& s : c.batch) lengths.push_back(s.length);
    ScheduleOptions so;
    so.topology = c.topology;
    so.bucket_size_tokens = c.bucket_size_tokens;
    so.hardware = &hw;
    for (Policy p : AllPolicies()) {
      auto plan = Schedule(p, c.batch, so, cost);
      ASSERT_TRUE(plan.ok()) << plan.status();
      for (int stage = 0; stage <= 2; ++stage) {
        const double bound =
            ReachableBoundSeconds(lengths, c.topology, c.bucket_size_tokens, cost, hw, stage);
        ASSERT_LE(bound, SimulatePlan(*plan, cost, hw, stage).seconds * (1 + 1e-12))
            << PolicyName(p) << " stage " << stage << " case " << i;
      }
    }
  }
}

TEST(Simulator, ReachableBoundChargesTheEagerCpuFloorAndTheGradientDtype) {
  const CostModel cost(Preset("tiny"));
  HardwareProfile hw = UnitProfile();
  hw.cpu_seconds_per_kernel = 1.0;  // the floor outlasts any work here
  const double floor = LaunchCostPerMicroBatch(cost, hw).cpu_floor_seconds;
  ASSERT_GT(floor, kLinear * 100 + kAttention * 100 * 100);
  const GradientSync sync = MakeGradientSync(cost, hw, 1, 0);
  const double bound = ReachableBoundSeconds({100}, {1, 1}, 4096, cost, hw);
  EXPECT_DOUBLE_EQ(bound, std::max(floor + sync.last_bucket_seconds,
                                   (1 - sync.backward_fraction) * floor + sync.reduce_seconds) +
                              sync.optimizer_step_seconds);
  // A slow link: the reduction outlasts the step, and bf16 halves its bytes.
  hw.all_reduce = {1e-6, 1e3};
  GradientSyncOptions fp32, bf16;
  bf16.dtype = GradReduceDtype::kBf16;
  EXPECT_LT(ReachableBoundSeconds({100}, {2, 1}, 4096, cost, hw, bf16),
            ReachableBoundSeconds({100}, {2, 1}, 4096, cost, hw, fp32));
}

TEST(Simulator, ReachableBoundCapsAttentionEfficiencyAtBucketSizeQueries) {
  const CostModel cost(Preset("tiny"));
  HardwareProfile hw = UnitProfile();
  hw.attention_efficiency = {{100, 0.5}, {1000, 1.0}};
  // 800 tokens at BucketSize 100 run as shards of <= 100 queries: attention
  // at 0.5 however it is placed (the tight bound grants 1.0). One GPU.
  const GradientSync sync = MakeGradientSync(cost, hw, 1, 0);
  const double compute = kLinear * 800 + kAttention * 800 * 800 / 0.5;
  EXPECT_DOUBLE_EQ(ReachableBoundSeconds({800}, {1, 1}, 100, cost, hw),
                   std::max(compute + sync.last_bucket_seconds,
                            (1 - sync.backward_fraction) * compute + sync.reduce_seconds));
}

TEST(Simulator, SimulatePricesDeepSpeedAtZeroTwoAndKeepsEveryPolicyAboveTheTightBound) {
  const CostModel cost(Preset("tiny"));
  std::vector<int64_t> dataset;
  for (int i = 1; i <= 200; ++i) dataset.push_back(i * i % 4001 + 1);
  SimulationOptions o;
  o.topology = {2, 2};
  o.bucket_size_tokens = 4096;
  o.batch_size = 6;
  o.steps = 1;
  o.seed = 7;
  auto report = Simulate(dataset, o, cost, UnitProfile());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_LE(report->tight_bound_seconds, report->reachable_bound_seconds);
  for (const auto& [name, stats] : report->policies) {
    EXPECT_LE(report->tight_bound_seconds, stats.mean_iteration_seconds) << name;
    if (name == "deepspeed") continue;  // priced at ZeRO-2, the bound at stage 0
    EXPECT_LE(report->reachable_bound_seconds, stats.mean_iteration_seconds * (1 + 1e-12)) << name;
  }
  // Simulate's one batch, rebuilt: deepspeed's plan priced at stage 2.
  std::mt19937_64 rng(o.seed);
  std::uniform_int_distribution<size_t> pick(0, dataset.size() - 1);
  std::vector<Sequence> batch(12);
  for (size_t k = 0; k < batch.size(); ++k) batch[k] = {int64_t(k), dataset[pick(rng)]};
  ScheduleOptions so;
  so.topology = o.topology;
  so.bucket_size_tokens = o.bucket_size_tokens;
  auto plan = Schedule(Policy::kDeepSpeed, batch, so, cost);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_DOUBLE_EQ(report->policies.at("deepspeed").mean_iteration_seconds,
                   SimulatePlan(*plan, cost, UnitProfile(), 2).seconds);
  EXPECT_EQ(PricingZeroStage(Policy::kDeepSpeed, 0), 2);
  EXPECT_EQ(PricingZeroStage(Policy::kSkrull, 1), 1);
}

TEST(Simulator, SimulateRefusesAZeroStageItDoesNotPrice) {
  const CostModel cost(Preset("tiny"));
  SimulationOptions o;
  o.topology = {1, 1};
  o.bucket_size_tokens = 100;
  o.batch_size = 1;
  o.steps = 1;
  o.zero_stage = 3;
  auto bad = Simulate({10}, o, cost, UnitProfile());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("zero_stage: must be 0, 1 or 2 (got 3)"), std::string::npos)
      << bad.status();
}

}  // namespace
}  // namespace skrull::scheduler
