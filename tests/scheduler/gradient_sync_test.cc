// The gradient synchronisation's options (pricing.h, GradientSyncOptions):
// the element type on the wire, DeepSpeed's multi-rank bucket all-reduce at
// stage 2, and a reduction on the compute stream.
#include <random>

#include <gtest/gtest.h>

#include "scheduler/deepspeed_bracket.h"
#include "scheduler/pricing.h"
#include "scheduler/simulator.h"
#include "tests/scheduler/test_util.h"

namespace skrull::scheduler {
namespace {

using testing::Preset;
using testing::UnitProfile;

GradientSyncOptions Options(int stage, GradReduceDtype dtype) {
  GradientSyncOptions o;
  o.zero_stage = stage;
  o.dtype = dtype;
  return o;
}

TEST(GradientSync, Bf16HalvesTheBytesOfEveryReduction) {
  const CostModel cost(Preset("tiny"));
  EXPECT_DOUBLE_EQ(cost.GradientBytes(GradReduceDtype::kBf16), cost.GradientBytes() / 2);
  for (int stage = 0; stage <= kMaxPricedZeroStage; ++stage) {
    const GradientSync fp32 =
        MakeGradientSync(cost, UnitProfile(), 4, Options(stage, GradReduceDtype::kFp32));
    const GradientSync bf16 =
        MakeGradientSync(cost, UnitProfile(), 4, Options(stage, GradReduceDtype::kBf16));
    // UnitProfile: 10 us latency + bus bytes / 1e9; only the bytes term halves.
    EXPECT_DOUBLE_EQ(bf16.reduce_seconds - 10e-6, (fp32.reduce_seconds - 10e-6) / 2) << stage;
    EXPECT_DOUBLE_EQ(bf16.parameter_all_gather_seconds, fp32.parameter_all_gather_seconds);
  }
}

TEST(GradientSync, Stage2AllReduceBucketsCostWhatAnAllReduceCosts) {
  const CostModel cost(Preset("tiny"));
  GradientSyncOptions o = Options(2, GradReduceDtype::kBf16);
  o.stage2_all_reduce = true;
  const GradientSync sync = MakeGradientSync(cost, UnitProfile(), 4, o);
  EXPECT_DOUBLE_EQ(sync.reduce_seconds,
                   UnitProfile().CollectiveSeconds(CollectiveOp::kAllReduce,
                                                   cost.GradientBytes(GradReduceDtype::kBf16), 4));
  // bf16 all-reduce moves the bytes of an fp32 reduce-scatter (2 x 2 = 4).
  EXPECT_DOUBLE_EQ(
      sync.reduce_seconds,
      MakeGradientSync(cost, UnitProfile(), 4, Options(2, GradReduceDtype::kFp32)).reduce_seconds);
}

TEST(GradientSync, AReductionOnTheComputeStreamHidesNothing) {
  // 0.5B: the gradient spans many buckets, so overlapping hides some of it.
  const CostModel cost(Preset("qwen2.5-0.5b"));
  GradientSyncOptions o = Options(2, GradReduceDtype::kBf16);
  const GradientSync overlapped = MakeGradientSync(cost, UnitProfile(), 4, o);
  o.overlap_with_backward = false;
  const GradientSync serial = MakeGradientSync(cost, UnitProfile(), 4, o);
  EXPECT_DOUBLE_EQ(serial.MicroBatchSeconds(1.0), 1.0 + serial.reduce_seconds);
  EXPECT_DOUBLE_EQ(serial.RankSeconds(3.0, 1.0), 3.0 + serial.reduce_seconds);
  EXPECT_LT(overlapped.MicroBatchSeconds(1.0), serial.MicroBatchSeconds(1.0));
}

TEST(GradientSync, SimulateUsesTheRequestedDtypeForEveryPolicy) {
  const CostModel cost(Preset("qwen2.5-0.5b"));
  std::vector<int64_t> dataset;
  for (int i = 1; i <= 300; ++i) dataset.push_back(i * 37 % 3000 + 16);
  SimulationOptions o;
  o.topology = {2, 2};
  o.bucket_size_tokens = 8192;
  o.batch_size = 8;
  o.steps = 2;
  o.seed = 3;
  HardwareProfile hw = UnitProfile();
  hw.all_reduce =
      hw.reduce_scatter = {10e-6, 1e7};  // a slow link: the reduction outlasts any backward
  auto fp32 = Simulate(dataset, o, cost, hw);
  o.grad_reduce_dtype = GradReduceDtype::kBf16;
  auto bf16 = Simulate(dataset, o, cost, hw);
  ASSERT_TRUE(fp32.ok() && bf16.ok());
  for (const auto& [name, stats] : fp32->policies) {
    // The reduction dominates, so halving its bytes shows in every policy
    // (deepspeed at ZeRO-2 reduce-scatters, the others all-reduce).
    EXPECT_LT(bf16->policies.at(name).mean_iteration_seconds, stats.mean_iteration_seconds) << name;
  }
}

TEST(GradientSync, DeepSpeedBracketNamesItsHypothesesAndTheirSynchronisation) {
  const std::vector<DeepSpeedHypothesis> b = DeepSpeedBracket();
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[0].name, "A");
  EXPECT_EQ(b[1].name, "A-sp");
  EXPECT_EQ(b[2].name, "C");
  EXPECT_EQ(b[3].name, "B");
  // A: DeepSpeed v0.16.4's ZeRO-2 defaults.
  EXPECT_EQ(b[0].policy, Policy::kDeepSpeed);
  EXPECT_EQ(b[0].micro_batch_size, 1);
  EXPECT_EQ(b[0].sync.zero_stage, 2);
  EXPECT_EQ(b[0].sync.dtype, GradReduceDtype::kBf16);
  EXPECT_TRUE(b[0].sync.stage2_all_reduce);
  EXPECT_FALSE(b[0].sync.overlap_with_backward);
  EXPECT_EQ(b[1].sync.dtype, GradReduceDtype::kFp32);  // sequence parallelism
  EXPECT_EQ(b[2].sync.zero_stage, 1);                  // one reduction per step
  EXPECT_TRUE(b[2].sync.overlap_with_backward);
  EXPECT_EQ(b[3].policy, Policy::kCpAll);  // packed
  // A-sp's fp32 reduction costs more than A's on a real gradient.
  const CostModel cost(Preset("qwen2.5-0.5b"));
  const HardwareProfile hw = H100Profile();
  EXPECT_GT(MakeGradientSync(cost, hw, 32, b[1].sync).MicroBatchSeconds(0.01),
            MakeGradientSync(cost, hw, 32, b[0].sync).MicroBatchSeconds(0.01));
}

TEST(GradientSync, DtypeNamesRoundTrip) {
  for (GradReduceDtype d : {GradReduceDtype::kFp32, GradReduceDtype::kBf16}) {
    GradReduceDtype back =
        d == GradReduceDtype::kFp32 ? GradReduceDtype::kBf16 : GradReduceDtype::kFp32;
    ASSERT_TRUE(ParseGradReduceDtype(GradReduceDtypeName(d), &back));
    EXPECT_EQ(back, d);
  }
  GradReduceDtype untouched = GradReduceDtype::kBf16;
  EXPECT_FALSE(ParseGradReduceDtype("fp16", &untouched));
  EXPECT_EQ(untouched, GradReduceDtype::kBf16);
}

}  // namespace
}  // namespace skrull::scheduler
