#include "scheduler/model_config.h"

#include <cstdio>
#include <optional>
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

const char* const kRopeTypes = "default, linear, dynamic, llama3, yarn";

// Every key a RoPE dictionary may hold that this trainer reads (a key meant
// for another rope_type is ignored, as transformers ignores it).
const char* const kRopeKeys[] = {"rope_type",
                                 "type",
                                 "rope_theta",
                                 "factor",
                                 "low_freq_factor",
                                 "high_freq_factor",
                                 "original_max_position_embeddings",
                                 "attention_factor",
                                 "beta_fast",
                                 "beta_slow",
                                 "mscale",
                                 "mscale_all_dim",
                                 "truncate",
                                 "partial_rotary_factor"};

// One RoPE dictionary (rope_scaling or rope_parameters) as read.
struct RopeDict {
  RopeScaling scaling;
  double theta = 0;  // 0: not in the dictionary
  bool factor_null = false;
  bool has_original = false;
};

void ReadPartialRotary(const JsonFields& f, FieldErrors* errors) {
  const double partial = errors->Take(f.OptionalDouble("partial_rotary_factor", 1.0), 1.0);
  if (partial != 1.0) {
    errors->Add(f.Path("partial_rotary_factor"),
                "partial rotary embeddings are not supported (got " + std::to_string(partial) +
                    "); only 1.0 (RoPE over the whole head_dim)");
  }
}

RopeDict ReadRopeDict(const JsonFields& parent, const char* key, const json& d,
                      FieldErrors* errors) {
  const JsonFields f = parent.Nested(key, d);
  RopeDict out;
  RopeScaling& r = out.scaling;
  for (const auto& [k, v] : d.items()) {
    bool known = false;
    for (const char* name : kRopeKeys) known = known || k == name;
    if (v.is_object()) {
      errors->Add(f.Path(k),
                  "per-layer RoPE parameters are not supported (one dictionary for "
                  "every layer only)");
    } else if (!known) {
      std::string keys;
      for (const char* name : kRopeKeys) keys += (keys.empty() ? "" : ", ") + std::string(name);
      errors->Add(f.Path(k), "not a RoPE setting this trainer reads (it reads " + keys + ")");
    }
  }
  r.type = errors->Take(f.OptionalString(d.contains("rope_type") ? "rope_type" : "type"));
  if (r.type == "default") r.type.clear();
  if (r.type != "" && r.type != "linear" && r.type != "dynamic" && r.type != "llama3" &&
      r.type != "yarn") {
    errors->Add(f.Path(d.contains("rope_type") ? "rope_type" : "type"),
                "rope type \"" + r.type + "\" is not supported; supported: " + kRopeTypes);
  }
  out.theta = errors->Take(f.OptionalDouble("rope_theta", 0.0), 0.0);
  ReadPartialRotary(f, errors);
  const bool scaled = !r.type.empty();
  out.factor_null = r.type == "yarn" && f.IsNull("factor");
  if (scaled && r.type != "yarn") {
    r.factor = errors->Take(f.RequiredDouble("factor"), r.factor);
  } else {
    r.factor = errors->Take(f.OptionalDouble("factor", r.factor), r.factor);
  }
  if (scaled && !out.factor_null && !(r.factor > 0)) {
    errors->Add(f.Path("factor"), "must be > 0 (got " + std::to_string(r.factor) + ")");
  }
  if (r.type == "llama3") {
    r.low_freq_factor = errors->Take(f.RequiredDouble("low_freq_factor"), r.low_freq_factor);
    r.high_freq_factor = errors->Take(f.RequiredDouble("high_freq_factor"), r.high_freq_factor);
    if (!(r.low_freq_factor > 0) || !(r.high_freq_factor > r.low_freq_factor)) {
      errors->Add(f.Path("high_freq_factor"),
                  "llama3 needs 0 < low_freq_factor < high_freq_factor (got " +
                      std::to_string(r.low_freq_factor) + " and " +
                      std::to_string(r.high_freq_factor) + ")");
    }
  }
  out.has_original = d.contains("original_max_position_embeddings") &&
                     !d["original_max_position_embeddings"].is_null();
  r.original_max_position_embeddings =
      errors->Take(f.OptionalInt("original_max_position_embeddings", 0, 1), int64_t{0});
  r.attention_factor = errors->Take(f.OptionalDouble("attention_factor", 0.0, 0.0), 0.0);
  // HF: `get("beta_fast") or 32`: absent, null and 0 all mean the default.
  r.beta_fast = errors->Take(f.OptionalDouble("beta_fast", 0.0), 0.0);
  if (r.beta_fast == 0) r.beta_fast = 32.0;
  r.beta_slow = errors->Take(f.OptionalDouble("beta_slow", 0.0), 0.0);
  if (r.beta_slow == 0) r.beta_slow = 1.0;
  r.mscale = errors->Take(f.OptionalDouble("mscale", 0.0), 0.0);
  r.mscale_all_dim = errors->Take(f.OptionalDouble("mscale_all_dim", 0.0), 0.0);
  r.truncate = errors->Take(f.OptionalBool("truncate", true), true);
  return out;
}

bool SameScaling(const RopeScaling& a, const RopeScaling& b) {
  return a.type == b.type && a.factor == b.factor && a.low_freq_factor == b.low_freq_factor &&
         a.high_freq_factor == b.high_freq_factor &&
         a.original_max_position_embeddings == b.original_max_position_embeddings &&
         a.attention_factor == b.attention_factor && a.beta_fast == b.beta_fast &&
         a.beta_slow == b.beta_slow && a.mscale == b.mscale &&
         a.mscale_all_dim == b.mscale_all_dim && a.truncate == b.truncate;
}

// RoPE base and scaling from either layout (model_config.h), as transformers
// 5's convert_rope_params_to_dict / standardize_rope_params resolve them.
void ReadRope(const json& j, const JsonFields& f, ModelConfig* c, FieldErrors* errors) {
  const json* params = errors->Take(f.OptionalObject("rope_parameters"));
  const json* scaling = errors->Take(f.OptionalObject("rope_scaling"));
  std::optional<RopeDict> from_params, from_scaling;
  if (params != nullptr) from_params = ReadRopeDict(f, "rope_parameters", *params, errors);
  if (scaling != nullptr) from_scaling = ReadRopeDict(f, "rope_scaling", *scaling, errors);
  if (from_params && from_scaling && !SameScaling(from_params->scaling, from_scaling->scaling)) {
    errors->Add("rope_scaling",
                "disagrees with rope_parameters (transformers 4 reads "
                "rope_scaling, 5 reads rope_parameters); keep one of them");
  }
  // transformers 5: `rope_scaling or rope_parameters`.
  const std::optional<RopeDict>& dict = from_scaling ? from_scaling : from_params;
  ReadPartialRotary(f, errors);
  // The base: the chosen dictionary's, else the top-level one (4.x), else
  // the other dictionary's; a config with none is refused.
  const bool top_set = j.contains("rope_theta") && !j["rope_theta"].is_null();
  const double top_theta = errors->Take(f.OptionalDouble("rope_theta", 0.0), 0.0);
  const std::optional<RopeDict>& other = from_scaling ? from_params : from_scaling;
  if (dict && dict->theta != 0) {
    c->rope_theta = dict->theta;
  } else if (top_set) {
    c->rope_theta = top_theta;
  } else if (other && other->theta != 0) {
    c->rope_theta = other->theta;
  } else {
    errors->Add("rope_theta",
                "the RoPE base is not in this config: neither rope_parameters.rope_theta "
                "(transformers 5) nor a top-level rope_theta (transformers 4) is set; add the "
                "model's value (e.g. \"rope_theta\": 1000000.0 for Qwen2.5 and Qwen3)");
  }
  if (!dict) return;
  c->rope_scaling = dict->scaling;
  RopeScaling& r = c->rope_scaling;
  if (r.type == "llama3" || r.type == "yarn") {
    // A top-level original_max_position_embeddings (Phi-3 style) wins.
    const int64_t top =
        errors->Take(f.OptionalInt("original_max_position_embeddings", 0, 1), int64_t{0});
    if (top > 0) {
      r.original_max_position_embeddings = top;
    } else if (!dict->has_original) {
      r.original_max_position_embeddings = c->max_position_embeddings;
    }
  } else {
    r.original_max_position_embeddings = 0;
  }
  if (r.type == "yarn" && dict->factor_null && r.original_max_position_embeddings > 0) {
    r.factor = static_cast<double>(c->max_position_embeddings) /
               static_cast<double>(r.original_max_position_embeddings);
  }
}

// Sliding-window attention: refused wherever a family can switch it on.
void RefuseSlidingWindow(const JsonFields& f, const ModelConfig& c, FieldErrors* errors) {
  if (c.model_type == "mistral") {
    const int64_t window = errors->Take(f.OptionalInt("sliding_window", 0), int64_t{0});
    if (window != 0) {
      errors->Add("sliding_window",
                  "Mistral's sliding-window attention is not supported (got " +
                      std::to_string(window) +
                      "); only full causal attention: set \"sliding_window\": null (as "
                      "Mistral-7B-v0.3 and later ship)");
    }
  }
  if (c.model_type == "qwen2" || c.model_type == "qwen3") {
    const bool on = errors->Take(f.OptionalBool("use_sliding_window", false), false);
    const int64_t from =
        errors->Take(f.OptionalInt("max_window_layers", c.num_hidden_layers), c.num_hidden_layers);
    if (on && from < c.num_hidden_layers) {
      errors->Add("use_sliding_window",
                  "sliding-window attention is not supported (got true with max_window_layers " +
                      std::to_string(from) + " < num_hidden_layers " +
                      std::to_string(c.num_hidden_layers) +
                      "); only full causal attention: set it false");
    }
  }
  const json* types = errors->Take(f.OptionalArray("layer_types"));
  if (types == nullptr) return;
  for (size_t i = 0; i < types->size(); ++i) {
    const json& t = (*types)[i];
    if (!t.is_string() || t.get<std::string>() != "full_attention") {
      errors->Add("layer_types[" + std::to_string(i) + "]",
                  "only \"full_attention\" layers are supported (got " + JsonExcerpt(t) + ")");
      return;
    }
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
    if (c.OutputBias()) attention += h;  // llama and qwen3 bias o_proj too
  }
  if (c.QkNorm()) attention += 2 * static_cast<T>(c.head_dim);
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
  if (c.model_type == "mistral" && c.attention_bias) {
    errors->Add("attention_bias", "mistral has no attention biases (transformers builds none)");
  }
  if (c.model_type != "llama" && c.model_type != "mistral" && c.model_type != "qwen2" &&
      c.model_type != "qwen3") {
    errors->Add("model_type", std::string("model type \"") + c.model_type +
                                  "\" is not supported; supported: " + SupportedModelTypes());
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
  ReadRope(j, f, &c, &errors);
  RefuseSlidingWindow(f, c, &errors);
  // As transformers builds them: Qwen2 always has Q/K/V biases and Mistral
  // none, whatever attention_bias says; Llama and Qwen3 follow it.
  c.attention_bias = errors.Take(f.OptionalBool("attention_bias", false));
  if (c.model_type == "qwen2") c.attention_bias = true;
  if (c.model_type == "mistral") c.attention_bias = false;
  c.tie_word_embeddings = errors.Take(f.OptionalBool("tie_word_embeddings", c.tie_word_embeddings));
  // transformers 5 writes "dtype", 4.x "torch_dtype".
  c.torch_dtype = errors.Take(f.OptionalString("torch_dtype", c.torch_dtype), c.torch_dtype);
  c.torch_dtype = errors.Take(f.OptionalString("dtype", c.torch_dtype), c.torch_dtype);
  c.bos_token_id = errors.Take(f.OptionalInt("bos_token_id", -1, 0), int64_t{-1});
  c.pad_token_id = errors.Take(f.OptionalInt("pad_token_id", -1, 0), int64_t{-1});
  if (j.contains("eos_token_id") && j["eos_token_id"].is_array()) {
    for (const json& id : j["eos_token_id"]) {
      if (id.is_number_integer()) c.eos_token_ids.push_back(id.get<int64_t>());
    }
  } else {
    const int64_t eos = errors.Take(f.OptionalInt("eos_token_id", -1, 0), int64_t{-1});
    if (eos >= 0) c.eos_token_ids.push_back(eos);
  }
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

const char* SupportedModelTypes() { return "llama, mistral, qwen2, qwen3"; }

namespace {

const char* Architecture(const std::string& model_type) {
  if (model_type == "qwen2") return "Qwen2ForCausalLM";
  if (model_type == "qwen3") return "Qwen3ForCausalLM";
  if (model_type == "mistral") return "MistralForCausalLM";
  return "LlamaForCausalLM";
}

// The RoPE dictionary in transformers' names, without rope_theta.
json RopeScalingJson(const ModelConfig& c) {
  const RopeScaling& r = c.rope_scaling;
  json rs;
  rs["rope_type"] = r.type.empty() ? "default" : r.type;
  if (r.type.empty()) return rs;
  rs["factor"] = r.factor;
  if (r.type == "llama3") {
    rs["low_freq_factor"] = r.low_freq_factor;
    rs["high_freq_factor"] = r.high_freq_factor;
  }
  if (r.original_max_position_embeddings > 0) {
    rs["original_max_position_embeddings"] = r.original_max_position_embeddings;
  }
  if (r.type == "yarn") {
    if (r.attention_factor > 0) rs["attention_factor"] = r.attention_factor;
    rs["beta_fast"] = r.beta_fast;
    rs["beta_slow"] = r.beta_slow;
    if (r.mscale > 0) rs["mscale"] = r.mscale;
    if (r.mscale_all_dim > 0) rs["mscale_all_dim"] = r.mscale_all_dim;
    rs["truncate"] = r.truncate;
  }
  return rs;
}

void AddTokenIds(const ModelConfig& c, json* j) {
  if (c.bos_token_id >= 0) (*j)["bos_token_id"] = c.bos_token_id;
  if (c.eos_token_ids.size() == 1) (*j)["eos_token_id"] = c.eos_token_ids[0];
  if (c.eos_token_ids.size() > 1) (*j)["eos_token_id"] = c.eos_token_ids;
  if (c.pad_token_id >= 0) (*j)["pad_token_id"] = c.pad_token_id;
}

}  // namespace

std::string ToHfConfigJson(const ModelConfig& c) {
  json j;
  j["architectures"] = json::array({Architecture(c.model_type)});
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
  // Both layouts (model_config.h): 4.x reads rope_theta / rope_scaling, 5.x
  // rope_parameters (and takes rope_scaling over it: the same numbers).
  j["rope_theta"] = c.rope_theta;
  j["rope_scaling"] = c.rope_scaling.type.empty() ? json(nullptr) : RopeScalingJson(c);
  json params = RopeScalingJson(c);
  params["rope_theta"] = c.rope_theta;
  j["rope_parameters"] = params;
  j["attention_bias"] = c.attention_bias;
  if (c.model_type == "llama") j["mlp_bias"] = false;
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["torch_dtype"] = c.torch_dtype;
  j["dtype"] = c.torch_dtype;
  if (c.model_type == "qwen2" || c.model_type == "qwen3") {
    j["use_sliding_window"] = false;
    j["sliding_window"] = nullptr;
    j["max_window_layers"] = c.num_hidden_layers;
  }
  if (c.model_type == "mistral") j["sliding_window"] = nullptr;
  AddTokenIds(c, &j);
  j["attention_dropout"] = 0.0;
  j["use_cache"] = true;
  return j.dump(2) + "\n";
}

std::string ToHfGenerationConfigJson(const ModelConfig& c) {
  json j = json::object();
  AddTokenIds(c, &j);
  return j.dump(2) + "\n";
}

StatusOr<ModelConfig> ModelPreset(const std::string& name) {
  ModelConfig c;
  c.model_type = "qwen2";
  c.attention_bias = true;
  c.rms_norm_eps = 1e-6;
  c.rope_theta = 1000000.0;
  c.torch_dtype = "bfloat16";
  c.bos_token_id = 151643;  // <|endoftext|>, both published configs
  c.eos_token_ids = {151643};
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
    c.bos_token_id = -1;
    c.eos_token_ids.clear();
  } else {
    return InvalidArgumentError("unknown model preset \"" + name +
                                "\"; valid presets: qwen2.5-0.5b, qwen2.5-7b, tiny");
  }
  c.head_dim = c.hidden_size / c.num_attention_heads;
  return c;
}

}  // namespace skrull::scheduler
