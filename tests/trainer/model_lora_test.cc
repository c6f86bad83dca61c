// LoRA adapters: a fresh adapter leaves the model unchanged, only adapters
// train, PEFT naming on save, strict load.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/file_util.h"
#include "trainer/model/model.h"
#include "trainer/model/safetensors.h"

namespace skrull::model {
namespace {

namespace fs = std::filesystem;

scheduler::ModelConfig LoraConfig() {
  scheduler::ModelConfig c;
  c.model_type = "llama";
  c.hidden_size = 16;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 4;
  c.intermediate_size = 24;
  c.vocab_size = 29;
  c.max_position_embeddings = 1024;
  c.tie_word_embeddings = false;
  return c;
}

std::unique_ptr<DecoderModel> Make(int64_t rank,
                                   std::vector<std::string> targets = {"q_proj", "v_proj"}) {
  ModelOptions o;
  o.seed = 5;
  o.lora.rank = rank;
  o.lora.alpha = 8;
  o.lora.target_modules = std::move(targets);
  auto m = DecoderModel::Create(LoraConfig(), o);
  EXPECT_TRUE(m.ok()) << m.status();
  return std::move(m).value();
}

const PackedBatch& Batch() {
  static const PackedBatch b = PackSequences({{1, 2, 3, 4, 5}, {6, 7, 8}});
  return b;
}

TEST(Lora, ZeroInitializedBLeavesOutputUnchanged) {
  auto base = Make(0);
  auto lora =
      Make(4, {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"});
  EXPECT_TRUE(at::equal(base->Logits(Batch()), lora->Logits(Batch())));
}

TEST(Lora, OnlyAdaptersGetGradients) {
  auto m = Make(2);
  for (const auto& [name, p] : m->NamedParameters()) {
    EXPECT_EQ(p.requires_grad(), name.find("lora_") != std::string::npos) << name;
  }
  // 2 layers x (q, v) x (A, B).
  ASSERT_EQ(m->TrainableParameters().size(), 8u);
  EXPECT_EQ(m->NumTrainableParameters(), 2 * (2 * (16 + 16) + 2 * (16 + 8)));

  m->LossSum(Batch()).backward();
  for (const auto& [name, p] : m->NamedParameters()) {
    if (name.find("lora_") == std::string::npos) {
      EXPECT_FALSE(p.grad().defined()) << name;
    } else if (name.find("lora_B") != std::string::npos) {
      EXPECT_GT(p.grad().abs().sum().item<double>(), 0) << name;
    } else {
      // With B = 0, dL/dA = 0 on the first step.
      EXPECT_EQ(p.grad().abs().sum().item<double>(), 0) << name;
    }
  }
  // After B moves, A gets gradients too and the output changes.
  at::Tensor before = m->Logits(Batch());
  {
    at::NoGradGuard g;
    for (const auto& [name, p] : m->NamedTrainableParameters()) {
      at::Tensor t = p;
      if (p.grad().defined()) t.sub_(p.grad() * 0.1);
      t.mutable_grad().zero_();
    }
  }
  m->LossSum(Batch()).backward();
  for (const auto& [name, p] : m->NamedTrainableParameters()) {
    EXPECT_GT(p.grad().abs().sum().item<double>(), 0) << name;
  }
  EXPECT_FALSE(at::equal(before, m->Logits(Batch())));
}

TEST(Lora, AInitIsKaimingUniformBound) {
  auto m = Make(8);
  for (const auto& [name, p] : m->NamedTrainableParameters()) {
    if (name.find("lora_A") == std::string::npos) continue;
    const double bound = 1.0 / std::sqrt(16.0);
    EXPECT_LE(p.abs().max().item<double>(), bound) << name;
    EXPECT_GT(p.abs().max().item<double>(), 0.5 * bound) << name;
  }
}

TEST(Lora, SaveUsesPeftNamesAndLoadsBack) {
  const fs::path dir = fs::temp_directory_path() / ("skrull_lora_" + std::to_string(::getpid()));
  auto m = Make(2);
  {
    at::NoGradGuard g;
    for (const auto& [name, p] : m->NamedTrainableParameters()) {
      at::Tensor t = p;
      t.add_(0.01);
    }
  }
  ASSERT_TRUE(m->SaveLoraAdapters(dir.string(), "base-model").ok());
  auto file = SafetensorsFile::Open((dir / kLoraAdapterFile).string());
  ASSERT_TRUE(file.ok()) << file.status();
  const TensorInfo* a =
      (*file)->Find("base_model.model.model.layers.1.self_attn.v_proj.lora_A.weight");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 16}));
  EXPECT_EQ((*file)->Find("base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight")->shape,
            (std::vector<int64_t>{16, 2}));
  EXPECT_EQ((*file)->tensors().size(), 8u);
  auto config = nlohmann::json::parse(*ReadFileToString((dir / kLoraConfigFile).string()));
  EXPECT_EQ(config["peft_type"], "LORA");
  EXPECT_EQ(config["r"], 2);
  EXPECT_EQ(config["lora_alpha"], 8.0);
  EXPECT_EQ(config["target_modules"], nlohmann::json::array({"q_proj", "v_proj"}));

  auto fresh = Make(2);
  ASSERT_TRUE(fresh->LoadLoraAdapters(dir.string()).ok());
  EXPECT_TRUE(at::equal(fresh->Logits(Batch()), m->Logits(Batch())));

  auto other_targets = Make(2, {"q_proj"});
  Status s = other_targets->LoadLoraAdapters(dir.string());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("unexpected tensor 'base_model.model.model.layers.0.self_attn.v_proj"),
            std::string::npos)
      << s;
  fs::remove_all(dir);
}

TEST(Lora, InvalidOptionsNameTheField) {
  ModelOptions o;
  o.lora.rank = 4;
  o.lora.target_modules = {"q_proj", "qkv", "q_proj"};
  auto m = DecoderModel::Create(LoraConfig(), o);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("unknown module 'qkv'"), std::string::npos) << m.status();
  EXPECT_NE(m.status().message().find("'q_proj' listed twice"), std::string::npos) << m.status();
  auto base = Make(0);
  EXPECT_EQ(base->SaveLoraAdapters("/tmp/unused").code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace skrull::model
