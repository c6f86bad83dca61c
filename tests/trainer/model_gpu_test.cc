// The CUDA paths (SDPA backend, a model on the GPU) against the CPU
// reference. CTest label gpu; skips without a CUDA device.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "trainer/model/attention.h"
#include "trainer/model/model.h"
#include "trainer/model/torch_compat.h"

namespace skrull::model {
namespace {

class ModelGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!compat::CudaAvailable())
      GTEST_SKIP() << "no CUDA device (libtorch " << compat::TorchVersion() << ")";
  }
};

TEST_F(ModelGpu, DefaultBackendMatchesChunkedOnCpu) {
  const c10::Device gpu(c10::kCUDA, 0);
  const std::vector<int64_t> cu = {0, 1, 130, 700, 1000};
  at::Tensor q = at::randn({1000, 8, 64}).set_requires_grad(true);
  at::Tensor k = at::randn({1000, 2, 64}).set_requires_grad(true);
  at::Tensor v = at::randn({1000, 2, 64}).set_requires_grad(true);
  at::Tensor dout = at::randn({1000, 8, 64});
  AttentionLayout layout = LocalLayout(cu);
  at::Tensor ref = MakeChunkedAttention()->Attend(q, k, v, layout, 0);
  (ref * dout).sum().backward();
  at::Tensor dq = q.grad().clone(), dk = k.grad().clone();

  at::Tensor qg = q.detach().to(gpu).set_requires_grad(true);
  at::Tensor kg = k.detach().to(gpu).set_requires_grad(true);
  at::Tensor vg = v.detach().to(gpu).set_requires_grad(true);
  auto backend = MakeDefaultAttention(gpu);
  at::Tensor out = backend->Attend(qg, kg, vg, layout, 0);
  (out * dout.to(gpu)).sum().backward();
  // TF32 / fused kernels: looser than the CPU tests.
  EXPECT_LT((out.cpu() - ref).abs().max().item<double>(), 2e-3) << backend->Name();
  EXPECT_LT((qg.grad().cpu() - dq).abs().max().item<double>(), 2e-3);
  EXPECT_LT((kg.grad().cpu() - dk).abs().max().item<double>(), 2e-3);
}

TEST_F(ModelGpu, Bf16ModelLossMatchesCpuFloat32) {
  scheduler::ModelConfig c;
  c.model_type = "qwen2";
  c.hidden_size = 128;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 32;
  c.intermediate_size = 256;
  c.vocab_size = 300;
  c.max_position_embeddings = 4096;
  c.attention_bias = true;
  c.tie_word_embeddings = true;
  ModelOptions cpu_opts;
  ModelOptions gpu_opts;
  gpu_opts.device = c10::Device(c10::kCUDA, 0);
  gpu_opts.dtype = c10::kBFloat16;
  auto cpu = DecoderModel::Create(c, cpu_opts);
  auto gpu = DecoderModel::Create(c, gpu_opts);
  ASSERT_TRUE(cpu.ok() && gpu.ok());
  std::vector<std::vector<int64_t>> seqs = {{}, {1, 2, 3}, std::vector<int64_t>(200, 7)};
  for (int64_t i = 0; i < 200; ++i) seqs[2][i] = (i * 31) % 300;
  double lc = (*cpu)->LossSum(PackSequences(seqs)).item<double>();
  at::Tensor lg = (*gpu)->LossSum(PackSequences(seqs, gpu_opts.device));
  lg.backward();
  EXPECT_NEAR(lg.item<double>(), lc, 0.02 * lc);
  for (const auto& [name, p] : (*gpu)->NamedTrainableParameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    EXPECT_TRUE(at::isfinite(p.grad()).all().item<bool>()) << name;
  }
}

}  // namespace
}  // namespace skrull::model
