// ZeroPartition's index math, the in-memory reduce-scatter / all-gather, and
// ZeroOptimizer against Optimizer (stage 0) on the same summed gradients,
// including stage 2's per-backward rounds and checkpoints re-sharded to
// another world size.
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <functional>
#include <thread>

#include "tests/trainer/train_test_util.h"
#include "trainer/train/collectives.h"
#include "trainer/train/optimizer.h"
#include "trainer/train/zero_optimizer.h"
#include "trainer/train/zero_partition.h"

namespace skrull::train {
namespace {

TEST(ZeroPartition, EveryElementIsInExactlyOnePieceAndSlicesAreEqual) {
  const std::vector<int64_t> numel = {35, 7, 12, 1, 0, 50};
  for (int world : {1, 2, 3, 4}) {
    ZeroPartition part(numel, world, /*bucket_numel=*/20);
    std::vector<std::vector<int>> seen;
    for (int64_t n : numel) seen.emplace_back(n, 0);
    for (int r = 0; r < world; ++r) {
      int64_t covered = 0;
      for (const ZeroPiece& pc : part.Pieces(r)) {
        ASSERT_LE(pc.shard_offset + pc.numel, part.shard_numel());
        for (int64_t k = 0; k < pc.numel; ++k) seen[pc.param][pc.param_offset + k] += 1;
        covered += pc.numel;
      }
      EXPECT_LE(covered, part.shard_numel());
    }
    for (size_t i = 0; i < numel.size(); ++i) {
      for (int c : seen[i]) EXPECT_EQ(c, 1) << "world " << world << " param " << i;
    }
    int64_t total = 0;
    for (const ZeroBucket& b : part.buckets()) {
      EXPECT_EQ(b.slice_numel, (b.numel + world - 1) / world);
      EXPECT_EQ(b.shard_offset, total);
      total += b.slice_numel;
    }
    EXPECT_EQ(total, part.shard_numel());
  }
}

TEST(ZeroPartition, BucketsFollowReverseParameterOrder) {
  ZeroPartition part({10, 10, 10}, 2, /*bucket_numel=*/20);
  ASSERT_EQ(part.buckets().size(), 2u);
  EXPECT_EQ(part.buckets()[0].params, (std::vector<size_t>{2, 1}));
  EXPECT_EQ(part.buckets()[1].params, (std::vector<size_t>{0}));
  EXPECT_EQ(part.bucket_of(0), 1u);
}

// Runs fn(rank, collectives) on `world` threads of one in-memory group.
void OnRanks(int world, const std::function<void(int, Collectives*)>& fn) {
  auto group = MakeInMemoryGroup(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) threads.emplace_back([&, r] { fn(r, group[r].get()); });
  for (auto& t : threads) t.join();
}

TEST(InMemoryCollectives, ReduceScatterSumsSlicesAndAllGatherConcatenates) {
  OnRanks(3, [](int r, Collectives* c) {
    at::Tensor in = torch::arange(6, torch::kFloat) * (r + 1);
    at::Tensor out = torch::empty({2});
    ASSERT_TRUE(c->StartReduceScatterSum(in, out)->Wait().ok());
    EXPECT_TRUE(torch::equal(out, torch::tensor({2.f * r, 2.f * r + 1}) * 6));
    at::Tensor gathered = torch::empty({6});
    ASSERT_TRUE(c->StartAllGather(torch::full({2}, float(r)), gathered)->Wait().ok());
    EXPECT_TRUE(torch::equal(gathered, torch::tensor({0.f, 0.f, 1.f, 1.f, 2.f, 2.f})));
  });
}

// Normal values from a generator of its own: the rank threads must not share
// the global one (manual_seed there races between threads).
at::Tensor Randn(at::IntArrayRef sizes, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  return torch::randn(sizes, gen);
}

std::vector<model::NamedTensor> MakeParams() {
  return {{"w1", Randn({5, 7}, 5).requires_grad_()},
          {"b1", Randn({7}, 6).requires_grad_()},
          {"w2", Randn({3, 4}, 7).requires_grad_()}};
}

std::vector<model::NamedTensor> Clone(const std::vector<model::NamedTensor>& params) {
  std::vector<model::NamedTensor> out;
  for (const auto& [n, p] : params) out.push_back({n, p.detach().clone().requires_grad_()});
  return out;
}

// Rank r's gradient of parameter i at `step`, round `round`.
at::Tensor Grad(const at::Tensor& p, int step, int rank, int round) {
  return Randn(p.sizes(), 1000 * step + 10 * rank + round);
}

OptimizerOptions Options() {
  OptimizerOptions o;
  o.weight_decay = 0.1;
  o.grad_clip = 2.0;  // below the norms: clipping runs
  return o;
}

double RelDiff(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).norm().item<double>() / b.norm().item<double>();
}

// Stage 0 on the sum over ranks and rounds (rank r runs rounds_of(r) rounds).
std::vector<model::NamedTensor> ReferenceRun(int world, int steps,
                                             const std::function<int(int)>& rounds_of) {
  auto ref = Clone(MakeParams());
  Optimizer opt(ref, Options());
  for (int s = 0; s < steps; ++s) {
    for (auto& [n, p] : ref) {
      at::Tensor sum = torch::zeros_like(p);
      for (int r = 0; r < world; ++r) {
        for (int k = 0; k < rounds_of(r); ++k) sum += Grad(p, s, r, k);
      }
      p.mutable_grad() = sum;
    }
    opt.ReducibleGradients();
    opt.Step(1e-2);
  }
  return ref;
}

void ZeroSteps(ZeroOptimizer* zero, std::vector<model::NamedTensor>& params, int first, int last,
               int rank, int rounds, int max_rounds) {
  torch::NoGradGuard no_grad;
  for (int s = first; s < last; ++s) {
    zero->BeginStep(max_rounds);
    for (int k = 0; k < rounds; ++k) {
      for (auto& [n, p] : params) p.mutable_grad() = Grad(p, s, rank, k);
      if (zero->stage() == 2) zero->reducer()->EndBackward();
    }
    ASSERT_TRUE(zero->FinishGradients().ok());
    ASSERT_TRUE(zero->Step(1e-2).ok());
  }
}

TEST(ZeroOptimizer, StageOneMatchesAdamWOnTheSummedGradients) {
  const auto ref = ReferenceRun(3, 3, [](int) { return 1; });
  OnRanks(3, [&](int r, Collectives* c) {
    auto params = Clone(MakeParams());
    ZeroOptimizer zero(params, Options(), 1, c, /*bucket_numel=*/20);
    ZeroSteps(&zero, params, 0, 3, r, 1, 1);
    for (size_t i = 0; i < params.size(); ++i) {
      EXPECT_LT(RelDiff(params[i].second, ref[i].second), 1e-6) << "rank " << r << " " << i;
      EXPECT_FALSE(params[i].second.grad().defined());
    }
  });
}

TEST(ZeroOptimizer, StageTwoSumsEveryRoundAndPadsRanksWithFewerBackwards) {
  auto rounds_of = [](int r) { return r == 0 ? 3 : 1; };
  const auto ref = ReferenceRun(2, 2, rounds_of);
  OnRanks(2, [&](int r, Collectives* c) {
    auto params = Clone(MakeParams());
    ZeroOptimizer zero(params, Options(), 2, c, /*bucket_numel=*/20);
    ZeroSteps(&zero, params, 0, 2, r, rounds_of(r), 3);
    for (size_t i = 0; i < params.size(); ++i) {
      EXPECT_LT(RelDiff(params[i].second, ref[i].second), 1e-6) << "rank " << r << " " << i;
    }
  });
}

// Steps first..last-1 where only rank 0 has gradients (the others add zeros),
// so any world size trains like ReferenceRun(1, ...).
void RankZeroSteps(ZeroOptimizer* zero, std::vector<model::NamedTensor>& params, int first,
                   int last, int rank) {
  torch::NoGradGuard no_grad;
  for (int s = first; s < last; ++s) {
    zero->BeginStep(1);
    for (auto& [n, p] : params) {
      p.mutable_grad() = rank == 0 ? Grad(p, s, 0, 0) : torch::zeros_like(p);
    }
    if (zero->stage() == 2) zero->reducer()->EndBackward();
    ASSERT_TRUE(zero->FinishGradients().ok());
    ASSERT_TRUE(zero->Step(1e-2).ok());
  }
}

TEST(ZeroOptimizer, CheckpointReshardsToAnotherWorldSizeAndReadsStageZero) {
  testing::TempDir dir;
  const auto ref = ReferenceRun(1, 4, [](int) { return 1; });
  // 3 ranks train 2 steps on rank 0's gradients only (others add zeros).
  std::vector<model::NamedTensor> after2;
  OnRanks(3, [&](int r, Collectives* c) {
    auto params = Clone(MakeParams());
    ZeroOptimizer zero(params, Options(), 2, c, /*bucket_numel=*/20);
    RankZeroSteps(&zero, params, 0, 2, r);
    ASSERT_TRUE(zero.SaveShard(dir.path().string()).ok());
    if (r == 0) {
      ASSERT_TRUE(zero.SaveIndex(dir.path().string()).ok());
      after2 = Clone(params);
    }
  });
  // 2 ranks resume from the 3 shards; the model weights come from "after2".
  OnRanks(2, [&](int r, Collectives* c) {
    auto params = Clone(after2);
    ZeroOptimizer zero(params, Options(), 1, c, /*bucket_numel=*/16);
    ASSERT_TRUE(zero.Load(dir.path().string()).ok());
    RankZeroSteps(&zero, params, 2, 4, r);
    for (size_t i = 0; i < params.size(); ++i) {
      EXPECT_LT(RelDiff(params[i].second, ref[i].second), 1e-6) << "rank " << r << " " << i;
    }
  });
  // Stage 0's optimizer files load into ZeRO too.
  const std::string dir0 = dir / "stage0";
  std::filesystem::create_directories(dir0);
  auto stage0 = Clone(MakeParams());
  Optimizer opt(stage0, Options());
  for (int s = 0; s < 2; ++s) {
    for (auto& [n, p] : stage0) p.mutable_grad() = Grad(p, s, 0, 0);
    opt.ReducibleGradients();
    opt.Step(1e-2);
  }
  ASSERT_TRUE(opt.Save(dir0).ok());
  OnRanks(2, [&](int r, Collectives* c) {
    auto params = Clone(stage0);
    ZeroOptimizer zero(params, Options(), 2, c, /*bucket_numel=*/20);
    ASSERT_TRUE(zero.Load(dir0).ok());
    RankZeroSteps(&zero, params, 2, 4, r);
    for (size_t i = 0; i < params.size(); ++i) {
      EXPECT_LT(RelDiff(params[i].second, ref[i].second), 1e-6) << "rank " << r << " " << i;
    }
  });
}

TEST(ZeroOptimizer, MissingShardNamesTheWorldSizeTheCheckpointNeeds) {
  testing::TempDir dir;
  OnRanks(2, [&](int r, Collectives* c) {
    auto params = Clone(MakeParams());
    ZeroOptimizer zero(params, Options(), 1, c);
    ASSERT_TRUE(zero.SaveShard(dir.path().string()).ok());
    if (r == 0) {
      ASSERT_TRUE(zero.SaveIndex(dir.path().string()).ok());
    }
  });
  std::filesystem::remove(dir.path() / ZeroShardFileName(1, 2));
  LocalCollectives local;
  auto params = Clone(MakeParams());
  ZeroOptimizer zero(params, Options(), 1, &local);
  Status s = zero.Load(dir.path().string());
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s;
  EXPECT_NE(s.message().find("written by 2 ranks"), std::string::npos) << s;
  EXPECT_NE(s.message().find(ZeroShardFileName(1, 2)), std::string::npos) << s;
}

}  // namespace
}  // namespace skrull::train
