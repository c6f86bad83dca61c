// The tokens/s + MFU report on one GPU: trains a ~0.16B-parameter Llama in
// bf16 on cuda:0 for a few steps and prints the measured throughput and MFU
// (model FLOPs / step time / the hardware profile's dense peak; see
// docs/metrics.md). CTest label gpu; skips without a CUDA device.
//
// Run on a GPU machine:
//   ctest -L gpu -R train_gpu_throughput --output-on-failure -V
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "common/file_util.h"
#include "tests/trainer/train_test_util.h"
#include "trainer/metrics/step_record.h"
#include "trainer/model/torch_compat.h"

namespace skrull::train {
namespace {

constexpr int kSteps = 6;
constexpr int kWarmupSteps = 2;  // excluded from the report (allocator, cuBLAS/NCCL setup)

// ~0.16B parameters (66M of them embeddings): big enough that the GEMMs, not launches, set the
// pace.
std::string BenchConfigJson() {
  return R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "hidden_size": 1024, "intermediate_size": 2816, "num_hidden_layers": 8,
  "num_attention_heads": 16, "num_key_value_heads": 4, "vocab_size": 32000,
  "max_position_embeddings": 8192, "rope_theta": 10000.0, "rms_norm_eps": 1e-6,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16"})";
}

TEST(TrainGpuThroughput, ReportsTokensPerSecondAndMfuOnOneGpu) {
  if (!model::compat::CudaAvailable()) {
    GTEST_SKIP() << "no CUDA device (libtorch " << model::compat::TorchVersion()
                 << "): the tokens/s + MFU report needs one GPU";
  }
  testing::TempDir dir;
  testing::WriteText(dir / "config.json", BenchConfigJson());
  testing::WriteText(dir / "data.jsonl", testing::LearnableJsonl(96, 512, 4096, 5));
  testing::JobFiles f;
  f.steps = kSteps;
  f.batch_size = 8;
  f.bucket_size = 16384;  // bucketSize: auto needs a measured profile on CUDA
  f.extra_training = "    precision: bf16\n";
  const api::JobSpec job = testing::LoadJob(testing::WriteJob(dir, f));
  TrainerOptions o;
  o.device = "cuda:0";
  const testing::TrainResult r = testing::TrainInProcess(job, 0, o);
  ASSERT_TRUE(r.status.ok()) << r.status << "\n" << r.log;
  ASSERT_EQ(r.summary.steps, kSteps);

  auto text = ReadFileToString(api::OutputDirOf(job) + "/metrics.jsonl");
  ASSERT_TRUE(text.ok()) << text.status();
  std::istringstream lines(*text);
  double tokens = 0, seconds = 0, model_flops = 0, peak = 0;
  int measured = 0;
  for (std::string line; std::getline(lines, line);) {
    auto parsed = metrics::ParseStepLine(line);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    const metrics::StepRecord& rec = parsed->record;
    if (rec.step < kWarmupSteps) continue;
    tokens += static_cast<double>(rec.tokens);
    seconds += rec.step_seconds;
    model_flops += rec.model_flops;
    peak = rec.peak_flops_per_second;
    ++measured;
  }
  ASSERT_EQ(measured, kSteps - kWarmupSteps);
  ASSERT_GT(seconds, 0);
  ASSERT_GT(peak, 0) << "the hardware profile has no peak FLOP/s";
  const double tokens_per_second = tokens / seconds;
  const double mfu = model_flops / seconds / peak;
  std::cout << "[gpu-throughput] " << r.summary.device << " bf16, " << measured << " steps after "
            << kWarmupSteps << " warm-up: " << tokens_per_second << " tokens/s, MFU " << 100 * mfu
            << "% of " << peak / 1e12 << " TFLOP/s (" << r.summary.hardware_profile
            << "), peak memory " << r.summary.peak_memory_bytes << " bytes" << std::endl;
  EXPECT_GT(tokens_per_second, 0);
  // Above 100% the FLOP count or the profile's peak is wrong, not the GPU fast.
  EXPECT_GT(mfu, 0);
  EXPECT_LT(mfu, 1.0);
}

}  // namespace
}  // namespace skrull::train
