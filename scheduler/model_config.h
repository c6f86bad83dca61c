// Decoder architecture hyper-parameters (Llama / Qwen2 family), shared by the
// cost model (FLOPs, memory) and the trainer (which builds the model from it).
// Pure data; no I/O here: callers read config.json and pass its text.
#ifndef SKRULL_SCHEDULER_MODEL_CONFIG_H_
#define SKRULL_SCHEDULER_MODEL_CONFIG_H_

#include <cstdint>
#include <string>

#include "common/status.h"

namespace skrull::scheduler {

struct RopeScaling {
  // "" (none), "linear", "dynamic", "llama3", "yarn" (Hugging Face rope_type names).
  std::string type;
  double factor = 1.0;
  double low_freq_factor = 1.0;                  // llama3
  double high_freq_factor = 4.0;                 // llama3
  int64_t original_max_position_embeddings = 0;  // llama3 / yarn
};

struct ModelConfig {
  std::string model_type = "qwen2";  // "llama" | "qwen2"
  int64_t hidden_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;  // GQA; == num_attention_heads for MHA
  int64_t head_dim = 0;             // hidden_size / num_attention_heads unless given
  int64_t intermediate_size = 0;    // SwiGLU inner size
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  bool attention_bias = false;  // QKV bias (true for Qwen2)
  bool tie_word_embeddings = false;
  std::string torch_dtype = "float32";

  int64_t KvDim() const { return num_key_value_heads * head_dim; }
  int64_t QDim() const { return num_attention_heads * head_dim; }
  // Total trainable parameters (embeddings, LM head unless tied, norms, biases).
  int64_t NumParameters() const;
};

// Parses a Hugging Face config.json text. `origin` names the file in errors.
// Missing required fields or inconsistent values (hidden_size not divisible by
// heads, kv heads not dividing heads, ...) are InvalidArgument naming the field.
StatusOr<ModelConfig> ParseHfConfigJson(const std::string& json_text, const std::string& origin);

// Checks the values of a config built in code (ParseHfConfigJson already
// calls it): every field that must be positive, GQA head divisibility,
// rms_norm_eps and rope_theta > 0, a supported model_type. All problems are
// reported at once as InvalidArgument "<origin>: field: what; field: what"
// (common/json_fields.h).
Status ValidateModelConfig(const ModelConfig& config, const std::string& origin);

// Serializes to Hugging Face config.json text (loadable by transformers).
std::string ToHfConfigJson(const ModelConfig& config);

// Built-in presets: "qwen2.5-0.5b", "qwen2.5-7b" (published configs), and
// "tiny" (a 2-layer model for tests and the quickstart).
StatusOr<ModelConfig> ModelPreset(const std::string& name);

}  // namespace skrull::scheduler

#endif  // SKRULL_SCHEDULER_MODEL_CONFIG_H_
