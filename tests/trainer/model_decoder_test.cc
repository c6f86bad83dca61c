// DecoderModel: packing invariance (logits and gradients), the chunked loss
// against per-token cross-entropy, init, config validation.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <gtest/gtest.h>

#include <map>

#include "trainer/model/chunked_loss.h"
#include "trainer/model/model.h"

namespace skrull::model {
namespace {

scheduler::ModelConfig TinyConfig(const std::string& type = "qwen2") {
  scheduler::ModelConfig c;
  c.model_type = type;
  c.hidden_size = 32;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 8;
  c.intermediate_size = 48;
  c.vocab_size = 61;
  c.max_position_embeddings = 1024;
  c.rope_theta = 10000.0;
  c.attention_bias = type == "qwen2";
  c.tie_word_embeddings = type == "qwen2";
  return c;
}

std::unique_ptr<DecoderModel> MakeModel(const scheduler::ModelConfig& c, ModelOptions o = {}) {
  auto m = DecoderModel::Create(c, o);
  EXPECT_TRUE(m.ok()) << m.status();
  // Small blocks so the multi-block attention path runs on short sequences.
  (*m)->SetAttentionBackend(MakeChunkedAttention({/*block_rows=*/4}));
  return std::move(m).value();
}

std::vector<std::vector<int64_t>> Sequences(int64_t vocab, std::vector<int64_t> lengths,
                                            uint64_t seed) {
  std::vector<std::vector<int64_t>> out;
  uint64_t x = seed;
  for (int64_t len : lengths) {
    std::vector<int64_t> s;
    for (int64_t i = 0; i < len; ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      s.push_back(static_cast<int64_t>((x >> 33) % vocab));
    }
    out.push_back(s);
  }
  return out;
}

std::map<std::string, at::Tensor> Grads(const DecoderModel& m) {
  std::map<std::string, at::Tensor> g;
  for (const auto& [name, p] : m.NamedTrainableParameters()) {
    g[name] = p.grad().defined() ? p.grad().clone() : at::zeros_like(p);
  }
  return g;
}

void ZeroGrads(const DecoderModel& m) {
  for (const auto& [name, p] : m.NamedParameters()) {
    if (p.grad().defined()) p.mutable_grad().zero_();
  }
}

double MaxAbsDiff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

void CheckPackingInvariance(const scheduler::ModelConfig& c) {
  auto model = MakeModel(c);
  const auto seqs = Sequences(c.vocab_size, {5, 1, 17, 9}, 42);

  // Packed.
  PackedBatch packed = PackSequences(seqs);
  at::Tensor packed_logits = model->Logits(packed).detach();
  ZeroGrads(*model);
  model->LossSum(packed).backward();
  auto packed_grads = Grads(*model);

  // One sequence at a time, gradients accumulated.
  ZeroGrads(*model);
  std::vector<at::Tensor> logits;
  for (const auto& s : seqs) {
    PackedBatch one = PackSequences({s});
    logits.push_back(model->Logits(one).detach());
    model->LossSum(one).backward();
  }
  auto single_grads = Grads(*model);

  EXPECT_LT(MaxAbsDiff(packed_logits, at::cat(logits, 0)), 1e-5);
  ASSERT_EQ(packed_grads.size(), single_grads.size());
  for (const auto& [name, g] : packed_grads) {
    const double scale = std::max(1.0, g.abs().max().item<double>());
    EXPECT_LT(MaxAbsDiff(g, single_grads[name]) / scale, 1e-5) << name;
    EXPECT_GT(g.abs().sum().item<double>(), 0.0) << name << " got no gradient";
  }
}

TEST(DecoderModel, PackedEqualsOneSequenceAtATimeQwen2Tied) {
  CheckPackingInvariance(TinyConfig());
}

TEST(DecoderModel, PackedEqualsOneSequenceAtATimeLlamaUntiedWithBias) {
  auto c = TinyConfig("llama");
  c.attention_bias = true;  // Llama: q, k, v and o biases
  c.num_key_value_heads = 4;
  CheckPackingInvariance(c);
}

// A CP rank can get an empty stream and must still run forward and backward.
TEST(DecoderModel, EmptyStreamRunsForwardAndBackward) {
  auto model = MakeModel(TinyConfig());
  PackedBatch empty = PackSequences({});
  EXPECT_EQ(empty.NumTokens(), 0);
  at::Tensor loss = model->LossSum(empty);
  EXPECT_EQ(loss.item<double>(), 0.0);
  loss.backward();
  for (const auto& [name, p] : model->NamedTrainableParameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    EXPECT_EQ(p.grad().abs().sum().item<double>(), 0.0) << name;
  }
  EXPECT_EQ(model->Logits(PackSequences({{}, {}})).sizes(), (std::vector<int64_t>{0, 61}));
}

TEST(DecoderModel, ParameterNamesFollowHuggingFace) {
  auto qwen = MakeModel(TinyConfig());
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& [name, p] : qwen->NamedParameters()) shapes[name] = p.sizes().vec();
  EXPECT_EQ(shapes["model.embed_tokens.weight"], (std::vector<int64_t>{61, 32}));
  EXPECT_EQ(shapes["model.layers.1.self_attn.k_proj.weight"], (std::vector<int64_t>{16, 32}));
  EXPECT_EQ(shapes["model.layers.1.self_attn.k_proj.bias"], (std::vector<int64_t>{16}));
  EXPECT_EQ(shapes.count("model.layers.0.self_attn.o_proj.bias"), 0u);  // Qwen2: no o bias
  EXPECT_EQ(shapes["model.layers.0.mlp.down_proj.weight"], (std::vector<int64_t>{32, 48}));
  EXPECT_EQ(shapes["model.layers.0.post_attention_layernorm.weight"], (std::vector<int64_t>{32}));
  EXPECT_EQ(shapes.count("lm_head.weight"), 0u);  // tied
  EXPECT_EQ(shapes.count("model.norm.weight"), 1u);
  // 2 layers x (4 attn + 3 qkv bias + 3 mlp + 2 norms) + embed + final norm.
  EXPECT_EQ(shapes.size(), 2u * 12 + 2);

  auto llama = MakeModel(TinyConfig("llama"));
  std::map<std::string, at::Tensor> p;
  for (const auto& [name, t] : llama->NamedParameters()) p[name] = t;
  EXPECT_EQ(p.count("lm_head.weight"), 1u);
  EXPECT_EQ(p.count("model.layers.0.self_attn.q_proj.bias"), 0u);
  EXPECT_EQ(llama->NumParameters(), llama->NumTrainableParameters());
}

TEST(DecoderModel, LossSumEqualsSumOfPerTokenCrossEntropy) {
  auto model = MakeModel(TinyConfig("llama"));
  PackedBatch b = PackSequences(Sequences(61, {7, 12, 3}, 5));
  // Mask a few more targets, as a prompt mask would.
  for (int64_t i : {0, 1, 8}) b.targets[i].fill_(-100);
  at::Tensor logits = model->Logits(b).to(at::kDouble);
  at::Tensor logp = logits.log_softmax(-1);
  double expected = 0;
  int64_t counted = 0;
  for (int64_t i = 0; i < b.NumTokens(); ++i) {
    const int64_t t = b.targets[i].item<int64_t>();
    if (t == -100) continue;
    expected -= logp[i][t].item<double>();
    ++counted;
  }
  EXPECT_EQ(counted, 22 - 3 - 3);
  at::Tensor loss = model->LossSum(b);
  EXPECT_EQ(loss.scalar_type(), at::kFloat);
  EXPECT_NEAR(loss.item<double>(), expected, 1e-4);
}

TEST(DecoderModel, LossChunkSizeChangesNothing) {
  const auto seqs = Sequences(61, {9, 14}, 9);
  std::vector<std::map<std::string, at::Tensor>> grads;
  std::vector<double> losses;
  for (int64_t chunk : {1, 5, 4096}) {
    ModelOptions o;
    o.loss_chunk_tokens = chunk;
    auto model = MakeModel(TinyConfig(), o);
    at::Tensor loss = model->LossSum(PackSequences(seqs));
    loss.backward();
    losses.push_back(loss.item<double>());
    grads.push_back(Grads(*model));
  }
  for (size_t i = 1; i < losses.size(); ++i) {
    EXPECT_NEAR(losses[i], losses[0], 1e-4);
    for (const auto& [name, g] : grads[0]) EXPECT_LT(MaxAbsDiff(grads[i][name], g), 1e-5) << name;
  }
}

TEST(ChunkedLoss, GradientsMatchAutogradCrossEntropy) {
  at::Tensor h = at::randn({11, 6}, at::kDouble).to(at::kFloat).set_requires_grad(true);
  at::Tensor w = at::randn({13, 6}, at::kFloat).set_requires_grad(true);
  at::Tensor t = at::randint(0, 13, {11}, at::kLong);
  t[4] = -100;
  LinearCrossEntropySum(h, w, t, 3).mul(0.5).backward();
  at::Tensor dh = h.grad().clone(), dw = w.grad().clone();
  h.mutable_grad().zero_();
  w.mutable_grad().zero_();
  at::Tensor logp = at::matmul(h, w.t()).log_softmax(-1);
  at::Tensor valid = t.ne(-100);
  at::Tensor nll = -logp.gather(1, t.clamp_min(0).unsqueeze(1)).squeeze(1) * valid;
  nll.sum().mul(0.5).backward();
  EXPECT_LT(MaxAbsDiff(dh, h.grad()), 1e-6);
  EXPECT_LT(MaxAbsDiff(dw, w.grad()), 1e-6);
}

TEST(DecoderModel, InitIsSeededPerTensorWithHfDistribution) {
  ModelOptions o;
  o.seed = 3;
  auto a = MakeModel(TinyConfig(), o);
  auto b = MakeModel(TinyConfig(), o);
  o.seed = 4;
  auto c = MakeModel(TinyConfig(), o);
  auto pa = a->NamedParameters(), pb = b->NamedParameters(), pc = c->NamedParameters();
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_TRUE(at::equal(pa[i].second, pb[i].second)) << pa[i].first;
    const std::string& name = pa[i].first;
    if (name.find("norm") != std::string::npos) {
      EXPECT_TRUE(at::equal(pa[i].second, at::ones_like(pa[i].second))) << name;
    } else if (name.find("bias") != std::string::npos) {
      EXPECT_EQ(pa[i].second.abs().sum().item<float>(), 0.0f) << name;
    } else {
      EXPECT_FALSE(at::equal(pa[i].second, pc[i].second)) << name;
    }
  }
  at::Tensor embed = a->NamedParameters()[0].second;
  EXPECT_NEAR(embed.std().item<double>(), 0.02, 0.003);
  EXPECT_NEAR(embed.mean().item<double>(), 0.0, 0.003);
}

TEST(DecoderModel, ConfigErrorsNameTheField) {
  auto c = TinyConfig();
  c.num_key_value_heads = 3;
  c.vocab_size = 0;
  auto m = DecoderModel::Create(c, {});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("num_key_value_heads: must divide"), std::string::npos)
      << m.status();
  EXPECT_NE(m.status().message().find("vocab_size: must be > 0"), std::string::npos);

  auto d = TinyConfig();
  d.rope_scaling.type = "longrope";
  d.rope_scaling.factor = 2;
  auto m2 = DecoderModel::Create(d, {});
  ASSERT_FALSE(m2.ok());
  EXPECT_NE(m2.status().message().find("longrope"), std::string::npos);

  ModelOptions bad;
  bad.dtype = at::kInt;
  EXPECT_NE(DecoderModel::Create(TinyConfig(), bad).status().message().find("dtype"),
            std::string::npos);
}

TEST(DecoderModel, RecomputeLayersGivesSameLossAndGradients) {
  const auto seqs = Sequences(61, {11, 6, 20}, 3);
  for (int64_t lora_rank : {0, 2}) {
    std::vector<double> losses;
    std::vector<std::map<std::string, at::Tensor>> grads;
    for (bool recompute : {false, true}) {
      ModelOptions o;
      o.recompute_layers = recompute;
      o.lora.rank = lora_rank;
      o.lora.target_modules = {"q_proj", "down_proj"};
      auto model = MakeModel(TinyConfig("llama"), o);
      if (lora_rank > 0) {  // move B off zero so A gets gradients too
        at::NoGradGuard no_grad;
        for (const auto& [name, p] : model->NamedTrainableParameters()) {
          at::Tensor t = p;
          t.add_(0.05);
        }
      }
      at::Tensor loss = model->LossSum(PackSequences(seqs));
      loss.backward();
      losses.push_back(loss.item<double>());
      grads.push_back(Grads(*model));
    }
    EXPECT_EQ(losses[0], losses[1]);
    ASSERT_EQ(grads[0].size(), grads[1].size());
    for (const auto& [name, g] : grads[0]) {
      EXPECT_LT(MaxAbsDiff(grads[1][name], g), 1e-6) << name << " lora " << lora_rank;
      EXPECT_GT(g.abs().sum().item<double>(), 0.0) << name;
    }
  }
}

TEST(DecoderModel, Bfloat16RunsAndStaysCloseToFloat32) {
  ModelOptions o;
  o.dtype = at::kBFloat16;
  auto bf = MakeModel(TinyConfig(), o);
  auto fp = MakeModel(TinyConfig());
  PackedBatch b = PackSequences(Sequences(61, {6, 10}, 1));
  at::Tensor lb = bf->LossSum(b);
  at::Tensor lf = fp->LossSum(b);
  lb.backward();
  EXPECT_EQ(lb.scalar_type(), at::kFloat);
  EXPECT_NEAR(lb.item<double>(), lf.item<double>(), 0.02 * lf.item<double>());
  EXPECT_EQ(bf->NamedParameters()[0].second.grad().scalar_type(), at::kBFloat16);
}

}  // namespace
}  // namespace skrull::model
