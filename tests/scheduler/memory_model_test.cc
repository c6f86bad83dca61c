#include "scheduler/memory_model.h"

#include <gtest/gtest.h>

#include "scheduler/cost_model.h"
#include "scheduler/hardware_profile.h"
#include "tests/scheduler/test_util.h"

namespace skrull::scheduler {
namespace {

using testing::Preset;

// Qwen2.5-0.5B: 494,032,768 parameters, 24 layers, h=896, q=896, kv=128,
// f=4864.
constexpr double kQwen05Params = 494032768.0;

StaticMemory Static(int stage, int ranks, Precision precision, LoraShape lora = {}) {
  return StaticMemoryPerRank(Preset("qwen2.5-0.5b"), {stage, ranks, precision, lora});
}

TEST(MemoryModel, Bf16FollowsZeroPapersTwoTwoTwelveBytesPerParameter) {
  const double p = kQwen05Params;
  const StaticMemory s0 = Static(0, 8, Precision::kBf16);
  EXPECT_DOUBLE_EQ(s0.weights_bytes, 2 * p);
  EXPECT_DOUBLE_EQ(s0.gradient_bytes, 2 * p);
  EXPECT_DOUBLE_EQ(s0.optimizer_bytes, 12 * p);
  EXPECT_DOUBLE_EQ(Static(1, 8, Precision::kBf16).total_bytes(), 4 * p + 12 * p / 8);
  EXPECT_DOUBLE_EQ(Static(2, 8, Precision::kBf16).total_bytes(), 2 * p + 14 * p / 8);
  EXPECT_DOUBLE_EQ(Static(3, 8, Precision::kBf16).total_bytes(), 16 * p / 8);
}

TEST(MemoryModel, Fp32KeepsNoSeparateMasterCopy) {
  const double p = kQwen05Params;
  EXPECT_DOUBLE_EQ(Static(0, 4, Precision::kFp32).total_bytes(), 16 * p);  // 4 + 4 + 8
  EXPECT_DOUBLE_EQ(Static(2, 4, Precision::kFp32).total_bytes(), 4 * p + 12 * p / 4);
}

TEST(MemoryModel, LoraTrainsOnlyAdaptersAndKeepsFrozenWeights) {
  // q_proj and v_proj at rank 8: 8 x ((896 + 896) + (896 + 128)) x 24 layers.
  LoraShape lora;
  lora.rank = 8;
  lora.target_modules = {"q_proj", "v_proj"};
  const int64_t adapters = 8 * ((896 + 896) + (896 + 128)) * 24;
  EXPECT_EQ(LoraParameters(Preset("qwen2.5-0.5b"), lora), adapters);
  const StaticMemory s = Static(0, 1, Precision::kBf16, lora);
  EXPECT_EQ(s.trainable_parameters, adapters);
  EXPECT_DOUBLE_EQ(s.weights_bytes, 2 * (kQwen05Params + adapters));
  EXPECT_DOUBLE_EQ(s.gradient_bytes, 2.0 * adapters);
  EXPECT_DOUBLE_EQ(s.optimizer_bytes, 12.0 * adapters);
  lora.rank = 0;
  EXPECT_EQ(LoraParameters(Preset("qwen2.5-0.5b"), lora), 0);
}

TEST(MemoryModel, Fp32ActivationsAreTwiceBf16sPerLayer) {
  const ModelConfig m = Preset("qwen2.5-0.5b");
  ActivationOptions bf16;
  bf16.logits_bytes_per_token_per_vocab = 0;
  ActivationOptions fp32 = bf16;
  fp32.precision = Precision::kFp32;
  // Per layer: bf16 2 x (4h + 2q + 2kv + 4f) = 50,176 + 4 x 14 heads; fp32
  // doubles the elements, not the fp32 log-sum-exp; final norm 2h elements.
  EXPECT_DOUBLE_EQ(ActivationBytesPerToken(m, bf16), 24 * (50176.0 + 56) + 2 * 2 * 896);
  EXPECT_DOUBLE_EQ(ActivationBytesPerToken(m, fp32), 24 * (100352.0 + 56) + 4 * 2 * 896);
  // The derived logits peak: 10 bytes per vocabulary entry in bf16, 8 in fp32.
  bf16.logits_bytes_per_token_per_vocab = -1;
  fp32.logits_bytes_per_token_per_vocab = -1;
  EXPECT_DOUBLE_EQ(ActivationBytesPerToken(m, bf16), 24 * (50176.0 + 56) + 3584 + 10 * 151936.0);
  EXPECT_DOUBLE_EQ(ActivationBytesPerToken(m, fp32), 24 * (100352.0 + 56) + 7168 + 8 * 151936.0);
}

TEST(MemoryModel, BucketSizeIsTheLinesTokensWithinTheBudget) {
  const MemoryLine line{10e9, 1e6};
  EXPECT_DOUBLE_EQ(line.TokensWithin(12e9), 2000);
  EXPECT_LT(line.TokensWithin(9e9), 0);
  // (80e9 x 0.9 - 2e9 - 10e9) / 1e6
  EXPECT_EQ(BucketSizeTokens(line, 80e9, 0.9, 2e9), 60000);
  EXPECT_EQ(BucketSizeTokens(line, 12e9, 1.0, 2e9), 0);
}

TEST(MemoryModel, Qwen7bOnH100AtThirtyTwoRanksRefusesStageZeroAndFitsStageTwo) {
  // The verdicts (DP=4 x CP=8, bf16, budget 0.9 x device - 2 GiB).
  const HardwareProfile h100 = H100Profile();
  auto bucket = [&](int stage) {
    CostModelOptions o;
    o.zero_stage = stage;
    o.dp_for_sharding = 32;
    return CostModel(Preset("qwen2.5-7b"), o).BucketSizeTokens(h100.device_memory_bytes, 0.1);
  };
  EXPECT_EQ(bucket(0), 0);
  EXPECT_EQ(bucket(1), 5892);
  EXPECT_EQ(bucket(2), 7987);  // the paper profiled 13K with selective recompute
}

TEST(MemoryModel, FitLineKeepsTheSlopeOfGigabyteMemoryOverTokens) {
  // 40 GB of static memory plus 123,456.75 bytes per token: raw sums of
  // squares (~1e24) would round the slope away; centred values keep it.
  std::vector<double> tokens, bytes;
  for (int k = 1; k <= 8; ++k) {
    tokens.push_back(4096.0 * k + 1);
    bytes.push_back(4e10 + 123456.75 * tokens.back());
  }
  const LinearFit f = FitLine(tokens, bytes);
  EXPECT_NEAR(f.slope, 123456.75, 1e-6);
  EXPECT_NEAR(f.intercept, 4e10, 1.0);
}

TEST(MemoryModel, FitLineWithoutSpreadGoesThroughTheOrigin) {
  const LinearFit one = FitLine({100}, {500});
  EXPECT_DOUBLE_EQ(one.slope, 5);
  EXPECT_DOUBLE_EQ(one.intercept, 0);
  const LinearFit flat = FitLine({100, 100}, {400, 600});
  EXPECT_DOUBLE_EQ(flat.slope, 5);
  EXPECT_DOUBLE_EQ(flat.intercept, 0);
  EXPECT_DOUBLE_EQ(FitLine({0}, {7}).slope, 0);
}

TEST(MemoryModel, FormatBytesUsesBinaryUnits) {
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(1.5 * (1 << 20)), "1.5 MiB");
  EXPECT_EQ(FormatBytes(-2.0 * (1 << 30)), "-2.0 GiB");
}

TEST(MemoryModel, ParsesPrecisionNames) {
  EXPECT_EQ(ParsePrecision("bf16").value(), Precision::kBf16);
  EXPECT_EQ(ParsePrecision("fp32").value(), Precision::kFp32);
  auto bad = ParsePrecision("fp16");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'bf16' or 'fp32' (got 'fp16')"), std::string::npos);
}

}  // namespace
}  // namespace skrull::scheduler
