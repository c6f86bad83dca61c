// The families in the model: Qwen3's q_norm / k_norm and biases, dynamic RoPE per
// sequence in a packed stream, yarn's attention factor, the three recompute
// modes giving the same values and gradients, and the LoRA merge. The
// comparison with transformers itself is tests/reference/ (docs/reference.md).
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "trainer/model/chunked_loss.h"
#include "trainer/model/model.h"
#include "trainer/model/rope.h"

namespace skrull::model {
namespace {

scheduler::ModelConfig Config(const std::string& type) {
  scheduler::ModelConfig c;
  c.model_type = type;
  c.hidden_size = 32;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 16;  // explicit, != hidden / heads
  c.intermediate_size = 48;
  c.vocab_size = 61;
  c.max_position_embeddings = 24;
  c.rope_theta = 10000.0;
  c.attention_bias = type != "mistral";
  return c;
}

std::unique_ptr<DecoderModel> Make(const scheduler::ModelConfig& c, ModelOptions o = {}) {
  o.seed = 5;
  auto m = DecoderModel::Create(c, o);
  EXPECT_TRUE(m.ok()) << m.status();
  // Non-trivial norms and biases, the same for every model built here.
  at::NoGradGuard no_grad;
  at::manual_seed(11);
  for (auto& [name, p] : (*m)->NamedParameters()) {
    if (p.dim() == 1) p.add_(at::randn(p.sizes()) * 0.1);
  }
  return std::move(m).value();
}

std::vector<std::vector<int64_t>> Sequences(std::vector<int64_t> lengths) {
  std::vector<std::vector<int64_t>> out;
  uint64_t x = 7;
  for (int64_t len : lengths) {
    std::vector<int64_t> s;
    for (int64_t i = 0; i < len; ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      s.push_back(static_cast<int64_t>((x >> 33) % 61));
    }
    out.push_back(s);
  }
  return out;
}

double MaxRel(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).abs().max().item<double>() / std::max(1e-30, b.abs().max().item<double>());
}

TEST(ModelFamilies, Qwen3HasQkNormsAndOutputBias) {
  auto m = Make(Config("qwen3"));
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& [name, p] : m->NamedParameters()) shapes[name] = p.sizes().vec();
  EXPECT_EQ(shapes["model.layers.0.self_attn.q_norm.weight"], (std::vector<int64_t>{16}));
  EXPECT_EQ(shapes["model.layers.1.self_attn.k_norm.weight"], (std::vector<int64_t>{16}));
  EXPECT_EQ(shapes["model.layers.0.self_attn.o_proj.bias"], (std::vector<int64_t>{32}));
  EXPECT_EQ(shapes["model.layers.0.self_attn.q_proj.weight"], (std::vector<int64_t>{64, 32}));
  EXPECT_EQ(m->NumParameters(), Config("qwen3").NumParameters());
  // Mistral has no biases (its parser drops attention_bias, as transformers
  // ignores it); a config built in code that sets it is refused.
  scheduler::ModelConfig mistral = Config("mistral");
  mistral.attention_bias = true;
  auto refused = DecoderModel::Create(mistral, ModelOptions());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("attention_bias: mistral has no attention biases"),
            std::string::npos)
      << refused.status();
  mistral.attention_bias = false;
  for (const auto& [name, p] : Make(mistral)->NamedParameters()) {
    EXPECT_EQ(name.find("q_norm"), std::string::npos) << name;
    EXPECT_EQ(name.find("bias"), std::string::npos) << name;
  }
}

TEST(ModelFamilies, DynamicRopeGivesEachPackedSequenceItsOwnTable) {
  scheduler::ModelConfig c = Config("mistral");
  c.rope_scaling.type = "dynamic";
  c.rope_scaling.factor = 2.0;
  auto m = Make(c);
  // 40 and 30 are past max_position_embeddings (24): each has its own base.
  const auto seqs = Sequences({40, 9, 30});
  at::NoGradGuard no_grad;
  at::Tensor packed = m->Logits(PackSequences(seqs));
  int64_t offset = 0;
  for (const auto& s : seqs) {
    at::Tensor alone = m->Logits(PackSequences({s}));
    EXPECT_LT(MaxRel(packed.narrow(0, offset, s.size()), alone), 1e-6) << s.size();
    offset += static_cast<int64_t>(s.size());
  }
  auto rope = RotaryEmbedding::Create(c);
  ASSERT_TRUE(rope.ok());
  EXPECT_TRUE(rope->InvFreqForLength(24).equal(rope->inv_freq()));
  EXPECT_FALSE(rope->InvFreqForLength(40).equal(rope->inv_freq()));
  // NTK: the base grows, so every frequency but the first drops.
  EXPECT_LT(rope->InvFreqForLength(40)[3].item<float>(), rope->inv_freq()[3].item<float>());
}

TEST(ModelFamilies, YarnScalesCosAndSinByTheAttentionFactor) {
  scheduler::ModelConfig c = Config("qwen3");
  c.rope_scaling.type = "yarn";
  c.rope_scaling.factor = 4.0;
  c.rope_scaling.original_max_position_embeddings = 8;
  auto rope = RotaryEmbedding::Create(c);
  ASSERT_TRUE(rope.ok()) << rope.status();
  EXPECT_DOUBLE_EQ(rope->attention_scaling(), 0.1 * std::log(4.0) + 1.0);
  auto [cos, sin] = rope->CosSin(at::zeros({1}, at::kLong));
  EXPECT_NEAR(cos[0][0].item<double>(), 0.1 * std::log(4.0) + 1.0, 1e-6);
  c.rope_scaling.attention_factor = 0.5;
  EXPECT_DOUBLE_EQ(RotaryEmbedding::Create(c)->attention_scaling(), 0.5);
}

// spec.training.recompute: none, selective and full give the same values and
// gradients.
TEST(ModelFamilies, RecomputeModesGiveTheSameLossAndGradients) {
  const auto seqs = Sequences({13, 5, 20});
  std::map<std::string, at::Tensor> reference;
  double reference_loss = 0;
  for (int mode = 0; mode < 3; ++mode) {
    ModelOptions o;
    o.recompute_mlp = mode == 1;
    o.recompute_layers = mode == 2;
    auto m = Make(Config("qwen3"), o);
    at::Tensor loss = m->LossSum(PackSequences(seqs));
    loss.backward();
    if (mode == 0) reference_loss = loss.item<double>();
    EXPECT_NEAR(loss.item<double>(), reference_loss, 1e-6 * std::abs(reference_loss)) << mode;
    for (const auto& [name, p] : m->NamedTrainableParameters()) {
      ASSERT_TRUE(p.grad().defined()) << name << " mode " << mode;
      if (mode == 0) {
        reference[name] = p.grad().clone();
      } else {
        // Absolute, as the decoder's own recompute test: selective sums the
        // MLP's gradient into the residual's in another order (fp32 rounding,
        // which Q/K's small gradients show as ~1e-5 relative).
        EXPECT_LT((p.grad() - reference[name]).abs().max().item<double>(), 1e-6)
            << name << " mode " << mode;
      }
    }
  }
}

TEST(ModelFamilies, MergedLoraKeepsTheOutputs) {
  ModelOptions o;
  o.lora.rank = 2;
  o.lora.alpha = 4;
  o.lora.target_modules = {"q_proj", "o_proj", "down_proj"};
  auto m = Make(Config("llama"), o);
  {
    at::NoGradGuard no_grad;
    for (auto& [name, p] : m->NamedTrainableParameters()) p.normal_(0, 0.1);  // B != 0
  }
  const auto seqs = Sequences({11, 6});
  at::NoGradGuard no_grad;
  at::Tensor before = m->Logits(PackSequences(seqs));
  ASSERT_TRUE(m->MergeLoraAdapters().ok());
  at::Tensor after = m->Logits(PackSequences(seqs));
  EXPECT_LT(MaxRel(after, before), 1e-5);
  auto full = Make(Config("llama"));
  EXPECT_FALSE(full->MergeLoraAdapters().ok());
}

}  // namespace
}  // namespace skrull::model
