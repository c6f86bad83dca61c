#include "scheduler/memory_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

namespace skrull::scheduler {
namespace {

double ElementBytes(Precision precision) { return precision == Precision::kBf16 ? 2.0 : 4.0; }

// (in, out) features of a projection, by Hugging Face name; (0, 0) if unknown.
std::pair<int64_t, int64_t> ProjectionShape(const ModelConfig& m, const std::string& name) {
  if (name == "q_proj") return {m.hidden_size, m.QDim()};
  if (name == "k_proj" || name == "v_proj") return {m.hidden_size, m.KvDim()};
  if (name == "o_proj") return {m.QDim(), m.hidden_size};
  if (name == "gate_proj" || name == "up_proj") return {m.hidden_size, m.intermediate_size};
  if (name == "down_proj") return {m.intermediate_size, m.hidden_size};
  return {0, 0};
}

// Targeted projections the model has (unknown names add nothing).
int64_t KnownTargets(const ModelConfig& model, const LoraShape& lora) {
  int64_t n = 0;
  for (const std::string& t : lora.target_modules) n += ProjectionShape(model, t).first > 0;
  return n;
}

}  // namespace

const char* PrecisionName(Precision precision) {
  return precision == Precision::kBf16 ? "bf16" : "fp32";
}

StatusOr<Precision> ParsePrecision(const std::string& name) {
  if (name == "bf16") return Precision::kBf16;
  if (name == "fp32") return Precision::kFp32;
  return InvalidArgumentError("precision must be 'bf16' or 'fp32' (got '" + name + "')");
}

const std::vector<std::string>& LoraProjectionNames() {
  static const std::vector<std::string> kNames = {"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                                  "gate_proj", "up_proj", "down_proj"};
  return kNames;
}

StateBytesPerParameter BytesPerParameter(Precision precision) {
  if (precision == Precision::kBf16) return {2, 2, 12};  // ZeRO's K = 12: master, m, v
  return {4, 4, 8};                                      // weights are the master: m, v
}

int64_t LoraParameters(const ModelConfig& model, const LoraShape& lora) {
  if (!lora.enabled()) return 0;
  int64_t per_layer = 0;
  for (const std::string& t : lora.target_modules) {
    const auto [in, out] = ProjectionShape(model, t);
    per_layer += lora.rank * (in + out);
  }
  return per_layer * model.num_hidden_layers;
}

StaticMemory StaticMemoryPerRank(const ModelConfig& model, const StaticMemoryOptions& options) {
  const StateBytesPerParameter b = BytesPerParameter(options.precision);
  const double shards = std::max(1, options.shard_ranks);
  const int stage = options.zero_stage;
  const int64_t adapters = LoraParameters(model, options.lora);
  StaticMemory m;
  m.trainable_parameters = options.lora.enabled() ? adapters : model.NumParameters();
  const double all = static_cast<double>(model.NumParameters() + adapters);
  const double trainable = static_cast<double>(m.trainable_parameters);
  // Frozen base weights are sharded only at stage 3, like trainable ones.
  m.weights_bytes = all * b.weights / (stage >= 3 ? shards : 1.0);
  m.gradient_bytes = trainable * b.gradients / (stage >= 2 ? shards : 1.0);
  m.optimizer_bytes = trainable * b.optimizer / (stage >= 1 ? shards : 1.0);
  return m;
}

double ActivationBytesPerToken(const ModelConfig& model, const ActivationOptions& options) {
  const double e = ElementBytes(options.precision);
  const double h = static_cast<double>(model.hidden_size);
  const double q = static_cast<double>(model.QDim());
  const double kv = static_cast<double>(model.KvDim());
  const double f = static_cast<double>(model.intermediate_size);
  const double layers = static_cast<double>(model.num_hidden_layers);
  // Tensors one layer saves for backward, FlashAttention (no S^2): norm input
  // and output (2h) twice, Q/K/V after RoPE (q + 2kv), attention output (q),
  // SwiGLU gate, up, silu(gate) and product (4f); the fp32 log-sum-exp per
  // head; LoRA's x A^T (rank) per targeted projection.
  const double lora_bytes =
      options.lora.enabled()
          ? e * static_cast<double>(options.lora.rank * KnownTargets(model, options.lora))
          : 0.0;
  // Qwen3's q_norm / k_norm keep their normalized Q and K too (q + kv).
  const double qk_norm = model.QkNorm() ? q + kv : 0.0;
  const double mlp_kept = options.recompute_mlp && !options.recompute ? -(h + 4 * f) : 0.0;
  const double layer_bytes = e * (4 * h + 2 * q + 2 * kv + 4 * f + qk_norm + mlp_kept) +
                             4.0 * static_cast<double>(model.num_attention_heads) + lora_bytes;
  const double per_vocab = options.logits_bytes_per_token_per_vocab >= 0
                               ? options.logits_bytes_per_token_per_vocab
                               : (options.precision == Precision::kBf16 ? 10.0 : 8.0);
  const double logits_bytes = per_vocab * static_cast<double>(model.vocab_size);
  const double final_norm_bytes = e * 2 * h;
  if (options.recompute) {
    // Only each layer's input is kept; one layer is rebuilt at a time.
    return layers * e * h + layer_bytes + final_norm_bytes + logits_bytes;
  }
  return layers * layer_bytes + final_norm_bytes + logits_bytes;
}

double MemoryLine::TokensWithin(double budget_bytes) const {
  SKRULL_CHECK(bytes_per_token > 0) << "bytes_per_token=" << bytes_per_token;
  return (budget_bytes - static_bytes) / bytes_per_token;
}

LinearFit FitLine(const std::vector<double>& xs, const std::vector<double>& ys) {
  SKRULL_CHECK(!xs.empty() && xs.size() == ys.size())
      << "FitLine: " << xs.size() << " xs, " << ys.size() << " ys";
  const double n = static_cast<double>(xs.size());
  double sum_x = 0, sum_y = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    sum_x += xs[i];
    sum_y += ys[i];
  }
  const double mean_x = sum_x / n, mean_y = sum_y / n;
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double dx = xs[i] - mean_x;
    sxx += dx * dx;
    sxy += dx * (ys[i] - mean_y);
  }
  LinearFit f;
  if (sxx <= 0) {
    f.slope = sum_x != 0 ? sum_y / sum_x : 0;
    return f;
  }
  f.slope = sxy / sxx;
  f.intercept = mean_y - f.slope * mean_x;
  return f;
}

int64_t BucketSizeTokens(const MemoryLine& line, double device_memory_bytes, double memory_fraction,
                         double reserve_bytes) {
  SKRULL_CHECK(memory_fraction > 0 && memory_fraction <= 1)
      << "memory_fraction=" << memory_fraction;
  const double tokens = line.TokensWithin(device_memory_bytes * memory_fraction - reserve_bytes);
  return tokens <= 0 ? 0 : static_cast<int64_t>(std::floor(tokens));
}

std::string FormatBytes(double bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  const double sign = bytes < 0 ? -1 : 1;
  double v = std::fabs(bytes);
  size_t unit = 0;
  while (v >= 1024 && unit + 1 < sizeof(kUnits) / sizeof(kUnits[0])) {
    v /= 1024;
    ++unit;
  }
  char buf[48];
  if (unit == 0) {
    std::snprintf(buf, sizeof(buf), "%.0f B", sign * v);
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f %s", sign * v, kUnits[unit]);
  }
  return buf;
}

}  // namespace skrull::scheduler
