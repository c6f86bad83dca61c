// Tokens/s, MFU and peak memory of one forward + backward of a
// Qwen2.5-0.5B-shaped random model in bf16 on cuda:0, with the flash path
// (the default attention) or the chunked reference, and the attention kernel
// the flash path actually chooses. One case per process, so a caller can
// bound each by a timeout (gpu-bundle/run.sh, docs/gpu-build.md):
//
//   SKRULL_GPU_BENCH_CASE=flash:65536 trainer_model_gpu_kernel_bench_test
//
// prints one line "[gpu-kernel-bench] {json}". Tokens are packed as
// sequences of at most the model's max_position_embeddings (32768). Without
// a CUDA device the case is skipped; SKRULL_GPU_BENCH_CPU=1 runs it instead on
// the CPU with the "tiny" preset and 256 tokens (a smoke run of the harness).
// CTest label gpu: with no case set it skips.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "scheduler/cost_model.h"
#include "scheduler/hardware_profile.h"
#include "scheduler/model_config.h"
#include "trainer/model/attention.h"
#include "trainer/model/flash_attention.h"
#include "trainer/model/model.h"
#include "trainer/model/packed_batch.h"
#include "trainer/model/torch_compat.h"
#include "trainer/train/device_memory.h"

namespace skrull::model {
namespace {

constexpr int kWarmupReps = 1;
constexpr int kMeasuredReps = 3;
constexpr int64_t kMaxCaseTokens = int64_t{1} << 20;  // far above what one GPU holds

struct BenchCase {
  bool flash = true;  // false: the chunked reference
  int64_t tokens = 0;
};

// "flash:N" or "chunked:N", 1 <= N <= kMaxCaseTokens; nullopt otherwise.
std::optional<BenchCase> ParseCase(const std::string& text) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) return std::nullopt;
  const std::string kernel = text.substr(0, colon), count = text.substr(colon + 1);
  if (kernel != "flash" && kernel != "chunked") return std::nullopt;
  if (count.empty() || count.size() > 8 ||
      !std::all_of(count.begin(), count.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  const int64_t tokens = std::stoll(count);
  if (tokens < 1 || tokens > kMaxCaseTokens) return std::nullopt;
  return BenchCase{kernel == "flash", tokens};
}

// `tokens` split into sequences of at most `max_len`.
std::vector<int64_t> SequenceLengths(int64_t tokens, int64_t max_len) {
  std::vector<int64_t> lengths;
  for (int64_t left = tokens; left > 0; left -= max_len) lengths.push_back(std::min(left, max_len));
  return lengths;
}

TEST(GpuKernelBench, ParsesCasesAndRejectsHostileOnes) {
  ASSERT_TRUE(ParseCase("flash:4096").has_value());
  EXPECT_TRUE(ParseCase("flash:4096")->flash);
  EXPECT_EQ(ParseCase("chunked:65536")->tokens, 65536);
  EXPECT_FALSE(ParseCase("chunked:65536")->flash);
  for (const char* bad : {"", "flash", "flash:", "cudnn:4096", "flash:-1", "flash:0", "flash:4k",
                          "flash:99999999", "flash:1048577"}) {
    EXPECT_FALSE(ParseCase(bad).has_value()) << bad;
  }
  EXPECT_EQ(SequenceLengths(65536, 32768), (std::vector<int64_t>{32768, 32768}));
  EXPECT_EQ(SequenceLengths(5000, 4096), (std::vector<int64_t>{4096, 904}));
}

TEST(GpuKernelBench, ForwardBackwardTokensPerSecondMfuAndPeakMemory) {
  const char* spec = std::getenv("SKRULL_GPU_BENCH_CASE");
  if (spec == nullptr) GTEST_SKIP() << "set SKRULL_GPU_BENCH_CASE=flash:4096 (or chunked:N)";
  const std::optional<BenchCase> bench = ParseCase(spec);
  ASSERT_TRUE(bench.has_value()) << "SKRULL_GPU_BENCH_CASE=\"" << spec
                                 << "\": expected flash:N or chunked:N with 1 <= N <= "
                                 << kMaxCaseTokens;
  const char* cpu_env = std::getenv("SKRULL_GPU_BENCH_CPU");
  const bool cpu_smoke = cpu_env != nullptr && std::string(cpu_env) == "1";
  if (!compat::CudaAvailable() && !cpu_smoke) {
    GTEST_SKIP() << "no CUDA device (libtorch " << compat::TorchVersion() << ")";
  }
  const c10::Device device = cpu_smoke ? c10::Device(c10::kCPU) : c10::Device(c10::kCUDA, 0);
  const int64_t tokens = cpu_smoke ? 256 : bench->tokens;
  auto config = scheduler::ModelPreset(cpu_smoke ? "tiny" : "qwen2.5-0.5b");
  ASSERT_TRUE(config.ok()) << config.status();

  ModelOptions o;
  o.device = device;
  o.dtype = cpu_smoke ? c10::kFloat : c10::kBFloat16;
  auto model = DecoderModel::Create(*config, o);
  ASSERT_TRUE(model.ok()) << model.status();
  (*model)->SetAttentionBackend(bench->flash ? MakeDefaultAttention(device)
                                             : MakeChunkedAttention());
  const std::vector<int64_t> lengths = SequenceLengths(tokens, config->max_position_embeddings);
  std::vector<std::vector<int64_t>> seqs;
  std::vector<int64_t> cu = {0};
  for (int64_t len : lengths) {
    std::vector<int64_t> s(len);
    for (int64_t i = 0; i < len; ++i) s[i] = (i * 7919 + len) % config->vocab_size;
    seqs.push_back(std::move(s));
    cu.push_back(cu.back() + len);
  }
  const PackedBatch batch = PackSequences(seqs, device);

  // The kernel the flash path chooses for one layer's q/k of this batch.
  const auto act = at::TensorOptions().dtype(o.dtype).device(device);
  const at::Tensor q = at::zeros({tokens, config->num_attention_heads, config->head_dim}, act);
  const at::Tensor k = at::zeros({tokens, config->num_key_value_heads, config->head_dim}, act);
  const std::string kernel =
      bench->flash ? AttentionKernelName(ChooseAttentionKernel(q, k, LocalSpans(LocalLayout(cu))))
                   : "chunked";

  auto memory = train::MakeDeviceMemory(device);
  double seconds = 0;
  for (int rep = 0; rep < kWarmupReps + kMeasuredReps; ++rep) {
    if (rep == kWarmupReps) memory->TakePeak();  // the peak of the measured reps only
    for (const auto& [name, p] : (*model)->NamedParameters()) {
      if (p.grad().defined()) p.mutable_grad().zero_();
    }
    compat::Synchronize(device);
    const auto t0 = std::chrono::steady_clock::now();
    at::Tensor loss = (*model)->LossSum(batch);
    loss.backward();
    compat::Synchronize(device);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rep >= kWarmupReps) seconds += s;
    ASSERT_TRUE(std::isfinite(loss.item<double>())) << "rep " << rep;
  }
  const train::MemoryPeak peak = memory->TakePeak();
  const double step_seconds = seconds / kMeasuredReps;
  const scheduler::CostModel cost(*config);
  double model_flops = 0;
  for (int64_t len : lengths) model_flops += cost.FlopsPerSequence(len);
  // H100 SXM's dense bf16 peak; the H200 has the same tensor cores and clocks.
  const double peak_flops = scheduler::H100Profile().peak_flops_per_second;
  std::cout << "[gpu-kernel-bench] {\"case\": \"" << spec << "\", \"device\": \"" << device.str()
            << "\", \"model\": \"" << (cpu_smoke ? "tiny" : "qwen2.5-0.5b") << "\", \"dtype\": \""
            << compat::DtypeName(o.dtype) << "\", \"attention_backend\": \""
            << (*model)->attention_backend().Name() << "\", \"kernel\": \"" << kernel
            << "\", \"tokens\": " << tokens << ", \"sequences\": " << lengths.size()
            << ", \"step_seconds\": " << step_seconds
            << ", \"tokens_per_second\": " << tokens / step_seconds
            << ", \"model_flops\": " << model_flops
            << ", \"mfu\": " << (cpu_smoke ? 0.0 : model_flops / step_seconds / peak_flops)
            << ", \"peak_allocated_bytes\": " << peak.allocated_bytes
            << ", \"peak_reserved_bytes\": " << peak.reserved_bytes << "}" << std::endl;
  EXPECT_GT(step_seconds, 0);
}

}  // namespace
}  // namespace skrull::model
