// config.json as transformers 4.x and 5.x write it: the same
// numbers from either layout, the families, and refusals that name the field.
// The fixtures under data/hf_configs/ were saved by transformers itself
// (tests/reference/make_config_fixtures.py, scripts/check-reference.sh --fixtures).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "scheduler/cost_model.h"
#include "scheduler/memory_model.h"
#include "scheduler/model_config.h"

namespace skrull::scheduler {
namespace {

std::string Fixture(const std::string& version, const std::string& name) {
  const char* root = std::getenv("SKRULL_SOURCE_DIR");
  const std::string dir = root != nullptr ? root : ".";
  std::ifstream in(dir + "/tests/scheduler/data/hf_configs/" + version + "/" + name + ".json");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

ModelConfig ParseOk(const std::string& text, const std::string& origin) {
  StatusOr<ModelConfig> c = ParseHfConfigJson(text, origin);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *c : ModelConfig();
}

void ExpectSameRope(const ModelConfig& a, const ModelConfig& b) {
  EXPECT_EQ(a.model_type, b.model_type);
  EXPECT_EQ(a.rope_theta, b.rope_theta);
  EXPECT_EQ(a.rope_scaling.type, b.rope_scaling.type);
  EXPECT_EQ(a.rope_scaling.factor, b.rope_scaling.factor);
  EXPECT_EQ(a.rope_scaling.low_freq_factor, b.rope_scaling.low_freq_factor);
  EXPECT_EQ(a.rope_scaling.high_freq_factor, b.rope_scaling.high_freq_factor);
  EXPECT_EQ(a.rope_scaling.original_max_position_embeddings,
            b.rope_scaling.original_max_position_embeddings);
  EXPECT_EQ(a.rope_scaling.attention_factor, b.rope_scaling.attention_factor);
  EXPECT_EQ(a.head_dim, b.head_dim);
  EXPECT_EQ(a.attention_bias, b.attention_bias);
  EXPECT_EQ(a.NumParameters(), b.NumParameters());
}

TEST(ModelConfigLayouts, TransformersFourAndFiveReadToTheSameNumbers) {
  for (const char* name :
       {"qwen2", "qwen3-yarn", "llama-llama3", "llama-linear", "mistral-dynamic"}) {
    SCOPED_TRACE(name);
    const std::string v4 = Fixture("tf4", name), v5 = Fixture("tf5", name);
    ASSERT_FALSE(v4.empty()) << "fixture tf4/" << name << " missing";
    ASSERT_FALSE(v5.empty()) << "fixture tf5/" << name << " missing";
    // The 5.x files carry no top-level rope_theta (what used to be misread).
    EXPECT_EQ(v5.find("\"rope_theta\": 1000000.0,\n  \"rope_type\""), std::string::npos);
    ExpectSameRope(ParseOk(v4, name), ParseOk(v5, name));
  }
}

TEST(ModelConfigLayouts, ReadsTheRopeBaseFromRopeParameters) {
  // A Qwen2 saved by transformers 5 (theta 1e6) used to train with 10000.
  const ModelConfig c = ParseOk(Fixture("tf5", "qwen2"), "qwen2");
  EXPECT_EQ(c.rope_theta, 1000000.0);
  EXPECT_TRUE(c.rope_scaling.type.empty());
  EXPECT_TRUE(c.attention_bias);
}

TEST(ModelConfigLayouts, ReadsEachScalingType) {
  const ModelConfig yarn = ParseOk(Fixture("tf5", "qwen3-yarn"), "yarn");
  EXPECT_EQ(yarn.model_type, "qwen3");
  EXPECT_EQ(yarn.head_dim, 32);  // explicit, not hidden / heads (16)
  EXPECT_EQ(yarn.rope_scaling.type, "yarn");
  EXPECT_EQ(yarn.rope_scaling.factor, 4.0);
  EXPECT_EQ(yarn.rope_scaling.original_max_position_embeddings, 64);
  EXPECT_EQ(yarn.rope_scaling.beta_fast, 32.0);
  EXPECT_EQ(yarn.rope_scaling.beta_slow, 1.0);
  const ModelConfig llama3 = ParseOk(Fixture("tf4", "llama-llama3"), "llama3");
  EXPECT_EQ(llama3.rope_theta, 500000.0);
  EXPECT_EQ(llama3.rope_scaling.type, "llama3");
  EXPECT_EQ(llama3.rope_scaling.factor, 8.0);
  EXPECT_EQ(llama3.rope_scaling.high_freq_factor, 4.0);
  const ModelConfig dynamic = ParseOk(Fixture("tf5", "mistral-dynamic"), "dynamic");
  EXPECT_EQ(dynamic.rope_scaling.type, "dynamic");
  EXPECT_EQ(dynamic.rope_scaling.factor, 2.0);
  EXPECT_FALSE(dynamic.attention_bias);
}

TEST(ModelConfigLayouts, WrittenConfigReadsBackInBothLayouts) {
  for (const char* name : {"qwen3-yarn", "llama-llama3", "mistral-dynamic", "qwen2"}) {
    SCOPED_TRACE(name);
    const ModelConfig c = ParseOk(Fixture("tf5", name), name);
    const std::string text = ToHfConfigJson(c);
    EXPECT_NE(text.find("\"rope_parameters\""), std::string::npos) << text;
    ExpectSameRope(c, ParseOk(text, "written"));
  }
}

constexpr char kBase[] = R"("hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "intermediate_size": 96, "vocab_size": 300,
    "max_position_embeddings": 256)";

StatusOr<ModelConfig> Parse(const std::string& fields) {
  return ParseHfConfigJson("{" + std::string(kBase) + ", " + fields + "}", "config.json");
}

void ExpectRefused(const std::string& fields, const std::string& wanted) {
  StatusOr<ModelConfig> c = Parse(fields);
  ASSERT_FALSE(c.ok()) << fields;
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find(wanted), std::string::npos) << c.status();
}

TEST(ModelConfigLayouts, RefusesAConfigWithoutARopeBase) {
  ExpectRefused(R"("model_type": "qwen2")",
                "config.json: rope_theta: the RoPE base is not in this config");
  ExpectRefused(R"("model_type": "qwen2", "rope_parameters": {"rope_type": "default"})",
                "rope_theta: the RoPE base is not in this config");
}

TEST(ModelConfigLayouts, RefusesWhatItCannotComputeNamingFieldValueAndSupported) {
  ExpectRefused(R"("model_type": "llama", "rope_parameters": {"rope_type": "longrope",
      "rope_theta": 10000.0})",
                "rope_parameters.rope_type: rope type \"longrope\" is not supported; supported: "
                "default, linear, dynamic, llama3, yarn");
  ExpectRefused(R"("model_type": "llama", "rope_theta": 10000.0,
      "rope_scaling": {"type": "su", "factor": 2.0})",
                "rope_scaling.type: rope type \"su\" is not supported");
  ExpectRefused(R"("model_type": "llama", "rope_parameters": {"rope_type": "default",
      "rope_theta": 10000.0, "mrope_section": [16, 24, 24]})",
                "rope_parameters.mrope_section: not a RoPE setting this trainer reads");
  ExpectRefused(R"("model_type": "llama", "rope_theta": 10000.0, "partial_rotary_factor": 0.5)",
                "partial_rotary_factor: partial rotary embeddings are not supported");
  ExpectRefused(R"("model_type": "llama", "rope_parameters": {"rope_type": "llama3",
      "rope_theta": 10000.0, "factor": 8.0})",
                "rope_parameters.low_freq_factor: required field missing");
  ExpectRefused(R"("model_type": "mistral", "rope_theta": 10000.0, "sliding_window": 4096)",
                "sliding_window: Mistral's sliding-window attention is not supported (got 4096)");
  ExpectRefused(R"("model_type": "qwen3", "rope_theta": 10000.0, "use_sliding_window": true,
      "max_window_layers": 1)",
                "use_sliding_window: sliding-window attention is not supported");
  ExpectRefused(R"("model_type": "qwen2", "rope_theta": 10000.0,
      "layer_types": ["full_attention", "sliding_attention"])",
                "layer_types[1]: only \"full_attention\" layers are supported");
  ExpectRefused(R"("model_type": "qwen3_moe", "rope_theta": 10000.0)",
                "model type \"qwen3_moe\" is not supported; supported: llama, mistral, qwen2, "
                "qwen3");
  ExpectRefused(R"("model_type": "llama", "rope_theta": 10000.0,
      "rope_scaling": {"rope_type": "linear", "factor": 2.0},
      "rope_parameters": {"rope_type": "linear", "factor": 4.0, "rope_theta": 10000.0})",
                "rope_scaling: disagrees with rope_parameters");
}

TEST(ModelConfigLayouts, FamiliesSetBiasesAndNormsAsTransformersBuildsThem) {
  StatusOr<ModelConfig> qwen2 = Parse(R"("model_type": "qwen2", "rope_theta": 1e6,
      "attention_bias": false)");
  ASSERT_TRUE(qwen2.ok()) << qwen2.status();
  EXPECT_TRUE(qwen2->attention_bias);  // Qwen2 hard-codes Q/K/V biases
  EXPECT_FALSE(qwen2->OutputBias());
  StatusOr<ModelConfig> mistral = Parse(R"("model_type": "mistral", "rope_theta": 1e6,
      "sliding_window": null, "attention_bias": true)");
  ASSERT_TRUE(mistral.ok()) << mistral.status();
  EXPECT_FALSE(mistral->attention_bias);
  StatusOr<ModelConfig> qwen3 = Parse(R"("model_type": "qwen3", "rope_theta": 1e6,
      "head_dim": 32, "attention_bias": true)");
  ASSERT_TRUE(qwen3.ok()) << qwen3.status();
  EXPECT_TRUE(qwen3->QkNorm());
  EXPECT_TRUE(qwen3->OutputBias());
  // Qwen3: Q (4x32) and K, V (2x32) projections from hidden 64, biases on
  // Q, K, V and O, q_norm and k_norm of head_dim each.
  const int64_t h = 64, q = 128, kv = 64, f = 96, v = 300;
  const int64_t layer = h * q + 2 * h * kv + q * h + (q + 2 * kv + h) + 2 * 32 + 3 * h * f + 2 * h;
  EXPECT_EQ(qwen3->NumParameters(), 2 * layer + h + 2 * v * h);
}

TEST(ModelConfigLayouts, TopLevelOriginalContextWinsAndYarnFactorMayBeDerived) {
  StatusOr<ModelConfig> c = Parse(R"("model_type": "llama", "original_max_position_embeddings": 32,
      "rope_parameters": {"rope_type": "yarn", "factor": null, "rope_theta": 10000.0,
      "original_max_position_embeddings": 128})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->rope_scaling.original_max_position_embeddings, 32);
  EXPECT_EQ(c->rope_scaling.factor, 8.0);  // max_position_embeddings 256 / 32
  StatusOr<ModelConfig> d = Parse(R"("model_type": "llama", "rope_parameters": {"rope_type":
      "yarn", "factor": 2.0, "rope_theta": 10000.0}, "eos_token_id": [1, 2], "bos_token_id": 0)");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->rope_scaling.original_max_position_embeddings, 256);  // max_position_embeddings
  EXPECT_EQ(d->eos_token_ids, (std::vector<int64_t>{1, 2}));
  EXPECT_NE(ToHfGenerationConfigJson(*d).find("\"eos_token_id\": [\n    1,\n    2\n  ]"),
            std::string::npos)
      << ToHfGenerationConfigJson(*d);
}

TEST(ModelConfigLayouts, QkNormIsInTheMemoryModel) {
  StatusOr<ModelConfig> qwen3 = Parse(R"("model_type": "qwen3", "rope_theta": 1e6)");
  StatusOr<ModelConfig> llama = Parse(R"("model_type": "llama", "rope_theta": 1e6)");
  ASSERT_TRUE(qwen3.ok() && llama.ok());
  ActivationOptions o;
  EXPECT_GT(ActivationBytesPerToken(*qwen3, o), ActivationBytesPerToken(*llama, o));
  EXPECT_GT(qwen3->NumParameters(), llama->NumParameters());
}

// spec.training.recompute in the memory model: selective drops each layer's
// MLP intermediates (h + 4f per token), full keeps only the layer inputs.
TEST(ModelConfigLayouts, RecomputeModesOrderTheMemoryLine) {
  StatusOr<ModelConfig> c = Parse(R"("model_type": "qwen3", "rope_theta": 1e6)");
  ASSERT_TRUE(c.ok());
  ActivationOptions none, selective, full;
  selective.recompute_mlp = true;
  full.recompute = true;
  const double e = 2, h = 64, f = 96, layers = 2;
  EXPECT_DOUBLE_EQ(ActivationBytesPerToken(*c, none) - ActivationBytesPerToken(*c, selective),
                   layers * e * (h + 4 * f));
  EXPECT_LT(ActivationBytesPerToken(*c, full), ActivationBytesPerToken(*c, none));
  CostModelOptions o;
  o.recompute_mlp = true;
  EXPECT_DOUBLE_EQ(CostModel(*c, o).ActivationBytesPerToken(),
                   ActivationBytesPerToken(*c, selective));
  CostModelOptions plain;
  EXPECT_GT(CostModel(*c, o).BucketSizeTokens(80e9, 0.1),
            CostModel(*c, plain).BucketSizeTokens(80e9, 0.1));
}

}  // namespace
}  // namespace skrull::scheduler
