// AdamW wrapper: parameter groups, clipping, mixed-precision masters and the
// optimizer state on disk.
#include "trainer/train/optimizer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "tests/trainer/train_test_util.h"
#include "trainer/model/safetensors.h"
#include "trainer/model/tensor_io.h"

namespace skrull::train {
namespace {

using testing::TempDir;

std::vector<model::NamedTensor> Params(c10::ScalarType dtype = torch::kFloat) {
  torch::manual_seed(0);
  return {{"w", torch::randn({3, 4}).to(dtype).set_requires_grad(true)},
          {"b", torch::randn({4}).to(dtype).set_requires_grad(true)}};
}

void SetGrads(std::vector<model::NamedTensor>& params, double scale) {
  torch::NoGradGuard g;
  int i = 1;
  for (auto& [name, p] : params) {
    p.mutable_grad() =
        (torch::arange(p.numel()).reshape(p.sizes()).to(torch::kFloat) * scale * (i++ % 2 ? 1 : -1))
            .to(p.scalar_type());
  }
}

at::Tensor Read(const std::string& file, const std::string& name) {
  auto f = model::SafetensorsFile::Open(file);
  EXPECT_TRUE(f.ok()) << f.status();
  const model::TensorInfo* info = (*f)->Find(name);
  EXPECT_NE(info, nullptr) << name;
  return model::TensorFromBytes(*info, (*f)->Data(*info), torch::kFloat);
}

TEST(Optimizer, NoWeightDecayOnVectors) {
  auto params = Params();
  at::Tensor w0 = params[0].second.detach().clone(), b0 = params[1].second.detach().clone();
  OptimizerOptions o;
  o.weight_decay = 0.5;
  Optimizer opt(params, o);
  opt.ReducibleGradients();  // zero gradients: only decay moves anything
  opt.Step(0.1);
  EXPECT_TRUE(torch::allclose(params[0].second, w0 * (1 - 0.1 * 0.5)));
  EXPECT_TRUE(torch::equal(params[1].second, b0));
}

TEST(Optimizer, ClipsByGlobalNormAndReturnsTheNormBeforeClipping) {
  TempDir dir;
  auto params = Params();
  OptimizerOptions o;
  o.grad_clip = 1.0;
  o.beta1 = 0.9;
  Optimizer opt(params, o);
  SetGrads(params, 1.0);
  double expect = 0;
  for (auto& [n, p] : params) expect += p.grad().pow(2).sum().item<double>();
  expect = std::sqrt(expect);
  opt.ReducibleGradients();
  EXPECT_NEAR(opt.GradNorm(), expect, 1e-9);
  EXPECT_NEAR(opt.Step(1e-3), expect, 1e-9);
  // exp_avg = (1 - beta1) * clipped gradient.
  ASSERT_TRUE(opt.Save(dir.path().string()).ok());
  at::Tensor m = Read(dir / "optimizer.safetensors", "w.exp_avg");
  at::Tensor g = torch::arange(12).reshape({3, 4}).to(torch::kFloat) * (1.0 / (expect + 1e-6));
  EXPECT_TRUE(torch::allclose(m, 0.1 * g, 1e-5, 1e-7));
}

TEST(Optimizer, SaveLoadContinuesBitForBit) {
  TempDir dir;
  auto a_params = Params();
  Optimizer a(a_params, OptimizerOptions{});
  for (int s = 0; s < 3; ++s) {
    SetGrads(a_params, 0.1 * (s + 1));
    a.ReducibleGradients();
    a.Step(1e-2);
  }
  ASSERT_TRUE(a.Save(dir.path().string()).ok());
  auto b_params = Params();
  {
    torch::NoGradGuard g;
    for (size_t i = 0; i < b_params.size(); ++i) b_params[i].second.copy_(a_params[i].second);
  }
  Optimizer b(b_params, OptimizerOptions{});
  ASSERT_TRUE(b.Load(dir.path().string()).ok());
  SetGrads(a_params, 0.7);
  SetGrads(b_params, 0.7);
  a.ReducibleGradients();
  b.ReducibleGradients();
  a.Step(1e-2);
  b.Step(1e-2);
  for (size_t i = 0; i < a_params.size(); ++i) {
    EXPECT_TRUE(torch::equal(a_params[i].second, b_params[i].second)) << a_params[i].first;
  }
}

TEST(Optimizer, MixedPrecisionKeepsFloat32MastersAndRestoresThem) {
  TempDir dir;
  auto params = Params(torch::kBFloat16);
  Optimizer opt(params, OptimizerOptions{});
  SetGrads(params, 0.3);
  std::vector<at::Tensor> grads = opt.ReducibleGradients();
  ASSERT_EQ(grads.size(), 2u);
  EXPECT_EQ(grads[0].scalar_type(), torch::kFloat);
  opt.Step(1e-3);  // a tiny update: visible in the float32 master, rounded away in bf16
  EXPECT_EQ(params[0].second.scalar_type(), torch::kBFloat16);
  ASSERT_TRUE(opt.Save(dir.path().string()).ok());
  at::Tensor master = Read(dir / "optimizer.safetensors", "w.master");
  EXPECT_TRUE(torch::equal(master.to(torch::kBFloat16), params[0].second));

  auto fresh = Params(torch::kBFloat16);
  Optimizer restored(fresh, OptimizerOptions{});
  ASSERT_TRUE(restored.Load(dir.path().string()).ok());
  EXPECT_TRUE(torch::equal(fresh[0].second, params[0].second));
  SetGrads(params, 0.3);
  SetGrads(fresh, 0.3);
  opt.ReducibleGradients();
  restored.ReducibleGradients();
  opt.Step(1e-3);
  restored.Step(1e-3);
  EXPECT_TRUE(torch::equal(fresh[0].second, params[0].second));
}

TEST(Optimizer, LoadRefusesStateOfAnotherModelNamingTheTensor) {
  TempDir dir;
  auto params = Params();
  Optimizer opt(params, OptimizerOptions{});
  opt.ReducibleGradients();
  opt.Step(1e-3);
  ASSERT_TRUE(opt.Save(dir.path().string()).ok());
  std::vector<model::NamedTensor> other = {{"w", torch::zeros({4, 3}).set_requires_grad(true)},
                                           {"b", torch::zeros({4}).set_requires_grad(true)}};
  Optimizer wrong(other, OptimizerOptions{});
  Status s = wrong.Load(dir.path().string());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("w.exp_avg: shape [3, 4], expected [4, 3]"), std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace skrull::train
