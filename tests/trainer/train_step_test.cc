// Gradients of one step do not depend on how the global batch is grouped
// into micro-batches, policies or data-parallel ranks, and the loss is
// normalised by the global batch's label tokens.
#include "trainer/train/train_step.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <map>
#include <random>
#include <thread>

#include "scheduler/cost_model.h"
#include "scheduler/policy.h"
#include "tests/trainer/train_test_util.h"
#include "trainer/train/collectives.h"
#include "trainer/train/optimizer.h"

namespace skrull::train {
namespace {

using scheduler::kDistributed;
using scheduler::Plan;

// A global batch of random token sequences with some masked labels.
struct Batch {
  std::vector<std::vector<int32_t>> inputs, targets;
  std::vector<scheduler::SequenceTokens> Tokens() const {
    std::vector<scheduler::SequenceTokens> t;
    for (size_t i = 0; i < inputs.size(); ++i) {
      t.push_back({inputs[i].data(), targets[i].data(), static_cast<int64_t>(inputs[i].size())});
    }
    return t;
  }
  std::vector<scheduler::Sequence> Sequences() const {
    std::vector<scheduler::Sequence> s;
    for (size_t i = 0; i < inputs.size(); ++i) {
      s.push_back({static_cast<int64_t>(i), static_cast<int64_t>(inputs[i].size())});
    }
    return s;
  }
  int64_t LabelTokens() const {
    int64_t n = 0;
    for (const auto& t : targets)
      for (int32_t v : t) n += v != scheduler::kIgnoreLabel;
    return n;
  }
};

Batch RandomBatch(const std::vector<int>& lengths, uint32_t seed = 11) {
  std::mt19937 rng(seed);
  Batch b;
  for (int len : lengths) {
    std::vector<int32_t> in, tg;
    for (int p = 0; p < len; ++p) in.push_back(std::uniform_int_distribution<int>(0, 63)(rng));
    for (int p = 0; p < len; ++p) {
      const bool masked = p == len - 1 || std::uniform_int_distribution<int>(0, 4)(rng) == 0;
      tg.push_back(masked ? static_cast<int32_t>(scheduler::kIgnoreLabel) : in[p + 1]);
    }
    b.inputs.push_back(in);
    b.targets.push_back(tg);
  }
  return b;
}

std::unique_ptr<model::DecoderModel> TinyModel() {
  model::ModelOptions o;
  o.seed = 5;
  auto m = model::DecoderModel::Create(testing::TinyConfig(), o);
  EXPECT_TRUE(m.ok()) << m.status();
  return std::move(m).value();
}

// Plan with one DP rank and CP 1 whose micro-batches are the given id groups.
Plan GroupedPlan(const Batch& b, const std::vector<std::vector<int64_t>>& groups, int dp = 1) {
  Plan p;
  p.policy = "test";
  p.topology = {dp, 1};
  p.bucket_size_tokens = 1 << 20;
  p.ranks.resize(dp);
  for (size_t g = 0; g < groups.size(); ++g) {
    scheduler::MicroBatch mb;
    mb.dp_rank = static_cast<int>(g % dp);
    mb.index = static_cast<int>(p.ranks[mb.dp_rank].micro_batches.size());
    for (int64_t id : groups[g]) {
      mb.sequences.push_back({id, static_cast<int64_t>(b.inputs[id].size()), 0});
    }
    p.ranks[mb.dp_rank].micro_batches.push_back(mb);
  }
  return p;
}

// Gradients of every trainable parameter after one AccumulateGradients.
std::vector<at::Tensor> Gradients(const Plan& plan, const Batch& b, double* loss = nullptr) {
  auto m = TinyModel();
  RankStepWork total;
  for (int d = 0; d < plan.topology.dp; ++d) {
    auto w = AccumulateGradients(m.get(), plan, b.Tokens(), d, 0, b.LabelTokens());
    EXPECT_TRUE(w.ok()) << w.status();
    total.loss_sum += w->loss_sum;
    total.label_tokens += w->label_tokens;
  }
  EXPECT_EQ(total.label_tokens, b.LabelTokens());
  if (loss != nullptr) *loss = total.loss_sum / b.LabelTokens();
  std::vector<at::Tensor> g;
  for (auto& [name, p] : m->NamedTrainableParameters()) g.push_back(p.grad().clone());
  return g;
}

void ExpectSameGradients(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const double scale = std::max(a[i].abs().max().item<double>(), 1e-12);
    const double diff = (a[i] - b[i]).abs().max().item<double>();
    EXPECT_LE(diff / scale, 1e-5) << "parameter " << i;
  }
}

const std::vector<int> kLengths = {17, 3, 40, 1, 25, 9, 33, 12};

TEST(TrainStep, GradientsDoNotDependOnMicroBatchGrouping) {
  Batch b = RandomBatch(kLengths);
  double loss_one = 0, loss_each = 0, loss_mixed = 0;
  auto one = Gradients(GroupedPlan(b, {{0, 1, 2, 3, 4, 5, 6, 7}}), b, &loss_one);
  auto each = Gradients(GroupedPlan(b, {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}}), b, &loss_each);
  auto mixed = Gradients(GroupedPlan(b, {{7, 2}, {}, {5, 0, 3}, {6, 4, 1}}), b, &loss_mixed);
  ExpectSameGradients(one, each);
  ExpectSameGradients(one, mixed);
  EXPECT_NEAR(loss_one, loss_each, 1e-6);
  EXPECT_NEAR(loss_one, loss_mixed, 1e-6);
}

TEST(TrainStep, GradientsDoNotDependOnThePolicy) {
  Batch b = RandomBatch(kLengths);
  scheduler::CostModel cost(testing::TinyConfig());
  auto reference = Gradients(GroupedPlan(b, {{0, 1, 2, 3, 4, 5, 6, 7}}), b);
  for (scheduler::Policy policy : scheduler::AllPolicies()) {
    for (int64_t bucket : {40, 64, 1000}) {
      scheduler::ScheduleOptions so;
      so.topology = {1, 1};
      so.bucket_size_tokens = bucket;
      auto plan = scheduler::Schedule(policy, b.Sequences(), so, cost);
      ASSERT_TRUE(plan.ok()) << plan.status();
      SCOPED_TRACE(std::string(scheduler::PolicyName(policy)) + " bucket " +
                   std::to_string(bucket) + " micro-batches " +
                   std::to_string(plan->NumMicroBatches()));
      ExpectSameGradients(reference, Gradients(*plan, b));
    }
  }
}

TEST(TrainStep, LossIsSumOfTokenCrossEntropyOverGlobalLabelTokens) {
  Batch b = RandomBatch(kLengths);
  double loss = 0;
  Gradients(GroupedPlan(b, {{0, 1, 2}, {3, 4, 5, 6, 7}}), b, &loss);
  // Reference: each sequence alone through the full logits.
  auto m = TinyModel();
  torch::NoGradGuard no_grad;
  double sum = 0;
  for (size_t i = 0; i < b.inputs.size(); ++i) {
    scheduler::RankStream s;
    for (size_t p = 0; p < b.inputs[i].size(); ++p) {
      s.input_ids.push_back(b.inputs[i][p]);
      s.targets.push_back(b.targets[i][p]);
      s.positions.push_back(static_cast<int64_t>(p));
    }
    s.local_cu_seqlens = {0, static_cast<int64_t>(b.inputs[i].size())};
    model::PackedBatch pb = ToPackedBatch(s, c10::Device(c10::kCPU));
    at::Tensor logits = m->Logits(pb);
    sum += torch::nn::functional::cross_entropy(
               logits, pb.targets,
               torch::nn::functional::CrossEntropyFuncOptions().ignore_index(-100).reduction(
                   torch::kSum))
               .item<double>();
  }
  EXPECT_NEAR(loss, sum / b.LabelTokens(), 1e-5);
  // Not the mean of micro-batch means.
  EXPECT_GT(b.LabelTokens(), 0);
}

TEST(TrainStep, DataParallelRanksSumToTheSingleRankGradient) {
  Batch b = RandomBatch(kLengths);
  auto single = Gradients(GroupedPlan(b, {{0, 1, 2, 3, 4, 5, 6, 7}}), b);
  // Two DP ranks as two threads with their own model replicas, reduced
  // through the in-memory Collectives.
  Plan plan = GroupedPlan(b, {{0, 5}, {2, 3}, {1}, {4, 6, 7}}, /*dp=*/2);
  auto group = MakeInMemoryGroup(2);
  std::vector<std::vector<at::Tensor>> reduced(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      auto m = TinyModel();
      Optimizer opt(m->NamedTrainableParameters(), OptimizerOptions{});
      auto w = AccumulateGradients(m.get(), plan, b.Tokens(), r, 0, b.LabelTokens());
      ASSERT_TRUE(w.ok()) << w.status();
      std::vector<at::Tensor> g = opt.ReducibleGradients();
      ASSERT_TRUE(group[r]->AllReduceSum(g).ok());
      for (auto& t : g) reduced[r].push_back(t.clone());
    });
  }
  for (auto& t : threads) t.join();
  ExpectSameGradients(single, reduced[0]);
  ExpectSameGradients(single, reduced[1]);
}

TEST(TrainStep, EmptyPlanMicroBatchesAreSkipped) {
  Batch b = RandomBatch({5, 6});
  Plan plan = GroupedPlan(b, {{}, {0, 1}, {}});
  auto m = TinyModel();
  auto w = AccumulateGradients(m.get(), plan, b.Tokens(), 0, 0, b.LabelTokens());
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->micro_batches, 1);
  EXPECT_EQ(w->tokens, 11);
  EXPECT_EQ(w->rank_tokens_peak, 11);
  EXPECT_EQ(w->local_sequences, 2);
}

// Records GradReady calls and a copy of the gradient at that moment.
class RecordingReducer final : public GradientReducer {
 public:
  explicit RecordingReducer(std::vector<at::Tensor> params) : params_(std::move(params)) {}
  void GradReady(size_t index) override {
    calls.push_back(index);
    at_ready[index] = params_[index].grad().clone();
  }
  Status Finish() override { return OkStatus(); }

  std::vector<size_t> calls;
  std::map<size_t, at::Tensor> at_ready;

 private:
  std::vector<at::Tensor> params_;
};

TEST(TrainStep, HooksReportEveryGradientOnceWhenFinalInTheLastMicroBatch) {
  Batch b = RandomBatch(kLengths);
  // The last micro-batch of the plan is empty: the one before it is the last run.
  Plan plan = GroupedPlan(b, {{0, 1, 2}, {3, 4}, {5, 6, 7}, {}});
  auto m = TinyModel();
  std::vector<at::Tensor> params;
  for (auto& [name, p] : m->NamedTrainableParameters()) params.push_back(p);
  RecordingReducer reducer(params);
  {
    GradReadyHooks hooks(params, &reducer);
    auto w = AccumulateGradients(m.get(), plan, b.Tokens(), 0, 0, b.LabelTokens(), nullptr, &hooks);
    ASSERT_TRUE(w.ok()) << w.status();
    EXPECT_EQ(w->micro_batches, 3);
    EXPECT_FALSE(hooks.armed());
  }
  // Once per parameter, only in the last backward, with the final gradient.
  std::vector<size_t> sorted = reducer.calls;
  std::sort(sorted.begin(), sorted.end());
  ASSERT_EQ(sorted.size(), params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(sorted[i], i);
    EXPECT_TRUE(at::equal(reducer.at_ready[i], params[i].grad())) << "parameter " << i;
  }
  // Backward produces the last parameters first (the LM head before the embedding).
  EXPECT_GT(reducer.calls.front(), reducer.calls.back());
  // Gone with the hooks object.
  reducer.calls.clear();
  ASSERT_TRUE(AccumulateGradients(m.get(), plan, b.Tokens(), 0, 0, b.LabelTokens()).ok());
  EXPECT_TRUE(reducer.calls.empty());
}

}  // namespace
}  // namespace skrull::train
