#include "scheduler/cost_model.h"

#include <algorithm>
#include <cmath>

#include "common/status.h"

namespace skrull::scheduler {
namespace {

// Forward + backward = 3 forwards (backward computes input and weight grads).
constexpr double kTrainingPasses = 3.0;
constexpr double kBf16Bytes = 2.0;

}  // namespace

CostModel::CostModel(ModelConfig model, CostModelOptions options)
    : model_(std::move(model)), options_(options) {
  const double h = static_cast<double>(model_.hidden_size);
  const double q = static_cast<double>(model_.QDim());
  const double kv = static_cast<double>(model_.KvDim());
  const double f = static_cast<double>(model_.intermediate_size);
  const double layers = static_cast<double>(model_.num_hidden_layers);
  const double vocab = static_cast<double>(model_.vocab_size);
  // Multiply-accumulates per token: Q, K, V, O projections and SwiGLU's three GEMMs.
  const double layer_macs = h * q + 2 * h * kv + q * h + 3 * h * f;
  linear_flops_per_token_ = kTrainingPasses * 2.0 * (layers * layer_macs + h * vocab);
  // QK^T and PV are 2*q*S^2 FLOPs each; the causal mask halves both.
  attention_flops_per_token2_ = kTrainingPasses * layers * 2.0 * q;
}

double CostModel::LinearFlopsPerToken() const { return linear_flops_per_token_; }

double CostModel::AttentionFlops(int64_t length) const {
  const double s = static_cast<double>(length);
  return attention_flops_per_token2_ * s * s;
}

double CostModel::FlopsPerSequence(int64_t length) const {
  return linear_flops_per_token_ * static_cast<double>(length) + AttentionFlops(length);
}

double CostModel::HardwareFlopsPerSequence(int64_t length) const {
  return FlopsPerSequence(length) * HardwareFlopsFactor();
}

double CostModel::FlopsSharded(int64_t length, int cp) const {
  SKRULL_CHECK(cp >= 1) << "cp=" << cp;
  return FlopsPerSequence(length) / cp;
}

double CostModel::KvBytesPerLayer(int64_t tokens) const {
  return 2.0 * static_cast<double>(tokens) * static_cast<double>(model_.KvDim()) * kBf16Bytes;
}

double CostModel::GradientBytes() const {
  return static_cast<double>(model_.NumParameters()) * options_.bytes_per_grad;
}

double CostModel::StaticMemoryBytes() const {
  if (options_.static_bytes > 0) return options_.static_bytes;
  const double params = static_cast<double>(model_.NumParameters());
  const double shards = std::max(1, options_.dp_for_sharding);
  const int stage = options_.zero_stage;
  const double weights = params * options_.bytes_per_param / (stage >= 3 ? shards : 1.0);
  const double grads = params * options_.bytes_per_grad / (stage >= 2 ? shards : 1.0);
  const double optimizer =
      params * options_.optimizer_bytes_per_param / (stage >= 1 ? shards : 1.0);
  return weights + grads + optimizer;
}

double CostModel::ActivationBytesPerToken() const {
  if (options_.activation_bytes_per_token > 0) return options_.activation_bytes_per_token;
  const double h = static_cast<double>(model_.hidden_size);
  const double q = static_cast<double>(model_.QDim());
  const double kv = static_cast<double>(model_.KvDim());
  const double f = static_cast<double>(model_.intermediate_size);
  const double layers = static_cast<double>(model_.num_hidden_layers);
  // Tensors one layer saves for backward (bf16), FlashAttention (no S^2):
  // norm input and output (2h) twice, Q/K/V after RoPE (q + 2kv), attention
  // output (q), SwiGLU gate, up, silu(gate) and product (4f); plus the fp32
  // softmax log-sum-exp per head.
  const double layer_bytes = kBf16Bytes * (4 * h + 2 * q + 2 * kv + 4 * f) +
                             4.0 * static_cast<double>(model_.num_attention_heads);
  const double logits_bytes =
      options_.logits_bytes_per_token_per_vocab * static_cast<double>(model_.vocab_size);
  const double final_norm_bytes = kBf16Bytes * 2 * h;
  if (options_.recompute) {
    // Only each layer's input is kept; one layer is rebuilt at a time.
    return layers * kBf16Bytes * h + layer_bytes + final_norm_bytes + logits_bytes;
  }
  return layers * layer_bytes + final_norm_bytes + logits_bytes;
}

int64_t CostModel::BucketSizeTokens(double device_memory_bytes, double safety_margin) const {
  SKRULL_CHECK(safety_margin >= 0 && safety_margin < 1) << "safety_margin=" << safety_margin;
  const double free_bytes =
      device_memory_bytes * (1.0 - safety_margin) - StaticMemoryBytes() - options_.reserve_bytes;
  if (free_bytes <= 0) return 0;
  return static_cast<int64_t>(std::floor(free_bytes / ActivationBytesPerToken()));
}

}  // namespace skrull::scheduler
