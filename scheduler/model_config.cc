#include "scheduler/model_config.h"

#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/json_fields.h"

namespace skrull::scheduler {
namespace {

using nlohmann::json;

// Largest parameter count a config may describe (about 1.1e15), so every
// size formed from it stays inside int64.
constexpr double kMaxModelParameters = 1125899906842624.0;  // 2^50

void ReadRopeScaling(const JsonFields& fields, RopeScaling* out, FieldErrors* errors) {
  const json* rs = errors->Take(fields.OptionalObject("rope_scaling"));
  if (rs == nullptr) return;
  const JsonFields f = fields.Nested("rope_scaling", *rs);
  // transformers accepts both "rope_type" (new) and "type" (old).
  out->type = errors->Take(f.OptionalString(rs->contains("rope_type") ? "rope_type" : "type"));
  if (out->type == "default") out->type.clear();
  static const char* kKnown[] = {"", "linear", "dynamic", "llama3", "yarn"};
  bool known = false;
  for (const char* k : kKnown) known = known || out->type == k;
  if (!known) {
    errors->Add("rope_scaling.rope_type",
                "must be one of linear, dynamic, llama3, yarn (got \"" + out->type + "\")");
  }
  out->factor = errors->Take(f.OptionalDouble("factor", out->factor), out->factor);
  out->low_freq_factor =
      errors->Take(f.OptionalDouble("low_freq_factor", out->low_freq_factor), out->low_freq_factor);
  out->high_freq_factor = errors->Take(f.OptionalDouble("high_freq_factor", out->high_freq_factor),
                                       out->high_freq_factor);
  out->original_max_position_embeddings = errors->Take(
      f.OptionalInt("original_max_position_embeddings", out->original_max_position_embeddings),
      out->original_max_position_embeddings);
  if (!out->type.empty() && out->factor <= 0) {
    errors->Add("rope_scaling.factor", "must be > 0 (got " + std::to_string(out->factor) + ")");
  }
}

// The parameter count in T: double to bound it before int64 is used.
template <typename T>
T ParameterCount(const ModelConfig& c) {
  const T h = static_cast<T>(c.hidden_size);
  const T q = static_cast<T>(c.num_attention_heads) * static_cast<T>(c.head_dim);
  const T kv = static_cast<T>(c.num_key_value_heads) * static_cast<T>(c.head_dim);
  T attention = h * q + 2 * h * kv + q * h;
  if (c.attention_bias) {
    attention += q + 2 * kv;
    // Llama's attention_bias also covers o_proj; Qwen2 biases only Q, K, V.
    if (c.model_type == "llama") attention += h;
  }
  const T mlp = 3 * h * static_cast<T>(c.intermediate_size);
  const T norms = 2 * h;
  const T embeddings = static_cast<T>(c.vocab_size) * h;
  const T lm_head = c.tie_word_embeddings ? 0 : embeddings;
  return static_cast<T>(c.num_hidden_layers) * (attention + mlp + norms) + h + embeddings + lm_head;
}

void Validate(const ModelConfig& c, FieldErrors* errors) {
  auto positive = [&](const char* field, int64_t v) {
    if (v <= 0) errors->Add(field, "must be > 0 (got " + std::to_string(v) + ")");
  };
  positive("hidden_size", c.hidden_size);
  positive("num_hidden_layers", c.num_hidden_layers);
  positive("num_attention_heads", c.num_attention_heads);
  positive("num_key_value_heads", c.num_key_value_heads);
  positive("head_dim", c.head_dim);
  positive("intermediate_size", c.intermediate_size);
  positive("vocab_size", c.vocab_size);
  positive("max_position_embeddings", c.max_position_embeddings);
  if (c.num_attention_heads > 0 && c.num_key_value_heads > 0 &&
      c.num_attention_heads % c.num_key_value_heads != 0) {
    errors->Add("num_key_value_heads", "must divide num_attention_heads (" +
                                           std::to_string(c.num_attention_heads) + " heads, got " +
                                           std::to_string(c.num_key_value_heads) + ")");
  }
  // Every size the cost model forms from the config must fit int64.
  const bool dims_positive = c.hidden_size > 0 && c.num_hidden_layers > 0 &&
                             c.num_attention_heads > 0 && c.num_key_value_heads > 0 &&
                             c.head_dim > 0 && c.intermediate_size > 0 && c.vocab_size > 0;
  if (dims_positive && ParameterCount<double>(c) > kMaxModelParameters) {
    char count[32];
    std::snprintf(count, sizeof(count), "%.3g", ParameterCount<double>(c));
    errors->Add("hidden_size", std::string("with intermediate_size, num_hidden_layers, heads and "
                                           "vocab_size it describes ") +
                                   count + " parameters, over the maximum 2^50; check the sizes");
  }
  // Negated so NaN fails too.
  if (!(c.rms_norm_eps > 0)) errors->Add("rms_norm_eps", "must be > 0");
  if (!(c.rope_theta > 0)) errors->Add("rope_theta", "must be > 0");
  if (c.model_type != "llama" && c.model_type != "qwen2") {
    errors->Add("model_type", "must be \"llama\" or \"qwen2\" (got \"" + c.model_type + "\")");
  }
}

}  // namespace

Status ValidateModelConfig(const ModelConfig& config, const std::string& origin) {
  FieldErrors errors(origin);
  Validate(config, &errors);
  return errors.empty() ? OkStatus() : errors.ToStatus();
}

int64_t ModelConfig::NumParameters() const { return ParameterCount<int64_t>(*this); }

StatusOr<ModelConfig> ParseHfConfigJson(const std::string& json_text, const std::string& origin) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::parse_error& e) {
    return InvalidArgumentError(origin + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) return InvalidArgumentError(origin + ": must be a JSON object");

  FieldErrors errors(origin);
  const JsonFields f(j, origin);
  // Required integers, and optional ones that keep the default when absent.
  auto required = [&](const char* key, int64_t* out) { *out = errors.Take(f.RequiredInt(key)); };
  auto optional = [&](const char* key, int64_t* out) {
    *out = errors.Take(f.OptionalInt(key, *out), *out);
  };
  ModelConfig c;
  c.model_type = errors.Take(f.RequiredString("model_type"));
  required("hidden_size", &c.hidden_size);
  required("num_hidden_layers", &c.num_hidden_layers);
  required("num_attention_heads", &c.num_attention_heads);
  c.num_key_value_heads = c.num_attention_heads;  // MHA unless stated
  optional("num_key_value_heads", &c.num_key_value_heads);
  optional("head_dim", &c.head_dim);
  if (c.head_dim == 0 && c.num_attention_heads > 0) {
    if (c.hidden_size % c.num_attention_heads != 0) {
      errors.Add("hidden_size",
                 "must be divisible by num_attention_heads when head_dim is absent (" +
                     std::to_string(c.hidden_size) + " % " + std::to_string(c.num_attention_heads) +
                     " != 0)");
    } else {
      c.head_dim = c.hidden_size / c.num_attention_heads;
    }
  }
  required("intermediate_size", &c.intermediate_size);
  required("vocab_size", &c.vocab_size);
  required("max_position_embeddings", &c.max_position_embeddings);
  c.rms_norm_eps = errors.Take(f.OptionalDouble("rms_norm_eps", c.rms_norm_eps), c.rms_norm_eps);
  c.rope_theta = errors.Take(f.OptionalDouble("rope_theta", c.rope_theta), c.rope_theta);
  ReadRopeScaling(f, &c.rope_scaling, &errors);
  // Qwen2 always has Q/K/V biases; its config has no attention_bias field.
  c.attention_bias = errors.Take(f.OptionalBool("attention_bias", c.model_type == "qwen2"));
  c.tie_word_embeddings = errors.Take(f.OptionalBool("tie_word_embeddings", c.tie_word_embeddings));
  c.torch_dtype = errors.Take(f.OptionalString("torch_dtype", c.torch_dtype), c.torch_dtype);
  const std::string act = errors.Take(f.OptionalString("hidden_act", "silu"), std::string("silu"));
  if (act != "silu")
    errors.Add("hidden_act", "only \"silu\" (SwiGLU) is supported (got \"" + act + "\")");
  if (errors.Take(f.OptionalBool("mlp_bias", false))) {
    errors.Add("mlp_bias", "MLP biases are not supported (got true)");
  }
  Validate(c, &errors);
  if (!errors.empty()) return errors.ToStatus();
  return c;
}

std::string ToHfConfigJson(const ModelConfig& c) {
  const bool qwen2 = c.model_type == "qwen2";
  json j;
  j["architectures"] = json::array({qwen2 ? "Qwen2ForCausalLM" : "LlamaForCausalLM"});
  j["model_type"] = c.model_type;
  j["hidden_act"] = "silu";
  j["hidden_size"] = c.hidden_size;
  j["num_hidden_layers"] = c.num_hidden_layers;
  j["num_attention_heads"] = c.num_attention_heads;
  j["num_key_value_heads"] = c.num_key_value_heads;
  j["head_dim"] = c.head_dim;
  j["intermediate_size"] = c.intermediate_size;
  j["vocab_size"] = c.vocab_size;
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["rms_norm_eps"] = c.rms_norm_eps;
  j["rope_theta"] = c.rope_theta;
  if (c.rope_scaling.type.empty()) {
    j["rope_scaling"] = nullptr;
  } else {
    json rs;
    rs["rope_type"] = c.rope_scaling.type;
    rs["factor"] = c.rope_scaling.factor;
    if (c.rope_scaling.type == "llama3") {
      rs["low_freq_factor"] = c.rope_scaling.low_freq_factor;
      rs["high_freq_factor"] = c.rope_scaling.high_freq_factor;
    }
    if (c.rope_scaling.original_max_position_embeddings > 0) {
      rs["original_max_position_embeddings"] = c.rope_scaling.original_max_position_embeddings;
    }
    j["rope_scaling"] = rs;
  }
  j["attention_bias"] = c.attention_bias;
  j["mlp_bias"] = false;
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["torch_dtype"] = c.torch_dtype;
  if (qwen2) {
    j["use_sliding_window"] = false;
    j["sliding_window"] = c.max_position_embeddings;
    j["max_window_layers"] = c.num_hidden_layers;
  }
  j["attention_dropout"] = 0.0;
  j["use_cache"] = true;
  return j.dump(2) + "\n";
}

StatusOr<ModelConfig> ModelPreset(const std::string& name) {
  ModelConfig c;
  c.model_type = "qwen2";
  c.attention_bias = true;
  c.rms_norm_eps = 1e-6;
  c.rope_theta = 1000000.0;
  c.torch_dtype = "bfloat16";
  // Values from the published config.json of Qwen/Qwen2.5-0.5B and Qwen/Qwen2.5-7B.
  if (name == "qwen2.5-0.5b") {
    c.hidden_size = 896;
    c.num_hidden_layers = 24;
    c.num_attention_heads = 14;
    c.num_key_value_heads = 2;
    c.intermediate_size = 4864;
    c.vocab_size = 151936;
    c.max_position_embeddings = 32768;
    c.tie_word_embeddings = true;
  } else if (name == "qwen2.5-7b") {
    c.hidden_size = 3584;
    c.num_hidden_layers = 28;
    c.num_attention_heads = 28;
    c.num_key_value_heads = 4;
    c.intermediate_size = 18944;
    c.vocab_size = 152064;
    c.max_position_embeddings = 131072;
    c.tie_word_embeddings = false;
  } else if (name == "tiny") {
    // A 2-layer Qwen2-shaped model over a byte vocabulary, for tests and
    // the quickstart.
    c.hidden_size = 64;
    c.num_hidden_layers = 2;
    c.num_attention_heads = 4;
    c.num_key_value_heads = 2;
    c.intermediate_size = 176;
    c.vocab_size = 256;
    c.max_position_embeddings = 32768;
    c.tie_word_embeddings = true;
    c.torch_dtype = "float32";
  } else {
    return InvalidArgumentError("unknown model preset \"" + name +
                                "\"; valid presets: qwen2.5-0.5b, qwen2.5-7b, tiny");
  }
  c.head_dim = c.hidden_size / c.num_attention_heads;
  return c;
}

}  // namespace skrull::scheduler
