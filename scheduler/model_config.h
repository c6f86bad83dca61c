// Decoder architecture hyper-parameters (the dense Llama family: Llama 2/3.x,
// Mistral, Qwen2/2.5, Qwen3), shared by the cost model (FLOPs, memory) and the
// trainer (which builds the model from it). Pure data; no I/O here: callers
// read config.json and pass its text.
//
// config.json as transformers 4.x and 5.x write it, read to the same numbers:
//   4.x: top-level "rope_theta" and "rope_scaling": {"rope_type" | "type", ...}
//   5.x: "rope_parameters": {"rope_type", "rope_theta", ...}, no top-level
//        rope_theta
// transformers 5 takes rope_scaling over rope_parameters and a theta inside
// the dictionary over a top-level one, and so does ParseHfConfigJson. A
// config with no RoPE base at all (neither) is refused rather than defaulted.
//
// Families (model_type) and what each implies, as transformers builds them:
//   llama    attention_bias: Q, K, V and O biases; mlp_bias refused
//   mistral  no biases; a set sliding_window refused (full attention only)
//   qwen2    Q, K, V biases always (attention_bias is ignored, as in HF)
//   qwen3    q_norm / k_norm (RMSNorm over head_dim, before RoPE);
//            attention_bias: Q, K, V and O biases; explicit head_dim
// Qwen2/Qwen3 sliding-window layers (use_sliding_window, layer_types) are
// refused by name.
#ifndef SKRULL_SCHEDULER_MODEL_CONFIG_H_
#define SKRULL_SCHEDULER_MODEL_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace skrull::scheduler {

struct RopeScaling {
  // "" (none), "linear", "dynamic", "llama3", "yarn" (Hugging Face rope_type names).
  std::string type;
  double factor = 1.0;
  double low_freq_factor = 1.0;   // llama3
  double high_freq_factor = 4.0;  // llama3
  // llama3 / yarn: the pre-training context; the parser fills it (a
  // top-level original_max_position_embeddings, else the dictionary's, else
  // max_position_embeddings, as transformers 5 standardizes it).
  int64_t original_max_position_embeddings = 0;
  // yarn (transformers' _compute_yarn_parameters): attention_factor 0 =
  // derived from factor (0.1 ln(factor) + 1, or the mscale / mscale_all_dim
  // ratio when both are set); beta_fast / beta_slow bound the ramp (0 =
  // their defaults 32 and 1, as HF's `or`); truncate rounds the range.
  double attention_factor = 0;
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  double mscale = 0;
  double mscale_all_dim = 0;
  bool truncate = true;
};

struct ModelConfig {
  std::string model_type = "qwen2";  // "llama" | "mistral" | "qwen2" | "qwen3"
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
  // Q, K, V biases (always for qwen2); o_proj's too for llama and qwen3.
  bool attention_bias = false;
  bool tie_word_embeddings = false;
  std::string torch_dtype = "float32";
  // Special token ids of config.json (generation_config.json is written from
  // them); -1 / empty = absent.
  int64_t bos_token_id = -1;
  std::vector<int64_t> eos_token_ids;
  int64_t pad_token_id = -1;

  // qwen3: RMSNorm over head_dim on Q and K (q_norm / k_norm) before RoPE.
  bool QkNorm() const { return model_type == "qwen3"; }
  // Bias on o_proj: llama and qwen3 with attention_bias.
  bool OutputBias() const {
    return attention_bias && (model_type == "llama" || model_type == "qwen3");
  }

  int64_t KvDim() const { return num_key_value_heads * head_dim; }
  int64_t QDim() const { return num_attention_heads * head_dim; }
  // Total trainable parameters (embeddings, LM head unless tied, norms, biases).
  int64_t NumParameters() const;
};

// Parses a Hugging Face config.json text (either layout above). `origin`
// names the file in errors. Missing required fields, inconsistent values
// (hidden_size not divisible by heads, kv heads not dividing heads, ...) and
// anything this trainer does not compute as transformers does (a model_type,
// rope_type, rope key, sliding window, partial rotary factor, activation or
// MLP bias it lacks) are InvalidArgument naming the field, the value and what
// is supported, all problems at once.
StatusOr<ModelConfig> ParseHfConfigJson(const std::string& json_text, const std::string& origin);

// Checks the values of a config built in code (ParseHfConfigJson already
// calls it): every field that must be positive, GQA head divisibility,
// rms_norm_eps and rope_theta > 0, a supported model_type. All problems are
// reported at once as InvalidArgument "<origin>: field: what; field: what"
// (common/json_fields.h).
Status ValidateModelConfig(const ModelConfig& config, const std::string& origin);

// The families ParseHfConfigJson accepts, for messages: "llama, mistral, qwen2, qwen3".
const char* SupportedModelTypes();

// Serializes to Hugging Face config.json text that transformers 4.x and 5.x
// both read to this config: the RoPE settings in both layouts (top-level
// rope_theta / rope_scaling and rope_parameters). ParseHfConfigJson of the
// text gives the config back.
std::string ToHfConfigJson(const ModelConfig& config);

// generation_config.json text for a saved model folder: bos / eos / pad ids
// when the config has them.
std::string ToHfGenerationConfigJson(const ModelConfig& config);

// Built-in presets: "qwen2.5-0.5b", "qwen2.5-7b" (published configs), and
// "tiny" (a 2-layer model for tests and the quickstart).
StatusOr<ModelConfig> ModelPreset(const std::string& name);

}  // namespace skrull::scheduler

#endif  // SKRULL_SCHEDULER_MODEL_CONFIG_H_
