#include "scheduler/model_config.h"

#include <gtest/gtest.h>

namespace skrull::scheduler {
namespace {

// Qwen/Qwen2.5-0.5B config.json as published on the Hugging Face Hub.
constexpr char kQwen05Config[] = R"({
  "architectures": ["Qwen2ForCausalLM"],
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "eos_token_id": 151643,
  "hidden_act": "silu",
  "hidden_size": 896,
  "initializer_range": 0.02,
  "intermediate_size": 4864,
  "max_position_embeddings": 32768,
  "max_window_layers": 24,
  "model_type": "qwen2",
  "num_attention_heads": 14,
  "num_hidden_layers": 24,
  "num_key_value_heads": 2,
  "rms_norm_eps": 1e-06,
  "rope_theta": 1000000.0,
  "sliding_window": 32768,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.40.1",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 151936
})";

TEST(ModelConfig, ParsesPublishedQwen05ConfigLikeThePreset) {
  auto parsed = ParseHfConfigJson(kQwen05Config, "Qwen2.5-0.5B/config.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  auto preset = ModelPreset("qwen2.5-0.5b");
  ASSERT_TRUE(preset.ok());
  EXPECT_EQ(ToHfConfigJson(*parsed), ToHfConfigJson(*preset));
  EXPECT_EQ(parsed->head_dim, 64);
  EXPECT_EQ(parsed->KvDim(), 128);
  EXPECT_TRUE(parsed->attention_bias);  // Qwen2 always biases Q, K, V
  EXPECT_TRUE(parsed->tie_word_embeddings);
}

TEST(ModelConfig, PresetsCountPublishedParameters) {
  // Hugging Face reports 494,032,768 and 7,615,616,512 parameters.
  EXPECT_EQ(ModelPreset("qwen2.5-0.5b")->NumParameters(), 494032768);
  EXPECT_EQ(ModelPreset("qwen2.5-7b")->NumParameters(), 7615616512);
}

TEST(ModelConfig, PresetsHavePublishedShapes) {
  const ModelConfig q7 = *ModelPreset("qwen2.5-7b");
  EXPECT_EQ(q7.hidden_size, 3584);
  EXPECT_EQ(q7.num_hidden_layers, 28);
  EXPECT_EQ(q7.num_attention_heads, 28);
  EXPECT_EQ(q7.num_key_value_heads, 4);
  EXPECT_EQ(q7.intermediate_size, 18944);
  EXPECT_EQ(q7.vocab_size, 152064);
  EXPECT_FALSE(q7.tie_word_embeddings);
  EXPECT_DOUBLE_EQ(q7.rope_theta, 1e6);
  const ModelConfig tiny = *ModelPreset("tiny");
  EXPECT_EQ(tiny.hidden_size, 64);
  EXPECT_EQ(tiny.num_hidden_layers, 2);
  EXPECT_EQ(tiny.num_attention_heads, 4);
  EXPECT_EQ(tiny.num_key_value_heads, 2);
  EXPECT_EQ(tiny.intermediate_size, 176);
  EXPECT_EQ(tiny.vocab_size, 256);
  EXPECT_EQ(tiny.max_position_embeddings, 32768);
  EXPECT_TRUE(tiny.attention_bias);
  EXPECT_TRUE(tiny.tie_word_embeddings);
}

TEST(ModelConfig, ToHfConfigJsonRoundTripsEveryPreset) {
  for (const char* name : {"qwen2.5-0.5b", "qwen2.5-7b", "tiny"}) {
    const ModelConfig c = *ModelPreset(name);
    auto back = ParseHfConfigJson(ToHfConfigJson(c), name);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(ToHfConfigJson(*back), ToHfConfigJson(c)) << name;
    EXPECT_EQ(back->NumParameters(), c.NumParameters()) << name;
  }
}

TEST(ModelConfig, LlamaRopeScalingRoundTrips) {
  ModelConfig c = *ModelPreset("tiny");
  c.model_type = "llama";
  c.attention_bias = false;
  c.rope_scaling = {"llama3", 8.0, 1.0, 4.0, 8192};
  auto back = ParseHfConfigJson(ToHfConfigJson(c), "llama");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->rope_scaling.type, "llama3");
  EXPECT_DOUBLE_EQ(back->rope_scaling.factor, 8.0);
  EXPECT_EQ(back->rope_scaling.original_max_position_embeddings, 8192);
  EXPECT_FALSE(back->attention_bias);
}

TEST(ModelConfig, MissingKvHeadsMeansMultiHeadAttention) {
  auto c = ParseHfConfigJson(R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 1,
      "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 10,
      "max_position_embeddings": 128, "rope_theta": 10000.0})",
                             "mha.json");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->num_key_value_heads, 4);
  EXPECT_EQ(c->head_dim, 16);
}

TEST(ModelConfig, ReportsEveryMissingFieldAtOnce) {
  auto c = ParseHfConfigJson(R"({"model_type": "qwen2", "hidden_size": 896})", "cfg.json");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  const std::string& m = c.status().message();
  EXPECT_NE(m.find("cfg.json"), std::string::npos) << m;
  for (const char* field : {"num_hidden_layers", "num_attention_heads", "intermediate_size",
                            "vocab_size", "max_position_embeddings"}) {
    EXPECT_NE(m.find(std::string(field) + ": required field missing"), std::string::npos)
        << field << " in " << m;
  }
}

TEST(ModelConfig, RejectsKvHeadsThatDoNotDivideHeads) {
  auto c = ParseHfConfigJson(R"({"model_type": "qwen2", "hidden_size": 896, "num_hidden_layers": 2,
      "num_attention_heads": 14, "num_key_value_heads": 4, "intermediate_size": 4864,
      "vocab_size": 100, "max_position_embeddings": 1024})",
                             "cfg.json");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("num_key_value_heads: must divide num_attention_heads (14 "
                                      "heads, got 4)"),
            std::string::npos)
      << c.status();
}

// Guards NumParameters against sizes that overflow it (negative or wrapped
// memory figures, a 0 ms gradient all-reduce).
TEST(ModelConfig, RejectsSizesWhoseParameterCountOverflows) {
  auto c = ParseHfConfigJson(R"({"model_type": "qwen2", "hidden_size": 1099511627776000,
      "num_hidden_layers": 24, "num_attention_heads": 8, "num_key_value_heads": 2,
      "intermediate_size": 4864, "vocab_size": 151936, "max_position_embeddings": 1024,
      "rope_theta": 10000.0})",
                             "cfg.json");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("cfg.json: hidden_size: "), std::string::npos) << c.status();
  EXPECT_NE(c.status().message().find("parameters, over the maximum 2^50"), std::string::npos)
      << c.status();
}

TEST(ModelConfig, RejectsHiddenSizeNotDivisibleByHeadsWithoutHeadDim) {
  auto c = ParseHfConfigJson(R"({"model_type": "llama", "hidden_size": 100, "num_hidden_layers": 2,
      "num_attention_heads": 3, "intermediate_size": 64, "vocab_size": 10,
      "max_position_embeddings": 64})",
                             "cfg.json");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("hidden_size: must be divisible by num_attention_heads"),
            std::string::npos)
      << c.status();
}

TEST(ModelConfig, RejectsWrongTypesUnknownModelAndActivation) {
  auto c = ParseHfConfigJson(R"({"model_type": "gpt2", "hidden_size": "896", "num_hidden_layers": 2,
      "num_attention_heads": 14, "intermediate_size": 4864, "vocab_size": 100,
      "max_position_embeddings": 1024, "hidden_act": "gelu", "tie_word_embeddings": "yes"})",
                             "cfg.json");
  ASSERT_FALSE(c.ok());
  const std::string& m = c.status().message();
  EXPECT_NE(m.find("hidden_size: must be an integer (got \"896\")"), std::string::npos) << m;
  EXPECT_NE(m.find("model_type: model type \"gpt2\" is not supported; supported: llama, mistral, "
                   "qwen2, qwen3"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("hidden_act: only \"silu\""), std::string::npos) << m;
  EXPECT_NE(m.find("tie_word_embeddings: must be true or false"), std::string::npos) << m;
}

TEST(ModelConfig, RejectsInvalidJson) {
  auto c = ParseHfConfigJson("{not json", "broken.json");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("broken.json: not valid JSON"), std::string::npos);
}

TEST(ModelConfig, UnknownPresetListsValidOnes) {
  auto c = ModelPreset("qwen3");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("qwen2.5-0.5b, qwen2.5-7b, tiny"), std::string::npos);
}

}  // namespace
}  // namespace skrull::scheduler
