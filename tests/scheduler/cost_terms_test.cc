// The cost model's optional terms (hardware_profile.h, pricing.h): GEMM
// roofline floor and tile quantization, element-wise and loss bytes, the
// eager CPU floor, intra- vs inter-node collectives, the optimizer step, and
// the FlashAttention-2 / -3 curves of the built-in H100 profiles.
#include <gtest/gtest.h>

#include "scheduler/hardware_profile.h"
#include "scheduler/pricing.h"
#include "scheduler/simulator.h"
#include "tests/scheduler/test_util.h"

namespace skrull::scheduler {
namespace {

using testing::Preset;
using testing::UnitProfile;

TEST(CostTerms, SmallGemmsStreamTheirWeightsAtMemoryBandwidth) {
  HardwareProfile hw = UnitProfile();  // 1e12 FLOP/s
  hw.memory_bytes_per_second = 1e9;
  // m = 1: 2 * 1 * 1000 * 1000 FLOPs = 2 us of compute, 2 * (1000 + 1e6 +
  // 1000) bytes = 2 ms of memory: memory-bound.
  EXPECT_DOUBLE_EQ(hw.GemmSeconds(1, 1000, 1000), 2.0 * (1000 + 1e6 + 1000) / 1e9);
  // A large m is compute-bound.
  hw.memory_bytes_per_second = 1e15;
  EXPECT_DOUBLE_EQ(hw.GemmSeconds(4096, 1000, 1000), 2.0 * 4096 * 1000 * 1000 / 1e12);
  EXPECT_EQ(hw.GemmSeconds(0, 1000, 1000), 0);
}

TEST(CostTerms, APartialTileCostsAWholeOne) {
  HardwareProfile hw = UnitProfile();
  hw.gemm_tile_rows = 128;
  hw.gemm_tile_cols = 128;
  // 129 rows run two row tiles: the same time as 256 rows.
  EXPECT_DOUBLE_EQ(hw.GemmSeconds(129, 512, 1024), hw.GemmSeconds(256, 512, 1024));
  EXPECT_LT(hw.GemmSeconds(128, 512, 1024), hw.GemmSeconds(129, 512, 1024));
  hw.multiprocessors = 4;  // 2 x 8 tiles = 16 = 4 full waves; 3 x 8 = 24 = 6 waves
  EXPECT_DOUBLE_EQ(hw.GemmSeconds(384, 512, 1024) / hw.GemmSeconds(256, 512, 1024), 1.5);
}

TEST(CostTerms, GroupsWithinANodeUseTheIntraNodeCollectives) {
  HardwareProfile hw = UnitProfile();  // inter-node: 10 us + bytes / 1e9
  hw.gpus_per_node = 8;
  hw.intra_node.all_gather = hw.intra_node.reduce_scatter = hw.intra_node.all_reduce = {1e-6, 1e10};
  EXPECT_DOUBLE_EQ(hw.CollectiveSeconds(CollectiveOp::kAllGather, 8e6, 8), 1e-6 + 7e6 / 1e10);
  EXPECT_DOUBLE_EQ(hw.CollectiveSeconds(CollectiveOp::kAllGather, 16e6, 16), 10e-6 + 15e6 / 1e9);
  hw.gpus_per_node = 0;  // one fit for every group
  EXPECT_DOUBLE_EQ(hw.CollectiveSeconds(CollectiveOp::kAllGather, 8e6, 8), 10e-6 + 7e6 / 1e9);
}

TEST(CostTerms, TheLossOverTheVocabularyIsMemoryTrafficPerToken) {
  ModelConfig small = Preset("tiny"), large = Preset("tiny");
  large.vocab_size = small.vocab_size * 2;
  const double delta =
      CostModel(large).NonGemmBytesPerToken() - CostModel(small).NonGemmBytesPerToken();
  EXPECT_DOUBLE_EQ(delta, 38.0 * small.vocab_size);  // cost_model.cc: kLossBytesPerVocab
  HardwareProfile hw = UnitProfile();
  const CostModel cost(small);
  const double without = SimulatePlacement({1000}, {0}, 1, cost, hw).seconds;
  hw.memory_bytes_per_second = 1e11;
  EXPECT_DOUBLE_EQ(SimulatePlacement({1000}, {0}, 1, cost, hw).seconds - without,
                   cost.NonGemmBytesPerToken() * 1000 / 1e11);
}

TEST(CostTerms, AnEagerMicroBatchTakesAtLeastItsKernelsOnTheHost) {
  const CostModel cost(Preset("tiny"));  // 2 layers x 40 kernels
  HardwareProfile hw = UnitProfile();
  hw.cpu_seconds_per_kernel = 1e-3;
  EXPECT_DOUBLE_EQ(SimulatePlacement({10}, {0}, 1, cost, hw).seconds, 2 * 40 * 1e-3);
  hw.cpu_seconds_per_kernel = 0;
  EXPECT_LT(SimulatePlacement({10}, {0}, 1, cost, hw).seconds, 1e-3);
}

TEST(CostTerms, TheOptimizerStepIsPricedOncePerStepAndShardedFromStageOne) {
  CostModelOptions o;
  o.dp_for_sharding = 4;
  o.zero_stage = 0;
  const CostModel replicated(Preset("tiny"), o);
  o.zero_stage = 1;
  const CostModel sharded(Preset("tiny"), o);
  EXPECT_DOUBLE_EQ(replicated.OptimizerStepBytes(), 4 * sharded.OptimizerStepBytes());
  HardwareProfile hw = UnitProfile();
  hw.memory_bytes_per_second = 1e9;
  const GradientSync sync = MakeGradientSync(replicated, hw, 4);
  EXPECT_DOUBLE_EQ(sync.optimizer_step_seconds, replicated.OptimizerStepBytes() / 1e9);
  EXPECT_EQ(MakeGradientSync(replicated, UnitProfile(), 4).optimizer_step_seconds, 0);
}

TEST(CostTerms, TheTightBoundCountsTheMemoryTrafficEveryPlanPays) {
  const CostModel cost(Preset("tiny"));
  HardwareProfile hw = UnitProfile();
  const std::vector<int64_t> lengths = {100, 900, 3000};
  const Topology topology{2, 2};
  const double without = TightLowerBoundSeconds(lengths, topology, 4096, cost, hw);
  hw.memory_bytes_per_second = 1e10;
  const double with = TightLowerBoundSeconds(lengths, topology, 4096, cost, hw);
  EXPECT_DOUBLE_EQ(with - without, cost.NonGemmBytesPerToken() * 4000 / 1e10 / 4 +
                                       cost.OptimizerStepBytes() / 1e10);
  // Still below what a plan costs under the same profile.
  std::vector<int64_t> dataset = lengths;
  SimulationOptions o;
  o.topology = topology;
  o.bucket_size_tokens = 4096;
  o.batch_size = 2;
  o.steps = 3;
  auto report = Simulate(dataset, o, cost, hw);
  ASSERT_TRUE(report.ok()) << report.status();
  for (const auto& [name, stats] : report->policies) {
    EXPECT_LE(report->tight_bound_seconds, stats.mean_iteration_seconds) << name;
  }
}

TEST(CostTerms, H100ProfilesCarryTheFlashAttentionCurvesOfTheirKernel) {
  const HardwareProfile fa2 = H100Profile(AttentionKernel::kFa2);
  const HardwareProfile fa3 = H100Profile(AttentionKernel::kFa3);
  EXPECT_EQ(fa2.attention_kernel, "fa2");
  EXPECT_EQ(fa3.attention_kernel, "fa3");
  EXPECT_EQ(H100Profile().attention_kernel, "fa2");  // 2024-25 stacks ran FlashAttention-2
  // At 16K: FlashAttention-2 335 causal fwd, 322 x 335 / 370 causal bwd.
  const double bwd = 322.0 * 335 / 370;
  const double expected = 3.0 / (1.0 / 335 + 2.5 / bwd) * 1e12 / 989e12;
  EXPECT_NEAR(HardwareProfile::Interpolate(fa2.attention_efficiency, 16384), expected, 1e-12);
  for (int64_t length : {512, 1024, 4096, 16384}) {  // the papers' lengths
    EXPECT_LT(HardwareProfile::Interpolate(fa2.attention_efficiency, length),
              HardwareProfile::Interpolate(fa3.attention_efficiency, length))
        << length;
  }
  for (const auto& [length, efficiency] : fa2.attention_efficiency) {
    EXPECT_GT(efficiency, 0) << length;
    EXPECT_LT(efficiency, 0.5) << length;
  }
}

TEST(CostTerms, OptionalTermsRoundTripThroughJsonAndIntraNodeIsRequiredWithNodes) {
  const HardwareProfile p = H100Profile(AttentionKernel::kFa3);
  auto back = ParseHardwareProfileJson(ToJson(p), "p.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(ToJson(*back), ToJson(p));
  EXPECT_EQ(back->gpus_per_node, 8);
  EXPECT_DOUBLE_EQ(back->intra_node.all_reduce.bandwidth_bytes_per_second, 480e9);
  EXPECT_EQ(back->gemm_tile_rows, 128);
  auto bad = ParseHardwareProfileJson(R"({"name": "x", "peak_flops_per_second": 1e12,
      "gemm_efficiency": [[1, 1.0]], "attention_efficiency": [[1, 1.0]],
      "all_gather": {"latency_seconds": 0, "bandwidth_bytes_per_second": 1e9},
      "reduce_scatter": {"latency_seconds": 0, "bandwidth_bytes_per_second": 1e9},
      "all_reduce": {"latency_seconds": 0, "bandwidth_bytes_per_second": 1e9},
      "kernel_launch_seconds": 0, "gpus_per_node": 8, "gemm_tile_rows": 1.5})",
                                      "bad.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("intra_node: required when gpus_per_node > 0"),
            std::string::npos)
      << bad.status();
  EXPECT_NE(bad.status().message().find("gemm_tile_rows: must be a whole number"),
            std::string::npos)
      << bad.status();
}

}  // namespace
}  // namespace skrull::scheduler
