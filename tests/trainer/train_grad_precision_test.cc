// bf16 gradients are summed over a step's micro-batches in float32 at every
// ZeRO stage (docs/architecture.md, "Gradient precision"): the summed
// gradient equals the float32 sum of the micro-batches' bf16 gradients, so
// the one rounding to bf16 happens where backward produced each of them,
// never while summing. The crafted case tells that apart from summing in
// bf16: 1 + 16 x 2^-8 is 1.0625 in float32 but stays 1 in bf16 (1 + 2^-8 is
// a tie between 1 and 1 + 2^-7 and rounds to the even 1).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <functional>
#include <thread>

#include "trainer/train/collectives.h"
#include "trainer/train/optimizer.h"
#include "trainer/train/train_step.h"
#include "trainer/train/zero_optimizer.h"

namespace skrull::train {
namespace {

constexpr int kRounds = 17;  // micro-batches (backward passes) per step
constexpr int64_t kNumel = 6;

// Micro-batch k's gradient, the same for every element: 1, then 2^-8.
double CraftedGrad(int k) { return k == 0 ? 1.0 : std::ldexp(1.0, -8); }

std::vector<at::Tensor> Bf16Params() {
  return {torch::ones({2, 3}, torch::kBFloat16).requires_grad_(),
          torch::ones({kNumel}, torch::kBFloat16).requires_grad_()};
}

std::vector<model::NamedTensor> Named(const std::vector<at::Tensor>& params) {
  std::vector<model::NamedTensor> named;
  for (size_t i = 0; i < params.size(); ++i) named.push_back({"p" + std::to_string(i), params[i]});
  return named;
}

// Runs one backward per micro-batch whose gradient for every parameter
// element is grad_of(k), arming `hooks` as AccumulateGradients does: during
// the last backward, or every one when the reducer reduces every backward.
void Backwards(const std::vector<at::Tensor>& params, GradReadyHooks* hooks,
               const std::function<double(int)>& grad_of) {
  for (int k = 0; k < kRounds; ++k) {
    const bool every = hooks != nullptr && hooks->every_backward();
    if (hooks != nullptr && (every || k == kRounds - 1)) hooks->set_armed(true);
    at::Tensor loss = torch::zeros({}, torch::kBFloat16);
    for (const at::Tensor& p : params) {
      loss = loss + (p * torch::full(p.sizes(), grad_of(k), torch::kBFloat16)).sum();
    }
    loss.backward();
    if (hooks != nullptr) hooks->set_armed(false);
    if (every) hooks->EndBackward();
  }
}

// What each reference sums to: the float32 running sum of the micro-batches'
// bf16 gradients, in backward order.
float Float32Sum(const std::function<double(int)>& grad_of) {
  float sum = 0;
  for (int k = 0; k < kRounds; ++k) sum += at::BFloat16(static_cast<float>(grad_of(k)));
  return sum;
}

TEST(GradPrecision, CraftedCaseTellsFloat32FromBf16Summation) {
  EXPECT_EQ(Float32Sum(CraftedGrad), 1.0625f);
  // Without the accumulate hook autograd sums the micro-batches in bf16.
  std::vector<at::Tensor> params = Bf16Params();
  Backwards(params, nullptr, CraftedGrad);
  EXPECT_TRUE(torch::equal(params[0].grad(), torch::ones({2, 3}, torch::kBFloat16)));
}

TEST(GradPrecision, StageZeroSumsMicroBatchesInFloat32) {
  std::vector<at::Tensor> params = Bf16Params();
  Optimizer opt(Named(params), OptimizerOptions{});
  {
    GradReadyHooks hooks(params, nullptr, [&](size_t i) { opt.AccumulateGradient(i); });
    Backwards(params, &hooks, CraftedGrad);
  }
  EXPECT_FALSE(params[0].grad().defined()) << "the bf16 gradient is freed once folded";
  const std::vector<at::Tensor> grads = opt.ReducibleGradients();
  for (const at::Tensor& g : grads) {
    ASSERT_EQ(g.scalar_type(), torch::kFloat);
    EXPECT_TRUE(torch::equal(g, torch::full(g.sizes(), Float32Sum(CraftedGrad))));
    // Rounded once to bf16 it is still 1.0625, not the bf16 sum's 1.
    EXPECT_EQ(g.to(torch::kBFloat16).to(torch::kFloat).max().item<float>(), 1.0625f);
  }
  EXPECT_DOUBLE_EQ(opt.GradNorm(), 1.0625 * std::sqrt(2.0 * kNumel));

  // The next step starts from zero.
  opt.Step(1e-3);
  GradReadyHooks hooks(params, nullptr, [&](size_t i) { opt.AccumulateGradient(i); });
  Backwards(params, &hooks, [](int k) { return 0.5 + k; });
  EXPECT_TRUE(torch::equal(opt.ReducibleGradient(1),
                           torch::full({kNumel}, Float32Sum([](int k) { return 0.5 + k; }))));
}

// Runs fn(rank, collectives) on `world` threads of one in-memory group.
void OnRanks(int world, const std::function<void(int, Collectives*)>& fn) {
  auto group = MakeInMemoryGroup(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) threads.emplace_back([&, r] { fn(r, group[r].get()); });
  for (auto& t : threads) t.join();
}

// Stages 1 and 2 on two ranks: the gradient norm Step() returns is that of
// the summed gradient, 2 ranks x 1.0625 per element.
void ExpectZeroSumsInFloat32(int stage) {
  OnRanks(2, [stage](int, Collectives* c) {
    std::vector<at::Tensor> params = Bf16Params();
    ZeroOptimizer zero(Named(params), OptimizerOptions{}, stage, c, /*bucket_numel=*/4);
    {
      GradReadyHooks hooks(params, zero.reducer(), [&](size_t i) { zero.AccumulateGradient(i); });
      zero.BeginStep(kRounds);
      Backwards(params, &hooks, CraftedGrad);
    }
    ASSERT_TRUE(zero.FinishGradients().ok());
    StatusOr<double> norm = zero.Step(1e-3);
    ASSERT_TRUE(norm.ok()) << norm.status();
    // Summed in bf16 it would be 2 x 1 per element.
    EXPECT_DOUBLE_EQ(*norm, 2 * 1.0625 * std::sqrt(2.0 * kNumel)) << "stage " << stage;
  });
}

TEST(GradPrecision, ZeroStageOneSumsMicroBatchesInFloat32) { ExpectZeroSumsInFloat32(1); }

TEST(GradPrecision, ZeroStageTwoSumsMicroBatchesInFloat32) { ExpectZeroSumsInFloat32(2); }

TEST(GradPrecision, ZeroStageOneCountsFloat32SumsInStaticMemory) {
  LocalCollectives local;
  std::vector<at::Tensor> params = Bf16Params();
  ZeroOptimizer one(Named(params), OptimizerOptions{}, 1, &local);
  ZeroOptimizer two(Named(params), OptimizerOptions{}, 2, &local);
  // Stage 1 keeps a float32 full gradient per element between backward passes.
  EXPECT_EQ(one.StaticMemoryBytes() - two.StaticMemoryBytes(), 4 * 2 * kNumel);
}

}  // namespace
}  // namespace skrull::train
